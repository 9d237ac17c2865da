"""Great Expectations Data Docs for one validate run: a static HTML site built from every suite and its result.

In: the {"suite", "result"} JSON that runner.validate_target returns per dataset. Out: `directory` with index.html,
expectations/<dataset>.html (the suite), validations/<dataset>/validate/19700101T000000.000000Z/<batch>.html (the
result) and static/ (styles, fonts, images), built by GX's own SiteBuilder from an in-memory context.

The site is a cached DVC output, so the same data must give the same bytes. GX puts the run identifier (fixed by
the runner, but serialized in the machine's time zone), the load time and the context's ids into results, and into
the HTML a build timestamp (a query string on the logo), random element ids (collapsible sections) and the index's
run times in the local time zone. Results are stripped of their load time and ids and their times moved to UTC
before the build, the index renders in UTC, and `normalize_html` replaces the timestamps and random ids with fixed
ones. GX's pages load their styles and scripts from CDNs; offline the
validation pages still show their tables unstyled, but GX's index fills its table with JavaScript, so the index
gets a plain list of links (`offline_index`) that needs no script.
"""

import datetime
import html
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

SITE = "rewardmill"
_LOGO_STAMP = re.compile(r"\?d=\d{8}T\d{6}\.\d{6}Z(&amp;|&)?(dataContextId=[0-9a-f-]*)?")
_ELEMENT_UUID = re.compile(r"(-collapse-body-)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
_RESULT_META_DROPPED = ("validation_id", "checkpoint_id")


def build_site(docs: list[dict[str, Any]], directory: str | Path) -> Path:
    """Write the Data Docs site for `docs` (one {"suite", "result"} per dataset) into `directory`; returns the index
    path. Pages are added in suite-name order, so the index lists them in that order."""
    import great_expectations as gx
    from great_expectations.core.expectation_validation_result import ExpectationSuiteValidationResultSchema
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    directory = Path(directory).resolve()
    context = gx.get_context(mode="ephemeral")
    site = {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(directory)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    context.add_data_docs_site(SITE, site)
    entries = []
    for doc in sorted(docs, key=lambda d: d["suite"]["name"]):
        suite = doc["suite"]
        context.suites.add(gx.ExpectationSuite(name=suite["name"], expectations=without_ids(suite["expectations"])))
        result = ExpectationSuiteValidationResultSchema().load(stable_result(doc["result"]))
        meta = result.meta
        batch = "-".join(meta["active_batch_definition"][k] for k in ("datasource_name", "data_asset_name"))
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=suite["name"]),
            run_id=meta["run_id"],
            batch_identifier=batch,
        )
        context.validation_results_store.set(key, result)
        entries.append((suite["name"], bool(result.success), "/".join(key.to_tuple()) + ".html"))
    with utc_index_times():
        context.build_data_docs(site_names=[SITE])
    for page in sorted(directory.rglob("*.html")):
        page.write_text(normalize_html(page.read_text(encoding="utf-8")), encoding="utf-8")
    index = directory / "index.html"
    index.write_text(offline_index(index.read_text(encoding="utf-8"), entries), encoding="utf-8")
    return index


def without_ids(expectations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Expectation configurations without their random ids (the new context assigns its own)."""
    return [{k: v for k, v in e.items() if k != "id"} for e in expectations]


def stable_result(result: dict[str, Any]) -> dict[str, Any]:
    """A validation result JSON without what changes from run to run: the batch load time, the validation and
    checkpoint ids, the result id, and the expectation ids; its run time and validation time in UTC (GX writes them
    in the machine's time zone, and its pages print them with a "Z" whatever the zone)."""
    meta = {k: v for k, v in (result.get("meta") or {}).items() if k not in _RESULT_META_DROPPED}
    if isinstance(meta.get("run_id"), dict) and meta["run_id"].get("run_time"):
        meta["run_id"] = {**meta["run_id"], "run_time": utc_iso(meta["run_id"]["run_time"])}
    if isinstance(meta.get("validation_time"), str):
        meta["validation_time"] = utc_iso(meta["validation_time"])
    markers = {k: v for k, v in (meta.get("batch_markers") or {}).items() if k != "ge_load_time"}
    results = [
        {**r, "expectation_config": {k: v for k, v in r["expectation_config"].items() if k != "id"}}
        for r in result.get("results", [])
    ]
    stable = {k: v for k, v in result.items() if k != "id"}
    return {**stable, "meta": {**meta, "batch_markers": markers}, "results": results}


def utc_iso(timestamp: str) -> str:
    """An ISO timestamp with a zone -> the same instant in UTC (1970-01-01T09:00:00+09:00 -> ...T00:00:00+00:00)."""
    return datetime.datetime.fromisoformat(timestamp).astimezone(datetime.UTC).isoformat()


@contextmanager
def utc_index_times():
    """GX's index renders run times in the machine's local time zone (tzlocal); render them in UTC instead."""
    from great_expectations.render.renderer import site_index_page_renderer

    with mock.patch.object(site_index_page_renderer.tzlocal, "get_localzone", return_value=datetime.UTC):
        yield


def normalize_html(text: str) -> str:
    """Drop the build timestamp (and context id) GX appends to the logo URL, and number the random ids of
    collapsible sections in order of first appearance (links and targets keep matching)."""
    text = _LOGO_STAMP.sub("", text)
    numbers: dict[str, str] = {}

    def number(match: re.Match) -> str:
        return match.group(1) + numbers.setdefault(match.group(2), str(len(numbers)))

    return _ELEMENT_UUID.sub(number, text)


def offline_index(text: str, entries: list[tuple[str, bool, str]]) -> str:
    """GX's index page with a script-free list of (dataset, success, validation page) links after <body>."""
    items = "".join(
        f'<li><a href="validations/{html.escape(path)}">{html.escape(name)}</a>: '
        f"{'passed' if success else 'FAILED'} "
        f'(<a href="expectations/{html.escape(name)}.html">expectations</a>)</li>'
        for name, success, path in entries
    )
    nav = f'<nav id="rewardmill-offline-index"><h2>Validation results</h2><ul>{items}</ul></nav>'
    head, body, rest = text.partition("<body>")
    if not body:
        raise ValueError("Data Docs index.html has no <body> tag")
    return f"{head}{body}\n{nav}{rest}"
