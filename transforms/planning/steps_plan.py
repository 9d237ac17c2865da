"""The plan of a steps stage: the prefixes whose continuations are not cached, and the judge calls not cached.

Each selected rollout is prepared as the stage does it (segmented, its final answer checked) and its search is
replayed over the continuation cache: a cached prefix's continuations are checked as in the run, so the search
goes where the run would. Monte Carlo asks for all its prefixes at once, so its count is exact. A binary search
stops being predictable at its first uncached prefix: from there the plan counts the longest path the search
could still take (an upper bound, flagged `bound`), each prefix at the rollout's longest prefix's tokens."""

import copy
from types import SimpleNamespace

from rewardmill.transforms.config import load_section
from rewardmill.transforms.planning.judge_calls import CallRecorder, counting_calls
from rewardmill.transforms.planning.spend import Prices, StagePlan, priced
from rewardmill.transforms.planning.stages import Paths, Rollouts, on_disk
from rewardmill.transforms.planning.tokens import TokenCounter
from rewardmill.transforms.stage.outputs import read_manifest
from rewardmill.transforms.steps.continuations import PrefixRequest
from rewardmill.transforms.steps.labeler import StepLabeler, make_judge_client
from rewardmill.transforms.steps.params import Chosen, StepsParams, continuation_model, resolve, select
from rewardmill.transforms.steps.segment import join_prefix


def plan_steps(
    name: str,
    config,
    rows: list[dict],
    continuer,
    model: str,
    calls_dir: str | None,
    prices: Prices,
    tokens: TokenCounter,
    seen: set[str] | None = None,
) -> StagePlan:
    """`rows`: the selected rollouts (pseudo-references attached); `continuer`: the stage's CachedContinuer (asked
    only for what it has cached); `model`: the continuing policy's folder; `seen`: the continuation and call keys
    earlier stages of the same plan generate (a binary search reuses Monte Carlo's prefixes)."""
    plan = StagePlan(f"steps@{name}", "selected rollouts", rows=len(rows))
    recorder = CallRecorder(plan, prices, tokens, seen)
    price = prices.price("transformers", model)
    with counting_calls(recorder):
        judge = make_judge_client(config, calls_dir) if config.uses_judge else None
        labeler = StepLabeler(name, config, None, judge)
        items, _ = labeler.prepare(sorted(rows, key=lambda r: r["rollout_id"]))
        for item in items:
            recorder.group = item.rollout["prompt_id"]
            before = plan.send.requests
            if config.uses_continuations:
                _plan_search(plan, recorder, labeler, item, continuer, model, price)
            if judge is not None:
                labeler.judge([item])
            plan.rows_cached += plan.send.requests == before
        if judge is not None:
            judge.close()
    if tokens.estimated:
        plan.notes.append(f"input tokens of {sorted(tokens.estimated)} estimated with the policy's tokenizer")
    return plan


def _request(item, step: int) -> PrefixRequest:
    rollout = item.rollout
    prefix = join_prefix(rollout["completion"], item.steps, step)
    return PrefixRequest(f"{rollout['rollout_id']}:{step}", tuple(rollout["messages"]), prefix)


def _plan_search(plan, recorder, labeler, item, continuer, model, price) -> None:
    """Replay the rollout's search over the cache; charge each prefix to send, and past the first result not known
    yet, the longest path the search could still take."""
    planner, k = labeler.planner_for(item), labeler.config.k
    out_tokens = k * labeler.config.continuation.max_new_tokens
    while planner.pending():
        requests = [_request(item, step) for step in planner.pending()]
        found = [continuer.cached(r) for r in requests]
        for r, texts in zip(requests, found, strict=True):
            key = continuer.key_of(r)
            if texts is not None or key in recorder.seen:  # cached, or an earlier stage of this plan makes it
                plan.cached += 1
                continue
            recorder.seen.add(key)
            tokens_in = recorder.tokens.chat(model, r.messages, r.prefix) * k
            plan.charge(recorder.group, priced(price, model, 1, tokens_in, out_tokens))
        if None in found:  # what the search does next depends on continuations not generated yet
            more = _worst_after(planner, lambda step: _known(continuer, recorder, item, step))
            if more:
                plan.bound = True
                full = recorder.tokens.chat(model, item.rollout["messages"], item.rollout["completion"]) * k
                plan.charge(recorder.group, priced(price, model, more, full * more, out_tokens * more))
            return
        reference = item.rollout["reference"]
        checks = [(f"{r.prefix}{text}", reference) for r, texts in zip(requests, found, strict=True) for text in texts]
        verdicts = iter(labeler.verifier.label_many(checks))
        for step, texts in zip(planner.pending(), found, strict=True):
            planner.update(step, sum(next(verdicts).verdict == "correct" for _ in texts), len(texts))


def _known(continuer, recorder, item, step: int) -> bool:
    request = _request(item, step)
    return continuer.cached(request) is not None or continuer.key_of(request) in recorder.seen


def _worst_after(planner, known=lambda step: False) -> int:
    """The most estimates not `known` (cached or planned) that may follow the pending round, whatever it finds."""
    most = 0
    for n_correct in (planner.k, 0):
        branch = copy.deepcopy(planner)
        for step in planner.pending():
            branch.update(step, n_correct, planner.k)
        most = max(most, worst_rounds(branch, known))
    return most


def worst_rounds(planner, known=lambda step: False) -> int:
    """The most estimates `planner` may still ask for that are not `known`, over every outcome of each round (all
    continuations reach the answer / none does)."""
    pending = planner.pending()
    return sum(not known(step) for step in pending) + _worst_after(planner, known) if pending else 0


def plan_unsampled(plan: StagePlan, labeler: StepLabeler, rows: list[dict], model: str, price, tokens, steps: int):
    """Charge the selected rollouts not sampled yet (a rollouts stage that will rerun) at their worst: `steps` steps
    each (segment.max_steps, else one a token), the longest search over them, every prefix at the whole answer's
    tokens. Judge calls of judge-based methods on them are not counted (the plan notes it)."""
    cfg = labeler.config
    if not rows or not cfg.uses_continuations:
        plan.rows += len(rows)
        return
    out_tokens = cfg.k * cfg.continuation.max_new_tokens
    most = max(
        worst_rounds(labeler.planner_for(SimpleNamespace(steps=[None] * steps, final_correct=final)))
        for final in (False, True)
    )
    for row in sorted(rows, key=lambda r: r["rollout_id"]):
        plan.rows += 1
        full = tokens.chat(model, row["messages"], row["completion"]) * cfg.k
        plan.charge(row["prompt_id"], priced(price, model, most, full * most, out_tokens * most))
    plan.bound = True


def plan_steps_stage(
    name: str,
    paths: Paths,
    prices: Prices,
    params=None,
    seen: set[str] | None = None,
    rollouts: Rollouts | None = None,
) -> StagePlan:
    from rewardmill.transforms.sampling.policy import model_identity
    from rewardmill.transforms.steps.continuations import CachedContinuer, TransformersContinuer, VLLMContinuer
    from rewardmill.transforms.steps.pseudo_reference import attach_all

    params = params or load_section(StepsParams, "steps", key=name)
    config = resolve(name, params)
    stage = f"steps@{name}"
    rollouts = rollouts or on_disk(paths)
    if rollouts.missing:
        return rollouts.plan_missing(stage, "selected rollouts")
    policies = read_manifest(paths.rollouts).get("policies", {}) if rollouts.policies is None else rollouts.policies
    model = continuation_model(name, params.policy, policies, paths.model)
    rows = rollouts.rows
    chosen, _ = select(rows, params.tasks, params.max_rollouts, params.policy)
    if config.reference != "given":  # the prompts' majority answers, voted as the stage votes them
        chosen = attach_all(rows, chosen, config.reference, config.pseudo_reference, Chosen(params, None))
    inner = (
        VLLMContinuer(model, config.continuation, config.k, params.vllm)
        if params.backend == "vllm"
        else TransformersContinuer(model, config.continuation, config.k, params.device)
    )
    cache = paths.steps_cache  # the stage's --cache: continuations/ and calls/ inside, as LabelStepChunks uses it
    continuer = CachedContinuer(inner, cache and f"{cache}/continuations", model_identity(model))
    calls = cache and f"{cache}/calls"
    unsampled = [r for r in chosen if r["rollout_id"] in rollouts.placeholders]  # planned at their worst
    chosen = [r for r in chosen if r["rollout_id"] not in rollouts.placeholders]
    counter = TokenCounter(model)
    plan = plan_steps(name, config, chosen, continuer, model, calls, prices, counter, seen)
    if unsampled:
        steps = config.segment.max_steps or rollouts.max_new_tokens  # a step holds at least a token
        labeler = StepLabeler(name, config)
        plan_unsampled(plan, labeler, unsampled, model, prices.price("transformers", model), counter, steps)
        if config.uses_judge:
            plan.notes.append(f"judge calls on the {len(unsampled)} selected rollouts not sampled yet are not counted")
    plan.notes.append(f"a request is one prefix's k={config.k} continuations")
    return rollouts.annotate(plan)
