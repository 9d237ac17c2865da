"""Stage `export`: every dataset config as Hub-layout Parquet shards plus a dataset card (export/).

In: data/datasets/<config>/ (shards + `_manifest.json` naming the schema), models/policy/ (the policy fingerprint),
dvc.lock when present. Out: export/README.md and export/data/<config>/<split>-0000i-of-0000N.parquet, nothing else,
so the folder uploads to the Hub as is and `datasets.load_dataset("export", "pairs")` reads it locally.
"""

import argparse
import hashlib
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from apache_beam.io.filesystems import FileSystems

from rewardmill.pipelines.config import canonical_json, load_section, params_hash
from rewardmill.pipelines.stage import (
    StageTimer,
    atomic_output,
    digest_path,
    load_beam_config,
    read_manifest,
    run_pipeline,
    setup_logging,
)
from rewardmill.transforms.export.card import Provenance, build_card
from rewardmill.transforms.export.hub_layout import ConfigExport, check_config_name, spec_for, write_config
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.sampling.policy import read_policy_info

STAGE = "export"
README = "README.md"

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class ExportConfig:
    """params `export`."""

    num_shards: int = 1  # files per split (one per row when a split is smaller); fixed so reruns give the same names
    license: str = "apache-2.0"  # Hub license id, written in the card's metadata
    pretty_name: str = "rewardmill dataset"  # the card's title and the Hub's display name

    def __post_init__(self):
        if self.num_shards < 1:
            raise ValueError("num_shards must be >= 1")
        if not self.license.strip() or not self.pretty_name.strip():
            raise ValueError("license and pretty_name must not be empty")


def discover_configs(datasets_dir: str | Path) -> dict[str, dict[str, Any]]:
    """config name -> its upstream manifest, for every config folder (`_*` and `.*` are not configs)."""
    root = Path(datasets_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder; run the assemble stage first (dvc repro assemble)")
    manifests = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        manifest = read_manifest(folder)
        spec_for(manifest.get("schema") or "unversioned")  # fail before any work on a config we cannot export
        manifests[check_config_name(folder.name)] = manifest
    if not manifests:
        raise FileNotFoundError(f"{root}: no dataset config folders to export")
    return manifests


def git_commit(cwd: str | Path | None = None) -> str | None:
    """HEAD of the git checkout at `cwd`; None outside a checkout, before the first commit, or without git."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def upstream_lock_digest(lock_path: str | Path, inputs: list[str | Path]) -> str | None:
    """sha256 of the dvc.lock entries of the stages that produced `inputs`, transitively; None without any.

    Only the upstream entries count: hashing the whole file would include this stage's own entry (written after it
    runs) and sibling stages', so a forced rerun with nothing changed would give a different card.
    """
    lock_path = Path(lock_path)
    if not lock_path.is_file():
        return None
    stages = (yaml.safe_load(lock_path.read_text()) or {}).get("stages") or {}
    root = lock_path.resolve().parent
    todo = [os.path.relpath(Path(p).resolve(), root) for p in inputs]
    keep: dict[str, Any] = {}
    while todo:
        path = todo.pop()
        for name, stage in sorted(stages.items()):
            outs = [os.path.normpath(o.get("path", "")) for o in stage.get("outs") or []]
            if name not in keep and any(_overlaps(out, path) for out in outs):
                keep[name] = stage
                todo += [os.path.normpath(d.get("path", "")) for d in stage.get("deps") or []]
    return hashlib.sha256(canonical_json(dict(sorted(keep.items()))).encode()).hexdigest() if keep else None


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + os.sep) or b.startswith(a + os.sep)


class _WriteConfig(beam.DoFn):
    """config name -> that config's Hub shards under `out_dir`; yields the ConfigExport summary."""

    def __init__(self, datasets_dir: str, out_dir: str, num_shards: int, manifests: dict[str, dict[str, Any]]):
        self.datasets_dir = datasets_dir
        self.out_dir = out_dir
        self.num_shards = num_shards
        self.schemas = {name: m["schema"] for name, m in manifests.items()}

    def process(self, config: str):
        spec = spec_for(self.schemas[config])
        shards = list_shards(FileSystems.join(self.datasets_dir, config))
        tables = [read_table(path, spec.schema) for path in shards]
        table = pa.concat_tables(tables) if tables else spec.schema.empty_table()
        exported = write_config(table, config, spec, self.out_dir, self.num_shards)
        beam.metrics.Metrics.counter(STAGE, f"rows_{config}").inc(exported.num_rows)
        yield exported


class _WriteCard(beam.DoFn):
    """[ConfigExport] -> README.md in `out_dir`."""

    def __init__(self, out_dir: str, cfg: ExportConfig, provenance: Provenance, manifests, repo_id: str | None):
        self.out_dir = out_dir
        self.cfg = cfg
        self.provenance = provenance
        self.manifests = manifests
        self.repo_id = repo_id

    def process(self, configs: list[ConfigExport]):
        text = build_card(
            configs,
            pretty_name=self.cfg.pretty_name,
            license=self.cfg.license,
            provenance=self.provenance,
            manifests=self.manifests,
            repo_id=self.repo_id,
        )
        with FileSystems.create(FileSystems.join(self.out_dir, README)) as fh:
            fh.write(text.encode())
        yield README


def build(
    p,
    cfg: ExportConfig,
    datasets_dir: str,
    out_dir: str,
    manifests: dict[str, dict[str, Any]],
    provenance: Provenance,
    repo_id: str | None = None,
) -> None:
    _ = (
        p
        | "Configs" >> beam.Create(sorted(manifests))
        | "Write config shards" >> beam.ParDo(_WriteConfig(datasets_dir, out_dir, cfg.num_shards, manifests))
        | "All configs" >> beam.combiners.ToList()
        | "Write card" >> beam.ParDo(_WriteCard(out_dir, cfg, provenance, manifests, repo_id))
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="data/datasets")
    parser.add_argument("--model", default="models/policy")
    parser.add_argument("--out", default="export")
    parser.add_argument("--lock", default="dvc.lock", help="dvc.lock to record in the card's provenance, if present")
    parser.add_argument("--repo-id", default=None, help="Hub repo id for the card's loading snippet")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(ExportConfig, STAGE)
    manifests = discover_configs(args.datasets)
    policy = read_policy_info(args.model)
    provenance = Provenance(
        params_hash=params_hash(cfg),
        git_commit=git_commit(),
        model={"name": policy.name, "source": policy.source, "fingerprint": policy.fingerprint},
        dvc_lock=upstream_lock_digest(args.lock, [args.datasets, args.model]),
        inputs={"datasets": digest_path(args.datasets)},
    )
    timer = StageTimer(STAGE)
    with atomic_output(args.out) as tmp:
        run_pipeline(
            lambda p: build(p, cfg, args.datasets, str(tmp), manifests, provenance, args.repo_id), load_beam_config()
        )
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted((tmp / "data").rglob("*.parquet")))
    if rows == 0:
        log.warning("%s: no rows in any config; the card lists no loadable config", STAGE)
    timer.done({"rows": rows})


if __name__ == "__main__":
    main()
