"""Data Docs: the site GX builds from validate_target's suites and results, byte-identical from build to build
(fresh contexts, other time zones).

The split check is the suite validated here: the smallest one, and the site is built the same way for every suite.
"""

import os
import re
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from rewardmill.schemas import RL_V1
from rewardmill.transforms.validation.data_docs import build_site, normalize_html, offline_index, stable_result
from rewardmill.transforms.validation.runner import validate_target
from tests.transforms.validation.conftest import rl_row, write_project, write_stage

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP = "?d=20260101T120000.123456Z"


@contextmanager
def time_zone(name: str):
    """Run with the process's local time zone set to `name` (GX serializes run times in local time)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        os.environ.pop("TZ") if old is None else os.environ.update(TZ=old)
        time.tzset()


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict[str, Path]:
    """Two datasets folders: "clean" passes the split check, "leaky" fails it (prompt 0 in train and test)."""
    clean = write_project(tmp_path_factory.mktemp("clean"), configs=False) / "datasets"
    leaky = write_project(tmp_path_factory.mktemp("leaky"), configs=False) / "datasets"
    write_stage(leaky / "rl", [rl_row(0, 2, 2, 1, split="test")], RL_V1, "assemble")
    return {"leaky": leaky, "clean": clean}


def validated(projects: dict[str, Path], zone: str) -> list[dict]:
    with time_zone(zone):
        found = [validate_target(str(d), "split_check_v1", dataset=name)[1] for name, d in projects.items()]
    assert all(found)
    return found


@pytest.fixture(scope="module")
def sites(projects, tmp_path_factory) -> tuple[Path, Path]:
    """The site built twice, from results of two validations in different time zones, in fresh contexts."""
    first, second = tmp_path_factory.mktemp("site1"), tmp_path_factory.mktemp("site2")
    build_site(validated(projects, "UTC"), first)
    build_site(list(reversed(validated(projects, "Asia/Tokyo"))), second)  # the input order does not matter either
    return first, second


def files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_site_is_byte_identical_across_builds(sites):
    first, second = sites
    assert files(first) == files(second)


def test_site_has_index_suites_and_validation_pages(sites):
    site = files(sites[0])
    pages = sorted(name for name in site if name.endswith(".html"))
    assert pages == [
        "expectations/clean.html",
        "expectations/leaky.html",
        "index.html",
        "validations/clean/validate/19700101T000000.000000Z/rewardmill-clean.html",
        "validations/leaky/validate/19700101T000000.000000Z/rewardmill-leaky.html",
    ]
    assert "static/styles/data_docs_default_styles.css" in site  # styles ship with the site


def test_pages_carry_no_timestamps_or_random_ids(sites):
    for name, data in files(sites[0]).items():
        if name.endswith(".html"):
            text = data.decode()
            assert not UUID.search(text), name
            assert "?d=" not in text and "dataContextId" not in text and "ge_load_time" not in text, name


def test_validation_page_shows_the_result_and_failing_ids(sites):
    site = sites[0]
    page = (site / "validations/leaky/validate/19700101T000000.000000Z/rewardmill-leaky.html").read_text()
    assert "_single_split" in page and "1970-01-01T00:00:00Z" in page and "1970-01-01T09:00" not in page
    assert "1970-01-01 00:00:00 UTC" in (site / "index.html").read_text()  # the index's run time, in UTC


def test_index_lists_every_page_without_javascript(sites):
    site = sites[0]
    nav = re.search(r'<nav id="rewardmill-offline-index">.*?</nav>', (site / "index.html").read_text()).group(0)
    links = re.findall(r'href="([^"]+)"', nav)
    assert links == [
        "validations/clean/validate/19700101T000000.000000Z/rewardmill-clean.html",
        "expectations/clean.html",
        "validations/leaky/validate/19700101T000000.000000Z/rewardmill-leaky.html",
        "expectations/leaky.html",
    ]
    assert all((site / link).is_file() for link in links)
    assert ">clean</a>: passed" in nav and ">leaky</a>: FAILED" in nav


def test_empty_site_builds(tmp_path):
    index = build_site([], tmp_path / "site")  # e.g. every target failed to load
    assert index.is_file() and "<ul></ul>" in index.read_text()


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        # the build time GX appends to its logo URL
        (f'<img src="https://x/logo-long.png{STAMP}">', '<img src="https://x/logo-long.png">'),
        # with a data context id too
        (f'<img src="logo.png{STAMP}&amp;dataContextId=0f0e-12">', '<img src="logo.png">'),
        # collapse ids numbered in order of first appearance; link and target keep matching
        (
            '<a href="#s-collapse-body-9b2e8f1c-0836-4e9f-87da-1ce8e9a62517"></a>'
            "<div id=s-collapse-body-9b2e8f1c-0836-4e9f-87da-1ce8e9a62517></div>"
            "<div id=t-collapse-body-00000000-0000-4000-8000-000000000000></div>",
            '<a href="#s-collapse-body-0"></a><div id=s-collapse-body-0></div><div id=t-collapse-body-1></div>',
        ),
        # a uuid in the data itself is left alone
        ("<td>9b2e8f1c-0836-4e9f-87da-1ce8e9a62517</td>", "<td>9b2e8f1c-0836-4e9f-87da-1ce8e9a62517</td>"),
    ],
)
def test_normalize_html(html, expected):
    assert normalize_html(html) == expected


def test_stable_result_drops_run_specific_fields_and_moves_times_to_utc():
    result = {
        "id": "r",
        "success": True,
        "meta": {
            "validation_id": "v",
            "checkpoint_id": None,
            "run_id": {"run_name": "validate", "run_time": "1970-01-01T09:00:00+09:00"},
            "validation_time": "1969-12-31T19:00:00-05:00",
            "batch_markers": {"ge_load_time": "20260101T000000.000000Z", "pandas_data_fingerprint": "abc"},
        },
        "results": [{"success": True, "expectation_config": {"id": "e", "type": "t", "kwargs": {}}}],
    }
    assert stable_result(result) == {
        "success": True,
        "meta": {
            "run_id": {"run_name": "validate", "run_time": "1970-01-01T00:00:00+00:00"},
            "validation_time": "1970-01-01T00:00:00+00:00",
            "batch_markers": {"pandas_data_fingerprint": "abc"},
        },
        "results": [{"success": True, "expectation_config": {"type": "t", "kwargs": {}}}],
    }


def test_offline_index_needs_a_body():
    with pytest.raises(ValueError, match="no <body>"):
        offline_index("<html></html>", [])
