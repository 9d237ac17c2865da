"""`rewardmill view [FOLDER]`: write one static, offline HTML page to look at a dataset folder or the export.

rewardmill view                                  # data/datasets -> reports/view.html (labels from data/labels)
rewardmill view export                           # the export -> export/viewer.html (what the export stage writes)
rewardmill view data/datasets --out /tmp/v.html --max-rows 500

The page shows pairs side by side with their scores and the verdicts and rationales of the labels behind each
rollout, PRM steps coloured by label, RL prompts with pass rate and difficulty, SFT rows, and every folder's rejects
by reason with examples; it filters by config, pair type, difficulty, split and free text. At most --max-rows rows
per config are embedded (the first in id order: ids are hashes, so a fixed sample); the page counts the rest.
Nothing on it is fetched from a network, and the same folder gives the same bytes.

The defaults reproduce the stages' own pages byte for byte: `validate` writes reports/view.html from data/datasets
and data/labels, `export` writes export/viewer.html (linked from the dataset card).
"""

import argparse
from pathlib import Path

from rewardmill.transforms.io import storage
from rewardmill.transforms.view.folders import EXPORT, default_labels, folder_kind
from rewardmill.transforms.view.model import DEFAULT_MAX_ROWS
from rewardmill.transforms.view.page import VIEWER, view_page

REPORT = Path("reports") / "view.html"  # a dataset folder's page, where the validate stage writes it


def max_rows(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def default_out(folder: str | Path, kind: str) -> Path:
    """export/ -> export/viewer.html (beside the card that links to it); a dataset folder -> reports/view.html."""
    return Path(folder) / VIEWER if kind == EXPORT else REPORT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="rewardmill view", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", nargs="?", default="data/datasets", help="data/datasets (default) or export")
    parser.add_argument("--out", default=None, help=f"the page (default {REPORT}, or <export>/{VIEWER})")
    parser.add_argument(
        "--max-rows", type=max_rows, default=DEFAULT_MAX_ROWS, help="rows per config embedded (default %(default)s)"
    )
    parser.add_argument("--labels", default=None, help="label folders of a dataset folder (default: ../labels)")
    args = parser.parse_args(argv)
    kind = folder_kind(args.folder)  # a missing or wrong folder fails here, naming what to run
    labels = None if kind == EXPORT else (args.labels or default_labels(args.folder))
    page = view_page(args.folder, labels=labels, max_rows=args.max_rows)
    out = Path(args.out) if args.out else default_out(args.folder, kind)
    storage.write_text(out, page)  # temp file then rename: a reader never sees half a page
    print(f"wrote {out} ({len(page.encode()):,} bytes); open it in a browser (it loads nothing from a network)")


if __name__ == "__main__":
    main()
