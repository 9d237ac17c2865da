"""Stage `export`: every dataset config as Hub-layout Parquet shards plus a dataset card (export/).

In: data/datasets/<config>/ (shards + `_manifest.json` naming the schema: pairs, prm, rl, sft; `_*` folders such as
`_rewards/` are internal and not exported), models/policy/ (the policy fingerprint), data/labels/*/_manifest.json
(labeler registry keys, versions and judge models; optional) and dvc.lock when present.
Out: export/README.md, export/data/<config>/<split>-0000i-of-0000N.parquet and export/viewer.html (one static, offline
page of the exported rows, linked from the card; `rewardmill view export` writes the same bytes), nothing else, so the
folder uploads to the Hub as is and `datasets.load_dataset("export", "<config>")` reads it locally.

A config whose shards hold a different number of rows than its manifest records fails the stage: the card's counts
must be the rows the upstream stage wrote, nothing dropped silently.
"""

import argparse
import dataclasses
import json
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

from rewardmill.transforms.config import load_section, params_hash
from rewardmill.transforms.export.card import build_card
from rewardmill.transforms.export.hub_layout import ConfigExport, check_config_name, spec_for, write_config
from rewardmill.transforms.export.provenance import (
    Provenance,
    describe_backend,
    judge_backends,
    lock_digest,
    stage_outs,
    upstream_stages,
)
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.judges import probes
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, read_policy_info
from rewardmill.transforms.stage.conservation import reconcile
from rewardmill.transforms.stage.outputs import atomic_output, digest_path, read_manifest
from rewardmill.transforms.stage.runner import StageTimer, load_beam_config, run_pipeline, setup_logging
from rewardmill.transforms.view.page import VIEWER, view_page

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


def read_lock(lock_path: str | Path, inputs: list[str | Path]) -> dict[str, Any]:
    """The dvc.lock entries of the stages that produced `inputs`, transitively ({} without a lock file).

    Only the upstream entries count: the whole file would include this stage's own entry (written after it runs) and
    sibling stages', so a forced rerun with nothing changed would give a different card.
    """
    lock_path = Path(lock_path)
    if not lock_path.is_file():
        return {}
    stages = (yaml.safe_load(lock_path.read_text()) or {}).get("stages") or {}
    root = lock_path.resolve().parent
    return upstream_stages(stages, [os.path.relpath(Path(p).resolve(), root) for p in inputs])


def upstream_lock_digest(lock_path: str | Path, inputs: list[str | Path]) -> str | None:
    """sha256 of the dvc.lock entries of the stages upstream of `inputs`; None without any."""
    return lock_digest(read_lock(lock_path, inputs))


def label_manifests(labels_dir: str | Path | None) -> dict[str, dict[str, Any]]:
    """params key -> data/labels/<key>/_manifest.json ({} without the folder); a label folder without a manifest is
    skipped (assemble already refuses unfinished label stages)."""
    root = Path(labels_dir) if labels_dir else None
    if root is None or not root.is_dir():
        return {}
    manifests = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        try:
            manifests[folder.name] = read_manifest(folder)
        except FileNotFoundError:
            log.warning("%s: no manifest; its labeler is left out of the card", folder)
    return manifests


def judge_probe_reports(manifests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """params key -> the numbers of its judge's attack-probe report (label manifests' `probes`), for the card."""
    return {key: probes.summary(m["probes"]) for key, m in manifests.items() if m.get("probes")}


def labeler_audit(metrics_path: str | None) -> dict[str, Any] | None:
    """The validate stage's `labeler_audit` (each labeler measured on the gold packs), for the card; None without
    the metrics file."""
    if not metrics_path or not Path(metrics_path).is_file():
        return None
    return json.loads(Path(metrics_path).read_text()).get("labeler_audit")


def label_provenance(labels_dir: str | Path | None) -> tuple[tuple[tuple[str, str, str], ...], ...]:
    """-> (judges, labelers) from data/labels/*/_manifest.json: (labeler, judge model, fingerprint or "") for every
    model a model-based labeler calls, and (params key, registry key, version) for every labeler. Empty without the
    folder."""
    judges, labelers = [], []
    for name, manifest in label_manifests(labels_dir).items():
        key = str(manifest.get("labeler") or "")
        labelers.append((name, key, str(manifest.get("labeler_version") or "")))
        config = (manifest.get("params") or {}).get("config") or {}
        for backend in judge_backends(config, _has_backend(key)):
            judges.append((name, describe_backend(backend), _model_fingerprint(backend)))
    return tuple(judges), tuple(labelers)


def _has_backend(key: str) -> bool:
    """Whether the labeler's Config has a `backend` (it calls a model, by default the policy folder)."""
    from rewardmill.transforms.labelers import get_labeler_class  # imports every built-in labeler: only here

    try:
        config = get_labeler_class(key).Config
    except (KeyError, AttributeError, ImportError):  # an unknown or broken plugin: no model recorded, no failure
        return False
    return dataclasses.is_dataclass(config) and any(f.name == "backend" for f in dataclasses.fields(config))


def _model_fingerprint(backend: dict[str, Any]) -> str:
    """A local model folder's recorded fingerprint; "" for endpoints and hub ids (their name stands for them)."""
    path = Path(backend["model"])
    if backend["kind"] != "transformers" or not (path / FINGERPRINT_FILE).is_file():
        return ""
    return read_policy_info(path).fingerprint


class _WriteConfig(beam.DoFn):
    """config name -> that config's Hub shards under `out_dir`; yields the ConfigExport summary."""

    def __init__(self, datasets_dir: str, out_dir: str, num_shards: int, manifests: dict[str, dict[str, Any]]):
        self.datasets_dir = datasets_dir
        self.out_dir = out_dir
        self.num_shards = num_shards
        self.schemas = {name: m["schema"] for name, m in manifests.items()}
        self.rows = {name: m.get("rows") for name, m in manifests.items()}

    def process(self, config: str):
        spec = spec_for(self.schemas[config])
        shards = list_shards(FileSystems.join(self.datasets_dir, config))
        tables = [read_table(path, spec.schema) for path in shards]
        table = pa.concat_tables(tables) if tables else spec.schema.empty_table()
        expected = self.rows[config]
        if expected is not None and expected != table.num_rows:
            raise ValueError(
                f"{config}: the shards hold {table.num_rows} rows but its manifest records {expected}; "
                "rerun the upstream stage (dvc repro assemble)"
            )
        exported = write_config(table, config, spec, self.out_dir, self.num_shards)
        beam.metrics.Metrics.counter(STAGE, f"rows_{config}").inc(exported.num_rows)
        yield exported


class _WriteCard(beam.DoFn):
    """[ConfigExport] -> README.md in `out_dir` (linking the viewer page the driver writes beside it)."""

    def __init__(
        self, out_dir, cfg: ExportConfig, provenance: Provenance, manifests, repo_id: str | None, accuracy=None
    ):
        self.out_dir = out_dir
        self.cfg = cfg
        self.provenance = provenance
        self.manifests = manifests
        self.repo_id = repo_id
        self.accuracy = accuracy or {}  # build_card's labeler_audit and judge_probes

    def process(self, configs: list[ConfigExport]):
        text = build_card(
            configs,
            pretty_name=self.cfg.pretty_name,
            license=self.cfg.license,
            provenance=self.provenance,
            manifests=self.manifests,
            repo_id=self.repo_id,
            viewer=VIEWER if any(c.num_rows for c in configs) else None,  # the driver writes it when rows exist
            **self.accuracy,
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
    accuracy: dict[str, Any] | None = None,
) -> None:
    """`accuracy`: build_card's labeler_audit and judge_probes (how far each labeler can be trusted)."""
    _ = (
        p
        | "Configs" >> beam.Create(sorted(manifests))
        | "Write config shards" >> beam.ParDo(_WriteConfig(datasets_dir, out_dir, cfg.num_shards, manifests))
        | "All configs" >> beam.combiners.ToList()
        | "Write card" >> beam.ParDo(_WriteCard(out_dir, cfg, provenance, manifests, repo_id, accuracy))
    )


def pool_policies(rollouts_dir: str | None) -> tuple[tuple[str, str, str, str], ...]:
    """A candidate pool's members from the rollouts manifest (name, backend, source, fingerprint), or the recorded
    traces' policy (backend recorded: off-policy, never --model's samples); () for one sampling policy (the card then
    names --model's)."""
    if rollouts_dir is None:
        return ()
    policies = read_manifest(rollouts_dir).get("policies") or {}
    if len(policies) < 2 and not any(p["backend"] == "recorded" for p in policies.values()):
        return ()
    return tuple((n, p["backend"], p["source"], p["fingerprint"]) for n, p in sorted(policies.items()))


def rollout_environments(rollouts_dir: str | None) -> tuple[tuple[str, str, str], ...]:
    """The environments the rollouts' episodes ran in, from the rollouts manifest: (name, version, config JSON)."""
    if rollouts_dir is None:
        return ()
    found = read_manifest(rollouts_dir).get("environments") or []
    return tuple((e["name"], e["version"], json.dumps(e["config"], sort_keys=True)) for e in found)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--datasets", default="data/datasets", help="the datasets folder (the assemble stage's output)"
    )
    parser.add_argument(
        "--model", default="models/policy", help="the policy folder (its fingerprint goes into the card)"
    )
    parser.add_argument("--rollouts", default=None, help="the rollouts stage's output: a candidate pool's policies")
    parser.add_argument("--out", default="export", help="the Hub-layout folder to write")
    parser.add_argument("--labels", default=None, help="label stage outputs: labeler versions and judge models")
    parser.add_argument("--lock", default="dvc.lock", help="dvc.lock to record in the card's provenance, if present")
    parser.add_argument("--repo-id", default=None, help="Hub repo id for the card's loading snippet")
    parser.add_argument(
        "--validate-metrics", default=None, help="validate's metrics: each labeler's accuracy on the gold packs"
    )
    # paths stay as given: the card records them and dvc.lock is matched by them (atomic_output resolves `out`; a
    # cluster runner's bundles run in this working directory)
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(ExportConfig, STAGE)
    manifests = discover_configs(args.datasets)
    policy = read_policy_info(args.model)
    pool = pool_policies(args.rollouts)
    lock = read_lock(args.lock, [args.datasets, args.model, *([args.labels] if args.labels else [])])
    judges, labelers = label_provenance(args.labels)
    accuracy = {
        "labeler_audit": labeler_audit(args.validate_metrics),
        "judge_probes": judge_probe_reports(label_manifests(args.labels)),
        "learned_rules": {k: m for k, m in label_manifests(args.labels).items() if m.get("rules") is not None},
    }
    provenance = Provenance(
        params_hash=params_hash(cfg),
        git_commit=git_commit(),
        model=None if pool else {"name": policy.name, "source": policy.source, "fingerprint": policy.fingerprint},
        policies=pool,
        environments=rollout_environments(args.rollouts),
        dvc_lock=lock_digest(lock),
        stages=stage_outs(lock),
        judges=judges,
        labelers=labelers,
        inputs={"datasets": digest_path(args.datasets)},
    )
    timer = StageTimer(STAGE)
    with atomic_output(args.out) as folder:  # a local folder: the Hub layout `rewardmill push` uploads
        tmp = Path(folder)
        run_pipeline(
            lambda p: build(p, cfg, args.datasets, str(tmp), manifests, provenance, args.repo_id, accuracy),
            load_beam_config(),
        )
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted((tmp / "data").rglob("*.parquet")))
        if rows:  # the page of what was exported, read back from the folder (no config with rows: nothing to show)
            (tmp / VIEWER).write_text(view_page(tmp), encoding="utf-8")
        # every row of every config is exported (a config's splits are its rows, divided)
        reconcile(
            STAGE,
            inputs=sum(m["rows"] for m in manifests.values()),
            outputs=rows,
            rejects=0,
            unit="dataset rows",
            allow_empty=True,
        )
    if rows == 0:
        log.warning("%s: no rows in any config; the card lists no loadable config", STAGE)
    timer.done({"rows": rows})


if __name__ == "__main__":
    main()
