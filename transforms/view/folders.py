"""Read a dataset folder or an export folder into a `Source` for the viewer (local folders).

data/datasets (the assemble stage's output): every config folder (pairs/, prm/, rl/, sft/, any other with a
`_manifest.json` naming its schema) gives its row count and its first `max_rows` rows in id order; every folder's
`_rejects/` (`_rewards/`'s too) its counts by reason and a few examples; and the label folders beside it
(data/labels/<labeler>/, LABEL_V1) the labels of the rollouts behind the shown pairs and SFT rows.
export/ (the export stage's Hub layout): `data/<config>/<split>-*.parquet`, each config's schema read from its shards'
metadata, and the card's `pretty_name` as the title. Rejects and labels are not exported: the page says so.

Ids are hashes, so the first rows in id order are a fixed pseudo-random sample: the same folder always gives the
same rows, whatever its shards.
"""

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import yaml

from rewardmill.schemas import LABEL_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.export.hub_layout import DATA_DIR
from rewardmill.transforms.stage.outputs import MANIFEST, REJECTS_DIR, read_manifest
from rewardmill.transforms.validation.folders import REWARDS, subfolders
from rewardmill.transforms.view.model import KINDS, ConfigRows, RejectSummary, Source, kind_of
from rewardmill.transforms.view.rejects import summarize_rejects

DATASETS, EXPORT = "datasets", "export"
README = "README.md"  # the export's dataset card
# The columns that identify a row of each kind (unique together): rows are embedded in this order.
ID_COLUMNS = {"pair": ("pair_id",), "prm": ("labeler", "rollout_id"), "rl": ("prompt_id",), "sft": ("rollout_id",)}
ROLLOUT_COLUMNS = {"pair": ("chosen_rollout_id", "rejected_rollout_id"), "sft": ("rollout_id",)}  # their labels
LABEL_COLUMNS = tuple(name for name in LABEL_V1.names if name != "prompt_id")  # what the page shows of a label
WHAT_TO_RUN = "`dvc repro assemble` builds data/datasets, `dvc repro export` builds export/"


def folder_kind(folder: str | Path) -> str:
    """DATASETS or EXPORT; a missing folder, or one that is neither, fails naming the path and what to run."""
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such folder; {WHAT_TO_RUN}")
    if not root.is_dir():
        raise NotADirectoryError(f"{root}: not a folder; point at data/datasets or export/ ({WHAT_TO_RUN})")
    if (root / README).is_file() and (root / DATA_DIR).is_dir():
        return EXPORT
    schemas = sorted({manifest_schema(sub) for sub in subfolders(root) if (sub / MANIFEST).is_file()})
    if any(kind_of(s) != "other" for s in schemas):
        return DATASETS
    held = f"its folders hold {', '.join(schemas)}, not {'/'.join(KINDS)} datasets" if schemas else None
    raise FileNotFoundError(
        f"{root}: neither a dataset folder ({held or f'no <config>/{MANIFEST}'}) nor an export (no {README} and "
        f"{DATA_DIR}/); {WHAT_TO_RUN}"
    )


def manifest_schema(folder: Path) -> str:
    """The schema id a stage output folder's manifest records ("unversioned" when it records none)."""
    return read_manifest(folder).get("schema") or "unversioned"


def default_labels(datasets: str | Path) -> Path:
    """The label folders beside a dataset folder: data/datasets -> data/labels."""
    return Path(datasets).parent / "labels"


def shards(folder: Path) -> tuple[list[Path], int]:
    """The folder's Parquet files that hold rows (sorted), and their rows in all (from the footers alone)."""
    counted = [(p, pq.read_metadata(p).num_rows) for p in sorted(folder.glob("*.parquet"))]
    return [p for p, n in counted if n], sum(n for _, n in counted)


def first_rows(frame: pl.LazyFrame, id_columns: tuple[str, ...], max_rows: int) -> list[dict]:
    """The first `max_rows` rows in id order (in file order when the frame lacks the id columns). The ids are chosen
    from the id columns alone, so a large config's texts are read only for the rows kept."""
    columns = list(id_columns)
    if not columns or not set(columns) <= set(frame.collect_schema().names()):
        return frame.head(max_rows).collect().to_dicts()
    keys = frame.select(columns).sort(columns, nulls_last=True).head(max_rows)
    kept = frame.join(keys, on=columns, how="semi", nulls_equal=True)
    return kept.sort(columns, nulls_last=True).head(max_rows).collect().to_dicts()


def read_config(name: str, schema: str, folder: Path, max_rows: int) -> ConfigRows:
    paths, total = shards(folder)
    rows = first_rows(pl.scan_parquet(paths), ID_COLUMNS.get(kind_of(schema), ()), max_rows) if paths else []
    return ConfigRows(name, schema, total, rows)


def read_rejects(name: str, folder: Path) -> RejectSummary:
    paths, _ = shards(folder)
    if not paths:
        return RejectSummary(name, 0, [])
    return summarize_rejects(name, pl.scan_parquet(paths))


def read_labels(labels_dir: Path, rollout_ids: set[str], sources: set[str]) -> tuple[dict[str, list[dict]], list[str]]:
    """rollout_id -> its label rows from every label folder under `labels_dir`, for the given rollouts; and a note
    for every labeler named in `sources` (labeler@version) whose folder is missing, or a folder that is not
    LABEL_V1."""
    notes = [
        f"{labels_dir / name}: missing; the verdicts and rationales of {name} are not shown"
        for name in sorted({s.rsplit("@", 1)[0] for s in sources})
        if not (labels_dir / name).is_dir()
    ]
    frames = []
    for folder in subfolders(labels_dir):
        paths, _ = shards(folder)
        if not paths:
            continue
        frame = pl.scan_parquet(paths)
        missing = [c for c in LABEL_COLUMNS if c not in frame.collect_schema().names()]
        if missing:
            notes.append(f"{folder}: not label rows (no column(s) {missing}); its labels are not shown")
            continue
        frames.append(frame.select(LABEL_COLUMNS).filter(pl.col("rollout_id").is_in(sorted(rollout_ids))))
    labels: dict[str, list[dict]] = {}
    if frames:
        found = pl.concat(frames, how="vertical_relaxed").collect()
        for row in found.sort(["rollout_id", "labeler", "aspect", "labeler_version"], nulls_last=True).to_dicts():
            labels.setdefault(row["rollout_id"], []).append(row)
    return labels, notes


def read_datasets(folder: str | Path, labels_dir: str | Path | None, max_rows: int) -> Source:
    """Configs, rejects and labels of an assemble output folder. `labels_dir` None: labels are not looked up."""
    root = Path(folder)
    configs = []
    for sub in subfolders(root):
        if not (sub / MANIFEST).is_file():
            raise FileNotFoundError(f"{sub / MANIFEST}: missing; assemble did not finish (dvc repro assemble)")
        configs.append(read_config(sub.name, manifest_schema(sub), sub, max_rows))
    notes, rejects = [], []
    for sub in sorted([*subfolders(root), *([root / REWARDS] if (root / REWARDS).is_dir() else [])]):
        if (sub / REJECTS_DIR).is_dir():
            rejects.append(read_rejects(sub.name, sub / REJECTS_DIR))
        else:
            notes.append(f"{sub.name}: no {REJECTS_DIR}/ folder, so no rejected rows to show")
    wanted = {
        str(row[c])
        for config in configs
        for c in ROLLOUT_COLUMNS.get(kind_of(config.schema), ())
        for row in config.rows
        if row.get(c)
    }
    sources = {str(s) for config in configs for row in config.rows for s in row.get("label_sources") or ()}
    labels: dict[str, list[dict]] = {}
    labels_read = False
    if labels_dir is not None and wanted:
        labels_dir = Path(labels_dir)
        if labels_dir.is_dir():
            labels, label_notes = read_labels(labels_dir, wanted, sources)
            notes += label_notes
            labels_read = True
        else:
            notes.append(f"{labels_dir}: no label folder, so pairs show no verdicts or rationales (dvc repro label)")
    return Source(
        kind=DATASETS,
        title=f"rewardmill dataset {root.as_posix()}",
        folder=str(folder),
        configs=configs,
        rejects=rejects,
        labels=labels,
        labels_read=labels_read,
        notes=notes,
    )


def pretty_name(readme: Path) -> str | None:
    """The dataset card's `pretty_name` (YAML front matter); None when the card has none or does not parse."""
    parts = readme.read_text(encoding="utf-8").split("---\n")
    try:
        meta = yaml.safe_load(parts[1]) if len(parts) > 2 and not parts[0].strip() else None
    except yaml.YAMLError:
        return None
    name = meta.get("pretty_name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name.strip() else None


def read_export(folder: str | Path, max_rows: int) -> Source:
    """Configs of an export folder (rows only: rejects and labels stay out of an export)."""
    root = Path(folder)
    configs = []
    for sub in sorted(p for p in (root / DATA_DIR).iterdir() if p.is_dir()):
        files = sorted(sub.glob("*.parquet"))
        if not files:
            continue
        configs.append(read_config(sub.name, schema_id(pq.read_schema(files[0])), sub, max_rows))
    if not configs:
        raise FileNotFoundError(f"{root / DATA_DIR}: no config folders with Parquet shards; run `dvc repro export`")
    return Source(
        kind=EXPORT,
        title=pretty_name(root / README) or "rewardmill export",
        folder=None,
        configs=configs,
        rejects=None,
        notes=[
            "Rejected rows and the labels behind each row are not part of the export: the dataset card (README.md) "
            "counts the rejects by reason; `rewardmill view data/datasets` shows them with examples and verdicts."
        ],
    )
