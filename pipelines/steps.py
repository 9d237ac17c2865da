"""Stage `steps@NAME`: step-level (process) labels from params `steps.NAME` for rollouts (data/steps/NAME/).

Rollouts of the configured tasks with a reference are selected (at most `max_rollouts`, lowest rollout ids first:
ids are hashes, so that is a fixed pseudo-random sample that every steps stage shares, which makes their labels
comparable), cut into chunks in rollout-id order, and each chunk is labeled by a `StepLabeler` (Monte Carlo
continuations on the policy, binary search, an LLM judge, or a consensus of both). Continuations and judge calls
are cached by content under --cache, so a rerun, a resumed stage or a second steps stage asking for the same prefix
generates nothing again. With `--metrics`: steps, continuations per labeled step, first-error shares, rejects.
"""

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import apache_beam as beam

from rewardmill.pipelines.config import ConfigError, from_dict, load_section
from rewardmill.pipelines.stage import (
    StageTimer,
    atomic_output,
    counter_totals,
    load_beam_config,
    read_manifest,
    run_pipeline,
    setup_logging,
    write_json_atomic,
    write_manifest,
    write_rejects,
)
from rewardmill.schemas import ROLLOUT_V2, STEP_LABEL_V1
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE
from rewardmill.transforms.sampling.pool import unknown_policy
from rewardmill.transforms.steps.beam import NAMESPACE, REJECTED, LabelStepChunks
from rewardmill.transforms.steps.labeler import StepsConfig
from rewardmill.transforms.steps.stats import step_stats

SELECTION_FILE = "_selection.json"


@dataclass(frozen=True)
class StepsParams:
    """params `steps.<NAME>`."""

    config: dict = field(default_factory=dict)  # StepsConfig: method, k, segment, continuation, verifier, judge
    tasks: tuple[str, ...] = ("math",)  # prompt tasks to label (MC needs answers a rule verifier can check)
    max_rollouts: int | None = None  # a fixed sample of the rollouts (lowest ids); None = every eligible one
    backend: Literal["transformers", "vllm"] = "transformers"  # continuations: the policy on CPU/GPU, or vLLM
    device: str = "cpu"  # transformers backend
    vllm: dict = field(default_factory=dict)  # extra vllm.LLM(...) kwargs
    chunk_size: int = 32  # rollouts per work item (batched together in each search round)
    # A candidate pool's member (rollouts.policies) whose rollouts get step labels, continued by that member's own
    # model folder: Monte Carlo estimates are the policy's own. null = the rollouts' only policy.
    policy: str | None = None
    num_shards: int = 1

    def __post_init__(self):
        if self.max_rollouts is not None and self.max_rollouts < 1:
            raise ValueError(f"max_rollouts must be >= 1 or null, got {self.max_rollouts!r}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size!r}")


def resolve(name: str, params: StepsParams) -> StepsConfig:
    return from_dict(StepsConfig, params.config, f"steps.{name}.config")


def select(
    rows: list[dict], tasks: tuple[str, ...], max_rollouts: int | None, policy: str | None = None
) -> tuple[list[dict], dict]:
    """Pure: the eligible rollouts (of `policy`, when named) in rollout-id order, capped; and counts of what was left
    out and why."""
    own = rows if policy is None else [r for r in rows if r["policy"]["name"] == policy]
    eligible = sorted((r for r in own if r.get("task") in tasks), key=lambda r: r["rollout_id"])
    chosen = eligible if max_rollouts is None else eligible[:max_rollouts]
    counts = {
        "rollouts": len(rows),
        "other_tasks": len(own) - len(eligible),
        "not_sampled": len(eligible) - len(chosen),
        "selected": len(chosen),
    }
    if policy is not None:
        counts["other_policies"] = len(rows) - len(own)
    return chosen, counts


def continuation_model(name: str, policy: str | None, policies: dict[str, dict], model_dir: str) -> str:
    """The folder whose model continues the selected rollouts: a named pool member's own, else --model. Fails
    (naming the known members) for a policy the rollouts do not have, an endpoint member (continuations need the
    weights), or a pool with no policy named (continuations from another policy would not be on-policy)."""
    where = f"params.yaml: steps.{name}.policy"
    if policy is None:
        if len(policies) > 1:
            raise ConfigError(
                f"{where}: the rollouts come from policies {sorted(policies)}; name the one whose rollouts get step "
                "labels (continuations must come from the policy that wrote the rollout)"
            )
        return model_dir
    if policy not in policies:
        raise ConfigError(f"{where}: {unknown_policy(policy, list(policies))}")
    folder = policies[policy].get("model")
    if folder is None:
        raise ConfigError(
            f"{where}: '{policy}' is served by an endpoint (backend {policies[policy]['backend']}); Monte Carlo "
            "continuations need its weights in a local folder: name a transformers or vllm member"
        )
    return folder


def chunks(rows: list[dict], size: int) -> list[list[dict]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def build(p, name: str, params: StepsParams, rollouts_dir: str, model_dir: str, out_dir: str, cache: str | None):
    config = resolve(name, params)
    selection_path = str(Path(out_dir) / SELECTION_FILE)

    def _select(rows):
        chosen, counts = select(rows, params.tasks, params.max_rollouts, params.policy)
        Path(selection_path).write_text(json.dumps(counts, sort_keys=True) + "\n")
        return chunks(chosen, params.chunk_size)

    labeled = (
        p
        | "Read rollouts" >> ReadStageOutput(rollouts_dir, ROLLOUT_V2)
        | "All rollouts" >> beam.combiners.ToList()
        | "Select and chunk" >> beam.FlatMap(_select)
        | "Spread chunks" >> beam.Reshuffle()
        | f"Steps {name}"
        >> beam.ParDo(
            LabelStepChunks(name, config, model_dir, params.backend, params.device, params.vllm, cache)
        ).with_outputs(REJECTED, main="steps")
    )
    _ = labeled.steps | "Write step labels" >> WriteSortedParquet(
        out_dir,
        STEP_LABEL_V1,
        sort_key=lambda r: f"{r['rollout_id']}\x00{r['step_index']:06d}",
        num_shards=params.num_shards,
    )
    write_rejects(labeled[REJECTED], Path(out_dir))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="the key under `steps:` in params.yaml")
    parser.add_argument("--rollouts", default="data/rollouts")
    parser.add_argument("--model", default="models/policy", help="the policy that writes continuations")
    parser.add_argument("--out", default=None, help="default: data/steps/NAME")
    parser.add_argument("--cache", default=None, help="continuation and judge call cache (kept across runs)")
    parser.add_argument("--metrics", default=None, help="write the stage's DVC metrics JSON here")
    args = parser.parse_args(argv)
    setup_logging()
    params = load_section(StepsParams, "steps", key=args.name)
    resolve(args.name, params)  # fail on a bad config before any work
    policies = read_manifest(args.rollouts).get("policies", {})  # the upstream stage finished
    model_dir = continuation_model(args.name, params.policy, policies, args.model)
    out = args.out or f"data/steps/{args.name}"
    timer = StageTimer(f"steps@{args.name}")
    with atomic_output(out) as tmp:
        result = run_pipeline(
            lambda p: build(p, args.name, params, args.rollouts, model_dir, str(tmp), args.cache), load_beam_config()
        )
        selection_path = tmp / SELECTION_FILE
        selection = json.loads(selection_path.read_text()) if selection_path.exists() else {}
        selection_path.unlink(missing_ok=True)
        manifest = write_manifest(
            tmp,
            stage=f"steps@{args.name}",
            schema=STEP_LABEL_V1,
            config=params,
            inputs={"rollouts": args.rollouts, "model": str(Path(model_dir) / FINGERPRINT_FILE)},
            extra={"selection": selection},
        )
        stats = step_stats(tmp) if args.metrics else None
    if args.metrics:
        this_run = counter_totals(result, NAMESPACE)  # continuations generated now (not from the cache), rollouts
        write_json_atomic(
            args.metrics, {**stats, "selection": selection, "rejects": manifest["rejects"], "this_run": this_run}
        )
    timer.done(manifest)


if __name__ == "__main__":
    main()
