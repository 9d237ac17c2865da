"""A dataset folder (data/datasets) or an export folder (export/) -> the viewer's HTML text.

The one entry point the `view` command and the validate and export stages share, so each writes the same page for
the same folder: same rows, same labels, same `max_rows`, same bytes.
"""

from pathlib import Path

from rewardmill.transforms.view.folders import EXPORT, folder_kind, read_datasets, read_export
from rewardmill.transforms.view.model import DEFAULT_MAX_ROWS, page_model
from rewardmill.transforms.view.render import render_html

VIEWER = "viewer.html"  # the page's name in an export folder; the dataset card links to it


def view_page(folder: str | Path, *, labels: str | Path | None = None, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The page of `folder`. `labels`: the label folders to show verdicts from (a dataset folder only; None = not
    looked up). `max_rows`: rows per config embedded, the first in id order; the page counts the rest."""
    if max_rows < 0:
        raise ValueError(f"max_rows must be >= 0, got {max_rows}")
    if folder_kind(folder) == EXPORT:
        source = read_export(folder, max_rows)
    else:
        source = read_datasets(folder, labels, max_rows)
    return render_html(page_model(source, max_rows))
