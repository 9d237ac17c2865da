"""Stage `rollouts`: n on-policy samples per prompt with tokens, logprobs and finish reason (data/rollouts/)."""

import argparse
import dataclasses
import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.ml.inference.base import RunInference

from rewardmill.schemas import PROMPT_V1, ROLLOUT_V2, ROLLOUT_V3
from rewardmill.transforms.batch.client import BatchPending
from rewardmill.transforms.batch.samples import batched_members, calls_dir, sample_batches
from rewardmill.transforms.config import load_section
from rewardmill.transforms.environments.params import EnvironmentParams
from rewardmill.transforms.environments.summary import EPISODE_COLUMNS, episode_summary
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet, list_shards, read_rows, read_table
from rewardmill.transforms.planning.budget import BUDGET_REASON, Budget
from rewardmill.transforms.planning.rollout_plan import batch_discount, plan_rollouts_stage
from rewardmill.transforms.planning.spent import rollouts_spend
from rewardmill.transforms.planning.stages import load_prices, plan_paths
from rewardmill.transforms.planning.tokens import TokenCounter
from rewardmill.transforms.sampling.cache import COUNTERS, RolloutCache
from rewardmill.transforms.sampling.openai_backend import EndpointPolicy, OpenAIPolicyHandler, check_reachable
from rewardmill.transforms.sampling.params import SamplingParams
from rewardmill.transforms.sampling.policy import PolicyInfo
from rewardmill.transforms.sampling.pool import Member, PolicySpec, resolve_pool
from rewardmill.transforms.sampling.reasoning import ReasoningTags, token_usage
from rewardmill.transforms.sampling.rows import FormBatches, ToRolloutRows
from rewardmill.transforms.stage.budget import StageBudget
from rewardmill.transforms.stage.conservation import ConservationError, id_frame, reconcile
from rewardmill.transforms.stage.outputs import REJECTS_DIR, count_rejects, read_manifest, reject, write_rejects
from rewardmill.transforms.stage.runner import (
    absolute_args,
    cache_arg,
    counter_totals,
    load_beam_config,
    recorded,
    setup_logging,
)
from rewardmill.transforms.stage.skeleton import ManifestSpec, StageRun, run_stage

STAGE = "rollouts"
log = logging.getLogger("rewardmill")
BACKENDS = ("transformers", "vllm", "openai", "recorded")


@dataclass(frozen=True)
class RolloutsConfig:
    """params `rollouts`."""

    # transformers (CPU/GPU) | vllm (GPU, or vLLM's CPU build) | openai (an endpoint) | recorded (the prompts' recorded
    # traces, from a `traces` source, as the rollouts: nothing is sampled)
    backend: str = "transformers"
    n: int = 4
    temperature: float = 0.8
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    seed: int = 0
    batch_size: int = 8  # prompts per generate call (vllm: larger batches let it schedule more; the cache saves each)
    num_shards: int = 1
    device: str = "cpu"  # transformers backend: cpu | cuda
    vllm: dict = field(default_factory=dict)  # extra vllm.LLM kwargs
    openai: EndpointPolicy = field(default_factory=EndpointPolicy)  # backend openai: the served policy
    # A candidate pool (UltraFeedback): name -> PolicySpec (backend, model, device, vllm, openai; a field left out is
    # the value above). Every member samples every prompt; rollouts record the member's name. {} = one policy.
    policies: dict[str, PolicySpec] = field(default_factory=dict)
    # Prompts whose generation may fail (after the backend's retries) before the stage fails instead of writing them
    # as `generation_error` rejects. 0: an outage fails the stage, and a rerun resumes from the rollouts cache.
    max_generation_errors: int = 0
    # The most this stage sends in one run (a request = one sample; tokens; USD at params `prices` for endpoints);
    # prompts beyond it are rejected with reason `budget`, and a rerun with a larger budget resumes from the cache.
    budget: Budget = field(default_factory=Budget)
    # Multi-turn episodes in an environment (docs/environments.md): {name, config, max_turns, max_tokens}; null = one
    # turn per sample, ROLLOUT_V2 as always. Each prompt's n samples become n episodes, written as ROLLOUT_V3.
    environment: EnvironmentParams | None = None
    # A leading reasoning trace (docs/environments.md, "Reasoning"): {open: "<think>", close: "</think>"} puts it in
    # `reasoning` and only what follows in `completion`, the text every verifier and judge reads; a trace cut off
    # before its answer gets no credit. The rows are then ROLLOUT_V3. null = the text as sampled is the answer.
    reasoning: ReasoningTags | None = None
    # Token-exact capture (docs/environments.md, "Token ids"): each assistant turn's prompt token ids, drawn token ids
    # and their raw logprobs in `turns`, so a trainer weighs exactly what was sampled without re-tokenizing a chat.
    # The rows are then ROLLOUT_V3; it is part of each rollout's id (other cache entries). transformers and vllm only.
    keep_tokens: bool = False
    # transformers backend: sample each prompt in its own generate call, so its rollouts' floats (logprob_sum) do not
    # depend on which prompts share its batch: what makes `rewardmill repro`'s rounds byte-identical to one run
    # (docs/targets.md). Slower on CPU
    batch_invariant: bool = False

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.max_generation_errors < 0:
            raise ValueError("max_generation_errors must be >= 0")
        uses_openai = self.backend == "openai" or any(s.backend == "openai" for s in self.policies.values())
        if uses_openai and self.top_k > 0:
            raise ValueError("top_k: the OpenAI chat API has no top_k; use top_p with backend openai")
        if uses_openai and self.keep_tokens:
            raise ValueError(
                "keep_tokens: a served policy's chat API returns text, not the token ids it fed and drew; sample "
                "with backend transformers or vllm, or set keep_tokens to false"
            )
        if self.recorded:
            if self.policies or self.environment is not None or self.keep_tokens:
                raise ValueError(
                    "backend recorded: the recorded traces are the rollouts, so it is the run's only policy, with no "
                    "environment and no keep_tokens (nothing is sampled)"
                )
        if self.batch_invariant:
            engines = {self.backend, *(s.backend for s in self.policies.values() if s.backend)}
            if engines - {"transformers"}:
                raise ValueError(
                    f"batch_invariant: built for the transformers backend; {sorted(engines - {'transformers'})} "
                    "batch as their engine or server decides (docs/targets.md)"
                )
        for name, spec in self.policies.items():
            if spec.backend == "recorded":
                raise ValueError(f"policies.{name}: backend recorded is a run's only policy (set rollouts.backend)")
            if spec.backend is not None and spec.backend not in BACKENDS:
                raise ValueError(f"policies.{name}.backend must be one of {BACKENDS}, got {spec.backend!r}")
        self.sampling()  # validates the sampling fields (and resolves the environment: a bad name or config fails)

    def sampling(self) -> SamplingParams:
        episode = self.environment.episode(self.reasoning) if self.environment is not None else None
        return SamplingParams(
            self.n,
            self.temperature,
            self.top_p,
            self.top_k,
            self.max_new_tokens,
            self.seed,
            episode,
            self.keep_tokens,
            self.batch_invariant,
        )

    @property
    def recorded(self) -> bool:
        return self.backend == "recorded"

    def schema(self):
        """ROLLOUT_V2, or ROLLOUT_V3 with episodes, reasoning, token capture or recorded traces (schemas/)."""
        single_turn = (
            self.environment is None and self.reasoning is None and not self.keep_tokens and not self.recorded
        )
        return ROLLOUT_V2 if single_turn else ROLLOUT_V3

    def pool(self, default_model: str) -> list[Member]:
        """The policies to sample, resolved (fingerprints read): `policies`, or this section's one policy."""
        defaults = PolicySpec(self.backend, None, self.device, self.vllm, self.openai)
        return resolve_pool(self.policies, defaults, default_model, BACKENDS)


def model_handler(
    m: Member,
    sampling: SamplingParams,
    total: int,
    cache: RolloutCache | None = None,
    label: str | None = None,
    environment: EnvironmentParams | None = None,
    reasoning: ReasoningTags | None = None,
    calls_dir: str | None = None,  # a served policy's call cache (its batch pass's answers)
):
    if m.backend == "recorded":
        from rewardmill.transforms.sampling.recorded_backend import RecordedPolicyHandler

        return RecordedPolicyHandler(m.model_dir, sampling, total, label)
    if m.backend == "openai":
        return OpenAIPolicyHandler(m.openai, sampling, total, cache, label, reasoning, environment, calls_dir)
    if m.backend == "vllm":
        from rewardmill.transforms.sampling.vllm_backend import VLLMPolicyHandler

        return VLLMPolicyHandler(m.model_dir, sampling, dict(m.vllm), total, cache, label, environment, reasoning)
    from rewardmill.transforms.sampling.transformers_backend import TransformersPolicyHandler

    return TransformersPolicyHandler(m.model_dir, sampling, m.device, total, cache, label, environment, reasoning)


def build(
    p,
    cfg: RolloutsConfig,
    prompts_dir: str,
    members: list[Member],
    total: int,
    out_dir: str,
    cache_dir: str | None = None,
    over_budget: frozenset[str] = frozenset(),
):
    """Every member samples the same batches; their rows meet in one sorted output (pool members one after
    another per prompt, by name), and their failed batches in one reject file. Prompts in `over_budget` are not
    sampled: each (prompt, policy) is a `budget` reject."""
    groups = max(1, math.ceil(total / (cfg.batch_size * 4)))  # parallelism for runners with many workers
    sampling = cfg.sampling()
    pooled = bool(cfg.policies)
    prompts = p | "Read prompts" >> ReadStageOutput(prompts_dir, PROMPT_V1)
    rows, failed = [], []
    if over_budget:
        prompts, skipped = prompts | "Budget" >> beam.Partition(lambda row, _: int(row["prompt_id"] in over_budget), 2)
        names = [m.name if pooled else None for m in members]
        failed.append(skipped | "Budget rejects" >> beam.FlatMap(_budget_rejects, names, cfg.budget.describe()))
    batches = prompts | "Form batches" >> FormBatches(cfg.batch_size, groups)
    for m in members:
        step = f" {m.name}" if pooled else ""  # one policy keeps the plain step names
        cache = RolloutCache(cache_dir, m.info.fingerprint, m.backend, sampling)
        generated, failures = (
            batches
            | f"Generate{step}"
            >> RunInference(
                model_handler(
                    m,
                    sampling,
                    total,
                    cache,
                    m.name if pooled else None,
                    cfg.environment,
                    cfg.reasoning,
                    calls_dir(cache_dir),
                )
            ).with_exception_handling()
        )
        rows.append(generated | f"To rollout rows{step}" >> beam.ParDo(ToRolloutRows(m.info, m.backend, sampling)))
        where = m.name if pooled else None
        failed.append(failures.failed_inferences | f"Failed batches{step}" >> beam.FlatMap(_failed_rejects, where))
    merged = rows[0] if len(rows) == 1 else rows | "Pool rollouts" >> beam.Flatten()
    _ = merged | "Write rollouts" >> WriteSortedParquet(out_dir, cfg.schema(), _rollout_key, cfg.num_shards)
    rejected = failed[0] if len(failed) == 1 else failed | "Pool failures" >> beam.Flatten()
    write_rejects(rejected, out_dir)


def _rollout_key(row: dict[str, Any]) -> str:
    return f"{row['prompt_id']}\x00{row['policy']['name']}\x00{row['sample_index']:06d}"


def _budget_rejects(prompt, policies: list[str | None], budget: str):
    for policy in policies:
        row_id = prompt["prompt_id"] if policy is None else f"{prompt['prompt_id']}@{policy}"
        why = f"params rollouts.budget ({budget}) was reached before this prompt; a larger budget samples it"
        yield reject(STAGE, row_id, BUDGET_REASON, why)


def _failed_rejects(failure, policy: str | None):
    """A failed batch -> one generation_error reject per prompt (row id `<prompt_id>@<policy>` in a pool)."""
    batch, exc = failure[0], failure[1]
    for prompts in batch:
        for prompt in prompts:
            row_id = prompt["prompt_id"] if policy is None else f"{prompt['prompt_id']}@{policy}"
            yield reject(STAGE, row_id, "generation_error", f"{type(exc).__name__}: {exc}")


def check_generation_errors(out_dir: str, failed: int, cfg: RolloutsConfig, total: int, cache: str | None) -> None:
    """More than `max_generation_errors` prompts whose generation failed fail the stage: nothing is renamed into
    place, and a rerun resumes from the cache."""
    if failed <= cfg.max_generation_errors:
        return
    first = next(r for r in read_rows(storage.join(out_dir, REJECTS_DIR)) if r["reason"] == "generation_error")
    raise SystemExit(
        f"rollouts: generation failed for {failed} of {total} prompts (rollouts.max_generation_errors = "
        f"{cfg.max_generation_errors}); first: prompt {first['row_id']}: {first['detail']}. Batches that "
        f"finished are in the rollouts cache ({cache or 'off: pass --cache'}): fix the cause and rerun "
        "to resume"
    )


def check_conservation(out_dir: str, prompts: int, members: int, n: int | None, failed: int) -> None:
    """Every (prompt, policy) has its n samples (n None: recorded traces, as many as were recorded) or one
    generation_error reject; fails naming the count otherwise."""
    rows = id_frame(out_dir, ["prompt_id", "policy", "rollout_id"])
    sampled = rows.select("prompt_id", "policy").unique().height
    reconcile(STAGE, inputs=prompts * members, outputs=sampled, rejects=failed, unit="(prompt, policy) pairs")
    if n is None:
        if rows.height != rows["rollout_id"].n_unique():
            raise ConservationError(f"{STAGE}: {rows.height - rows['rollout_id'].n_unique()} duplicated rollouts")
        return
    reconcile(STAGE, inputs=sampled * n, outputs=rows["rollout_id"].n_unique(), rejects=0, unit="samples")
    if rows.height != sampled * n:
        raise ConservationError(f"{STAGE}: {rows.height - sampled * n} duplicated rollouts; nothing was written")


def check_output(out_dir: str, cfg: RolloutsConfig, total: int, members: int, cache: str | None) -> dict:
    """Generation errors within `max_generation_errors`, then conservation (budget rejects count as rejects); the
    manifest's records read back from the written rows: with an environment what its episodes did (`episodes`), with
    `reasoning` the generated tokens and how many were reasoning (`tokens`)."""
    rejects = count_rejects(out_dir)
    check_generation_errors(out_dir, rejects.get("generation_error", 0), cfg, total, cache)
    check_conservation(out_dir, total, members, None if cfg.recorded else cfg.n, sum(rejects.values()))
    readers = {}  # manifest record -> (the columns it reads, what it makes of the rows)
    if cfg.reasoning is not None:
        readers["tokens"] = (TOKEN_COLUMNS, tokens_record)
    if cfg.environment is not None or cfg.recorded:  # recorded traces are trajectories too (multi-turn datasets)
        readers["episodes"] = (EPISODE_COLUMNS, episodes_record)
    if cfg.environment is not None:  # what ran the episodes, as resolved (versions, digests): the card names it
        readers["environments"] = (["environment"], environments_record)
    if not readers:
        return {}
    columns = list(dict.fromkeys(c for read, _ in readers.values() for c in read))
    rows = [r for path in list_shards(out_dir) for r in read_table(path, columns=columns).to_pylist()]  # read once
    return {name: record(rows) for name, (_, record) in readers.items()}


def sampled(out_dir: str, members: list[Member], model_dir: str) -> dict:
    """The manifest's `spend`: what the written rollouts cost (transforms/planning/spent.py), each at its policy's
    price (an endpoint's served model, or prices.local)."""
    shards = list_shards(out_dir)
    names = set(read_table(shards[0], columns=None).schema.names) if shards else set()
    columns = ["prompt_id", "messages", "n_tokens", "policy"] + (["turns"] if "turns" in names else [])
    rows = [r for path in shards for r in read_table(path, columns=columns).to_pylist()]
    models = {
        m.name: (m.backend, m.openai.model if m.backend == "openai" else m.model_dir, batch_discount(m))
        for m in members
    }
    return rollouts_spend(rows, models, load_prices(), TokenCounter(model_dir))


TOKEN_COLUMNS = ["n_tokens", "reasoning_tokens"]  # what the manifest's `tokens` reads of a row


def environments_record(rows) -> list[dict]:
    """The manifest's `environments`: each distinct environment the rows ran in ({name, version, config}, the config
    as the rollouts record it: a verifiers environment's args, module version and source digest, library version)."""
    seen = {(r["environment"]["name"], r["environment"]["version"], r["environment"]["config"]) for r in rows}
    return [{"name": n, "version": v, "config": json.loads(c)} for n, v, c in sorted(seen)]


def tokens_record(rows) -> dict:
    """The manifest's `tokens`, said in one log line."""
    tokens = token_usage(rows)
    log.info("rollouts: %(generated)d tokens generated, %(reasoning)d of them reasoning", tokens)
    return tokens


def episodes_record(rows) -> dict:
    """The manifest's `episodes`, said in one log line."""
    summary = episode_summary(rows)
    tools = ", ".join(f"{v} {k}" for k, v in summary["tools"].items() if v)
    log.info(
        "rollouts: %d episodes: %s; %s assistant turns on average, %d tool calls%s",
        summary["trajectories"],
        ", ".join(f"{v} {k}" for k, v in summary["by_stop_reason"].items() if v) or "none",
        summary["assistant_turns"]["mean"],
        summary["tool_calls"],
        f" ({tools})" if tools else "",
    )
    return summary


def log_cache_use(run: StageRun) -> None:
    """Cache use goes to the log, not the manifest: the output must not depend on what was cached."""
    counts = counter_totals(run.result, COUNTERS)
    if counts:
        log.info(
            "rollouts: %d prompts sampled now, %d reused from the cache",
            counts.get("prompts_generated", 0),
            counts.get("prompts_reused", 0),
        )
    if counts.get("turns_generated") or counts.get("turns_reused"):
        log.info(
            "rollouts: %d episode turns sampled now, %d replayed from the cache",
            counts.get("turns_generated", 0),
            counts.get("turns_reused", 0),
        )


def policies_record(members: list[Member]) -> dict[str, dict]:
    """The manifest's `policies`: name -> fingerprint, source, backend, model folder (what steps and export read)."""
    return {
        m.name: {
            "fingerprint": m.info.fingerprint,
            "source": m.info.source,
            "backend": m.backend,
            "model": None if m.model_dir is None else recorded(m.model_dir),
        }
        for m in members
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", default="data/prompts", help="the prompts folder (the prompts stage's output)")
    parser.add_argument(
        "--model", default="models/policy", help="the materialized policy folder (the model stage's output)"
    )
    parser.add_argument("--out", default="data/rollouts", help="the rollouts folder to write")
    parser.add_argument("--cache", default=None, help="rollout cache folder, kept across runs (off when unset)")
    args = absolute_args(parser.parse_args(argv), "prompts", "model", "out")
    args.cache = cache_arg(args.cache)
    setup_logging()
    beam_cfg = load_beam_config()
    cfg = load_section(RolloutsConfig, STAGE)
    try:
        members = cfg.pool(args.model)
    except ValueError as exc:
        raise SystemExit(f"params.yaml: {exc}") from exc
    for m in members:
        if m.backend == "openai":  # nothing is sampled while an endpoint is down
            check_reachable(m.openai)
    storage.check_readable(args.prompts, "prompts")
    if cfg.recorded:
        members = [recorded_member(members[0], args.prompts)]
    total = read_manifest(args.prompts)["rows"]
    budget = admission(cfg, args.prompts, args.model, args.cache)
    over = budget.over if budget else frozenset()
    batched = send_batches(cfg, members, args.prompts, args.cache, over)
    run_stage(
        STAGE,
        args.out,
        beam_cfg,
        lambda p, tmp: build(p, cfg, args.prompts, members, total, tmp, args.cache, over),
        ManifestSpec(
            cfg.schema(),
            cfg,
            {"prompts": args.prompts},
            extra=lambda finished: (
                {"policies": policies_record(members), "prompts": total}
                | ({} if cfg.policies else {"policy": members[0].info.__dict__})
                | ({"batch": batched} if batched else {})
                | finished.checked
            ),
        ),
        check=lambda tmp, result: (
            check_output(tmp, cfg, total, len(members), args.cache) | {"spend": sampled(tmp, members, args.model)}
        ),
        budget=budget,
        log_run=log_cache_use,
    )


def recorded_member(member: Member, prompts_dir: str) -> Member:
    """The recorded policy, fingerprinted by the traces files its prompts name."""
    from rewardmill.transforms.sampling.recorded_backend import fingerprint, recorded_digests

    metadata = [
        v for path in list_shards(prompts_dir) for v in read_table(path, columns=["metadata"])["metadata"].to_pylist()
    ]
    digests = recorded_digests(metadata)
    if not digests:
        raise SystemExit(
            "params.yaml: rollouts.backend recorded, but no prompt has recorded traces: add a prompts source of kind "
            "traces (docs/models-and-prompts.md)"
        )
    info = PolicyInfo(name="recorded", source="recorded traces", fingerprint=fingerprint(digests))
    return dataclasses.replace(member, name=info.name, info=info)


def send_batches(cfg: RolloutsConfig, members: list[Member], prompts_dir: str, cache: str | None, over) -> dict | None:
    """The batch pass of served policies with `batch:` (transforms/batch/samples.py) over the admitted prompts, before
    the pipeline: its record, or None when no policy batches."""
    if not batched_members(members):
        return None
    prompts = [p for p in read_rows(prompts_dir, PROMPT_V1) if p["prompt_id"] not in over]
    try:
        return sample_batches(members, cfg.sampling(), prompts, cache, cfg.environment is not None)
    except (BatchPending, ValueError) as exc:
        raise UserError(f"rollouts: {exc}") from exc


def admission(cfg: RolloutsConfig, prompts_dir: str, model_dir: str, cache: str | None):
    """Which prompts fit under the stage's budget (None: no budget), from its plan over the rollout cache."""
    if not cfg.budget.limited:
        return None
    paths = plan_paths(prompts=prompts_dir, model=model_dir, rollouts_cache=None)  # cache-blind (see budget.py)
    return StageBudget.admit("rollouts.budget", plan_rollouts_stage(paths, load_prices(), cfg), cfg.budget)


if __name__ == "__main__":
    main()
