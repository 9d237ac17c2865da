"""What `assemble` does after its pipeline: reconcile the ids it read and wrote (conservation), and write the manifest
of every output folder. The reads behind both are named calls (`conservation_reads`, `manifest_reads`) that
pipelines/assemble.py runs together, two at a time; the checks and the writing then use their results.
"""

import logging
from collections import Counter
from functools import partial
from typing import Any

import polars as pl
import pyarrow.compute as pc

from rewardmill.schemas import PAIR_ASPECT_V1, PAIR_V2, PAIR_V3, PRM_V1, REWARD_V1, RL_V1, RL_V2, SFT_V1, SFT_V2
from rewardmill.schemas.step import TURNS_METHOD
from rewardmill.transforms.config import read_params
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.stage.conservation import distinct_ids, id_frame, reconcile, reject_rows
from rewardmill.transforms.stage.outputs import count_rows, digest_path, write_manifest
from rewardmill.transforms.steps.turn_prm import LABELER as TURNS_LABELER

log = logging.getLogger("rewardmill")

STAGE = "assemble"
OUTPUTS = {  # folder -> (schema, sort key columns)
    "_rewards": (REWARD_V1, ("rollout_id",)),
    "pairs": (PAIR_V2, ("pair_id",)),
    "rl": (RL_V1, ("prompt_id",)),
    "sft": (SFT_V1, ("rollout_id",)),
    "pairs_by_aspect": (PAIR_ASPECT_V1, ("pair_id",)),  # empty unless assemble.pairs_by_aspect names aspects
}
# From trajectories (an environment ran the rollouts): the multi-turn versions (schemas/__init__.py CURRENT_VERSIONS)
TRAJECTORY_OUTPUTS = {**OUTPUTS, "pairs": (PAIR_V3, ("pair_id",)), "rl": (RL_V2, ("prompt_id",)),
                      "sft": (SFT_V2, ("rollout_id",))}  # fmt: skip


def outputs(trajectories: bool) -> dict[str, tuple]:
    """The output folders' schemas and sort keys: TRAJECTORY_OUTPUTS when the rollouts are trajectories."""
    return TRAJECTORY_OUTPUTS if trajectories else OUTPUTS


OUTPUT_IDS = {  # output -> id
    "_rewards": "rollout_id",
    "rl": "prompt_id",
    "sft": "prompt_id",
    "pairs": "pair_id",
    "pairs_by_aspect": "pair_id",
}


def conservation_reads(out: str, rollouts_dir: str) -> dict[str, partial]:
    """The reads check_conservation needs, as named calls (main() runs them beside the manifests' reads).

    Where an output's id is its sort key, its ids are its rows as the files' footers count them: the writer refuses
    a shard whose key repeats (tables.sorted_by_key) and puts every key in the one shard its hash names, so those
    rows are distinct ids (reading a million ids back to count them again cost half a second). sft's rows are
    rollouts, counted by their distinct prompts."""

    def ids(name: str, column: str) -> partial:
        folder = storage.join(out, name)
        if OUTPUTS[name][1] == (column,):
            return partial(count_rows, folder)
        return partial(distinct_ids, folder, [column])

    return {
        "ids/prompts": partial(distinct_ids, rollouts_dir, ["prompt_id"]),
        **{f"ids/{name}": ids(name, column) for name, column in OUTPUT_IDS.items()},
        **{f"ids/{name}/_rejects": partial(reject_rows, storage.join(out, name)) for name in ("rl", "sft")},
    }


def check_conservation(
    out: str,
    counts: dict[str, int],
    found: dict[str, int],
    rollouts_dir: str,
    label_dirs: list[str],
    steps_dirs: list[str],
    trajectories: int = 0,
) -> None:
    """The buckets saw every rollout and label, and every output holds what they made: `_rewards` a row per
    rollout; `rl` and `sft` a row or a reject per prompt; `pairs` the pairs written; `prm` a row or a reject per
    (steps labeler, labeled rollout) and per trajectory (`trajectories` of them, when turn rows are made). `found`:
    the results of conservation_reads."""
    rollouts = count_rows(rollouts_dir)
    labels = sum(count_rows(d) for d in label_dirs)
    prompts = found["ids/prompts"]
    reconcile(STAGE, inputs=rollouts, outputs=counts.get("rollouts", 0), rejects=0, unit="rollouts in the buckets")
    reconcile(STAGE, inputs=labels, outputs=counts.get("labels", 0), rejects=0, unit="labels in the buckets")
    reconcile(STAGE, inputs=prompts, outputs=counts.get("prompts", 0), rejects=0, unit="prompts in the buckets")
    reconcile(f"{STAGE} _rewards", inputs=rollouts, outputs=found["ids/_rewards"], rejects=0, unit="rollouts")
    for name in ("rl", "sft"):
        reconcile(
            f"{STAGE} {name}",
            inputs=prompts,
            outputs=found[f"ids/{name}"],
            rejects=found[f"ids/{name}/_rejects"],
            unit="prompts",
            allow_empty=True,
        )
    for name, written in (("pairs", "pairs_written"), ("pairs_by_aspect", "aspect_pairs_written")):
        reconcile(
            f"{STAGE} {name}",
            inputs=counts.get(written, 0),
            outputs=found[f"ids/{name}"],
            rejects=0,
            unit="pairs",
            allow_empty=True,
        )
    if steps_dirs or trajectories:
        frames = [id_frame(d, ["rollout_id", "labeler"]) for d in steps_dirs]
        labeled = sum(f.unique().height for f in frames) + trajectories
        prm = distinct_ids(storage.join(out, "prm"), ["rollout_id", "labeler"])
        reconcile(
            f"{STAGE} prm",
            inputs=labeled,
            outputs=prm,
            rejects=reject_rows(storage.join(out, "prm")),
            unit="(steps labeler, rollout) pairs and trajectories",
            allow_empty=True,
        )


def manifest_reads(out: str, rollouts_dir: str, labels: dict[str, str], steps: dict[str, str]) -> dict[str, partial]:
    """The reads write_manifests needs, as named calls: each input's digest (every manifest lists the same inputs:
    each is hashed once), the labeler versions behind the rewards and the pairs' types."""
    inputs = {"rollouts": rollouts_dir, **{f"labels/{n}": d for n, d in labels.items()}}
    inputs |= {f"steps/{n}": d for n, d in steps.items()}
    return {
        "labeler_versions": partial(labeler_versions, storage.join(out, "_rewards")),
        "pair_types": partial(value_counts, storage.join(out, "pairs"), "pair_type"),
        **{f"digest/{name}": partial(digest_path, path) for name, path in inputs.items()},
    }


def write_manifests(
    out: str,
    cfg: Any,  # assemble.AssembleConfig
    counts: dict[str, int],
    found: dict[str, Any],
    labels: dict[str, str],
    steps: dict[str, str],
    trajectories: int = 0,
    multi_turn: bool = False,
) -> dict[str, dict]:
    """The manifest of each output folder (and of prm/ when `steps`, steps labeler -> its folder, names one, or
    `trajectories` made turn rows); `labels`: labeler -> its folder; `found`: the results of manifest_reads;
    `multi_turn`: the outputs are the trajectory versions."""
    digests = {name.removeprefix("digest/"): d for name, d in found.items() if name.startswith("digest/")}
    labeled = {name: d for name, d in digests.items() if not name.startswith("steps/")}
    stepped = {name: d for name, d in digests.items() if name == "rollouts" or name.startswith("steps/")}
    common = {
        "labelers": list(labels),
        "gates": list(cfg.aggregate.gates),  # the rule verifiers: the exported card's GRPO reward functions
        "labeler_versions": found["labeler_versions"],
        "counts": counts,
    }
    pair_types = {"pair_types": found["pair_types"]}
    manifests = {
        name: write_manifest(
            storage.join(out, name),
            stage=STAGE,
            schema=schema,
            config=cfg,
            input_digests=labeled,
            extra={**common, **pair_types} if name == "pairs" else common,
        )
        for name, (schema, _) in outputs(multi_turn).items()
    }
    for name, manifest in manifests.items():
        log.info("%s: %s: %d rows, rejects %s", STAGE, name, manifest["rows"], manifest["rejects"])
    if steps or trajectories:
        section = read_params().get("steps") or {}
        methods = {n: (section.get(n) or {}).get("config", {}).get("method") for n in steps}
        methods |= {TURNS_LABELER: TURNS_METHOD} if trajectories else {}
        manifests["prm"] = write_manifest(
            storage.join(out, "prm"),
            stage=STAGE,
            schema=PRM_V1,
            config=cfg,
            input_digests=stepped,
            extra={"step_labelers": list(methods), "step_methods": methods},
        )
        log.info("%s: prm: %d rows, rejects %s", STAGE, manifests["prm"]["rows"], manifests["prm"]["rejects"])
    return manifests


def labeler_versions(rewards_dir: str) -> dict[str, list[str]]:
    """labeler -> the versions that scored rollouts (from `label_sources`, "labeler@version")."""
    versions: dict[str, set[str]] = {}
    for path in list_shards(rewards_dir):
        sources = pl.from_arrow(read_table(path, columns=["label_sources"]))["label_sources"]
        sources = sources.explode().drop_nulls().unique()
        for source in sources.to_list():
            labeler, _, version = source.rpartition("@")
            versions.setdefault(labeler, set()).add(version)
    return {k: sorted(v) for k, v in sorted(versions.items())}


def value_counts(directory: str, column: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for path in list_shards(directory):
        for item in pc.value_counts(read_table(path, columns=[column]).column(column)).to_pylist():
            counts[item["values"]] += item["counts"]
    return dict(sorted(counts.items()))
