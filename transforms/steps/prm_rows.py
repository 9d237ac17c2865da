"""Assemble one TRL stepwise (PRM_V1) row from a rollout's step labels, or say why it cannot be built.

Input: the prompt row (PROMPT_V1: prompt_id, messages, task, split), the rollout row (ROLLOUT_V2: rollout_id,
prompt_id, completion) and all STEP_LABEL_V1 rows of that rollout from one labeler. Output: a PRM_V1 row, or a
`Rejected` whose reason is a short countable code (REJECT_V1's `reason`) and whose detail names the problem.

Labels follow the Qwen PRM convention: a step is correct up to the rollout's first wrong step. By default the
steps after it are dropped (their labels say nothing once the prefix is wrong); without truncation they are
kept and labelled False, because a wrong prefix cannot become right.
"""

from dataclasses import dataclass

from rewardmill.schemas.step import METHODS

REJECT_REASONS = (
    "no_steps",  # no step label at all
    "prompt_mismatch",  # the rollout belongs to another prompt
    "rollout_mismatch",  # a step label belongs to another rollout or prompt
    "mixed_labelers",  # step labels from more than one labeler@version
    "inconsistent_n_steps",  # step labels disagree on the number of steps
    "duplicate_steps",  # a step index appears twice
    "missing_steps",  # not every index 0..n_steps-1 is present (or one lies outside it)
    "inconsistent_method",  # step labels disagree on the labeling method
    "unknown_method",  # a method outside METHODS
    "inconsistent_first_error",  # step labels disagree on the first wrong step
    "first_error_out_of_range",  # first_error_step is neither -1 nor a step index
    "span_mismatch",  # a step's text is not the rollout's completion[char_start:char_end]
    "score_out_of_range",  # a soft label outside [0, 1]
    "undecided_step",  # a kept step has no hard label
    "labels_contradict_first_error",  # a step before the first error is wrong, or the first error is right
    "no_user_message",  # the prompt has no user message to use as TRL's prompt
)


@dataclass(frozen=True)
class Rejected:
    """Why a rollout's step labels make no PRM row: `reason` is one of REJECT_REASONS, `detail` says what was seen."""

    reason: str
    detail: str


def build_prm_row(
    prompt: dict, rollout: dict, step_labels: list[dict], truncate_after_error: bool = True
) -> tuple[dict | None, Rejected | None]:
    """-> (PRM_V1 row, None), or (None, Rejected) when the labels are incomplete, inconsistent or undecided.

    `labels` are the hard labels (True before the first error, False at it, and False after it when kept);
    `soft_labels` are the step scores (None where not estimated). `min_score` is the minimum over kept steps of
    the soft label, or of the hard label as 0.0/1.0 where a step has no soft label (PURE's min-form aggregate);
    `last_score` is the same value for the last kept step. `prompt` is the last user message's content.
    Nothing handed in is modified.
    """
    steps = sorted(step_labels, key=lambda s: s["step_index"])
    rejected = _validate(prompt, rollout, steps, truncate_after_error)
    if rejected is not None:
        return None, rejected
    user = [m["content"] for m in prompt["messages"] if m["role"] == "user"]
    if not user:
        return None, Rejected("no_user_message", f"prompt {prompt['prompt_id']} has no user message")

    first_error = steps[0]["first_error_step"]
    kept = steps[: first_error + 1] if truncate_after_error and first_error >= 0 else steps
    # _validate checked that the hard labels are True before the first error and False at it.
    labels = [first_error < 0 or s["step_index"] < first_error for s in kept]
    soft_labels = [s["score"] for s in kept]
    values = [float(label) if score is None else score for score, label in zip(soft_labels, labels, strict=True)]
    return {
        "prompt_id": prompt["prompt_id"],
        "rollout_id": rollout["rollout_id"],
        "prompt": user[-1],
        "completions": [s["step_text"] for s in kept],
        "labels": labels,
        "soft_labels": soft_labels,
        "first_error_step": first_error,
        "method": steps[0]["method"],
        "labeler": steps[0]["labeler"],
        "min_score": min(values),
        "last_score": values[-1],
        "task": prompt.get("task"),
        "split": prompt["split"],
    }, None


def _validate(prompt: dict, rollout: dict, steps: list[dict], truncate_after_error: bool) -> Rejected | None:
    """The first problem that makes `steps` (sorted by step_index) unusable, else None."""
    rid, pid = rollout["rollout_id"], rollout["prompt_id"]
    if not steps:
        return Rejected("no_steps", f"rollout {rid} has no step labels")
    if prompt["prompt_id"] != pid:
        return Rejected("prompt_mismatch", f"rollout {rid} is of prompt {pid}, not {prompt['prompt_id']}")
    foreign = sorted({(s["rollout_id"], s["prompt_id"]) for s in steps} - {(rid, pid)})
    if foreign:
        return Rejected("rollout_mismatch", f"step labels of {foreign} handed in for rollout {rid} of prompt {pid}")
    labelers = sorted({f"{s['labeler']}@{s['labeler_version']}" for s in steps})
    if len(labelers) > 1:
        return Rejected("mixed_labelers", f"step labels from {labelers}; a PRM row takes one labeler's")
    n_steps = {s["n_steps"] for s in steps}
    if len(n_steps) > 1:
        return Rejected("inconsistent_n_steps", f"step labels give n_steps {sorted(n_steps)}")
    (n,) = n_steps
    indices = [s["step_index"] for s in steps]
    if len(set(indices)) < len(indices):
        duplicates = sorted({i for i in indices if indices.count(i) > 1})
        return Rejected("duplicate_steps", f"step indices {duplicates} appear more than once")
    if indices != list(range(n)):
        missing, extra = sorted(set(range(n)) - set(indices)), sorted(set(indices) - set(range(n)))
        return Rejected("missing_steps", f"n_steps={n}: missing {missing}, outside 0..{n - 1}: {extra}")
    methods = {s["method"] for s in steps}
    if len(methods) > 1:
        return Rejected("inconsistent_method", f"step labels give methods {sorted(methods)}")
    (method,) = methods
    if method not in METHODS:
        return Rejected("unknown_method", f"method {method!r} is not one of {', '.join(METHODS)}")
    first_errors = {s["first_error_step"] for s in steps}
    if len(first_errors) > 1:
        return Rejected("inconsistent_first_error", f"step labels give first_error_step {sorted(first_errors)}")
    (first_error,) = first_errors
    if not -1 <= first_error < n:
        return Rejected("first_error_out_of_range", f"first_error_step={first_error} with n_steps={n}")
    completion = rollout["completion"]
    for s in steps:
        i = s["step_index"]
        if completion[s["char_start"] : s["char_end"]] != s["step_text"]:
            return Rejected("span_mismatch", f"step {i}: completion[{s['char_start']}:{s['char_end']}] != step_text")
        if s["score"] is not None and not 0.0 <= s["score"] <= 1.0:
            return Rejected("score_out_of_range", f"step {i}: score {s['score']} outside [0, 1]")
        after_error = 0 <= first_error < i
        if s["hard_label"] is None and not (after_error and truncate_after_error):
            return Rejected("undecided_step", f"step {i} has no hard label (first_error_step={first_error})")
        if not after_error and s["hard_label"] != (first_error < 0 or i < first_error):
            return Rejected(
                "labels_contradict_first_error",
                f"step {i}: hard_label={s['hard_label']} but first_error_step={first_error}",
            )
    return None
