"""`rewardmill view`: the page of a dataset folder or an export where the stages put it, same bytes on every run,
and a missing or wrong folder reported in one line (exit 2, no traceback)."""

import pytest

from rewardmill.pipelines.cli import main as cli
from rewardmill.transforms.view.page import view_page
from tests.transforms.validation.conftest import write_process_rewards, write_project
from tests.transforms.view.test_folders import export_folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_project(tmp_path)
    write_process_rewards(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_dataset_folder_page_in_reports_and_reruns_identically(project, capsys):
    assert cli(["view"]) == 0  # data/datasets, labels from data/labels
    page = (project / "reports/view.html").read_bytes()
    assert "wrote reports/view.html" in capsys.readouterr().out
    assert page.decode() == view_page("data/datasets", labels="data/labels")  # what validate writes there
    assert b"math_answer@1" in page and b'"labels":"read"' in page
    assert cli(["view", "data/datasets"]) == 0 and (project / "reports/view.html").read_bytes() == page
    assert [p.name for p in (project / "reports").iterdir()] == ["view.html"]  # no temp file left behind

    assert cli(["view", "data/datasets", "--out", "elsewhere/v.html", "--max-rows", "1", "--labels", "none"]) == 0
    small = (project / "elsewhere/v.html").read_text()
    assert '"left_out":2' in small and "none: no label folder" in small


def test_export_page_beside_its_card(tmp_path, monkeypatch):
    export_folder(tmp_path / "export")
    monkeypatch.chdir(tmp_path)
    assert cli(["view", "export"]) == 0
    assert (tmp_path / "export/viewer.html").read_text() == view_page("export")
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing"], "missing: no such folder; `dvc repro assemble` builds data/datasets, `dvc repro export`"),
        (["data/labels"], "data/labels: neither a dataset folder (its folders hold label_v1"),
        (["data/rollouts"], "data/rollouts: neither a dataset folder"),
    ],
)
def test_wrong_folder_is_one_line_without_traceback(project, capsys, args, message):
    assert cli(["view", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rewardmill: error: {message}") and "Traceback" not in err
    assert not (project / "reports").exists()


def test_bad_max_rows_is_a_usage_error(project, capsys):
    with pytest.raises(SystemExit) as exc:
        cli(["view", "--max-rows", "-1"])
    assert exc.value.code == 2 and "--max-rows: must be >= 0, got -1" in capsys.readouterr().err
