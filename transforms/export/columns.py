"""What each exported column means, per config: the dataset card's schema tables and each shard's field metadata.

One mapping per exported schema, because the same name means different things in different configs (`prompt` is a
list of messages in pairs, rl and sft, and a plain string in prm). Every column of the schema has an entry (a test
checks it), so a new column cannot reach the Hub undocumented.
"""

from rewardmill.schemas.pair import PAIR_TYPES
from rewardmill.schemas.rl import DIFFICULTIES
from rewardmill.schemas.step import METHODS

_SHARED = {
    "prompt_id": "sha256 of the canonical prompt messages",
    "task": "task family of the prompt (math, code, instruction, open, ...)",
    "split": "the split the row belongs to (from the prompt hash, so a prompt never crosses splits)",
    "label_sources": "`labeler@version` of every labeler whose score went into the row",
}

PAIR_COLUMN_DOCS = {
    **_SHARED,
    "pair_id": "sha256 of the prompt id and both rollout ids; unique per row",
    "prompt": "the conversation before the answer (user turns), as `{role, content}` messages",
    "chosen": "the preferred assistant turn(s), as `{role, content}` messages",
    "rejected": "the dispreferred assistant turn(s), as `{role, content}` messages",
    "score_chosen": "aggregated reward of the chosen completion, in [0, 1]",
    "score_rejected": "aggregated reward of the rejected completion, in [0, 1]",
    "margin": "score_chosen - score_rejected (> 0; ties are dropped); RewardTrainer's optional margin column",
    "confidence": "min of the two completions' label confidence, in [0, 1]",
    "agreement": "share of labelers whose scores order the pair the same way, in [0, 1]",
    "pair_type": "the strategy that chose the pair: " + ", ".join(PAIR_TYPES),
    "chosen_rollout_id": "rollout id of the chosen completion (lineage)",
    "rejected_rollout_id": "rollout id of the rejected completion (lineage)",
    "chosen_n_tokens": "length of the chosen completion in policy tokens",
    "rejected_n_tokens": "length of the rejected completion in policy tokens",
    "chosen_correct": "a rule verifier's verdict on the chosen completion; null = no verifier decided",
    "rejected_correct": "a rule verifier's verdict on the rejected completion; null = no verifier decided",
    "scores_chosen": "every `labeler/aspect` score of the chosen completion (null score = could not label)",
    "scores_rejected": "every `labeler/aspect` score of the rejected completion (null score = could not label)",
}

PRM_COLUMN_DOCS = {
    "prompt_id": _SHARED["prompt_id"],
    "task": _SHARED["task"],
    "split": _SHARED["split"],
    "rollout_id": "the rollout whose steps these are (lineage); unique per row together with `labeler`",
    "prompt": "the prompt's last user message as a plain string (TRL's stepwise `prompt`)",
    "completions": "the completion's steps in order (TRL's stepwise `completions`)",
    "labels": "per step: True before the first wrong step, False at it and after it (TRL's stepwise `labels`)",
    "soft_labels": "per step: share of continuations that reach the reference answer; null = not estimated (judge)",
    "first_error_step": "index of the first wrong step; -1 = no wrong step (ProcessBench's `label`)",
    "method": "how the steps were labelled: " + ", ".join(METHODS) + " (turns: a trajectory's assistant turns, "
    "each labeled on its own from its environment's records)",
    "labeler": "the steps labeler (its params `steps` key) that labelled the rollout",
    "min_score": "minimum score over the kept steps (the min-form aggregate PURE recommends)",
    "last_score": "score of the last kept step",
}

RL_COLUMN_DOCS = {
    "prompt_id": _SHARED["prompt_id"],
    "task": _SHARED["task"],
    "split": _SHARED["split"],
    "prompt": "the conversation to answer (user turns), as `{role, content}` messages (TRL's prompt-only format)",
    "reference": "the reference answer; null = none. Reaches GRPO reward functions as the `reference` keyword",
    "tests": "code tests (JSON); null = not a code task. Reaches reward functions as the `tests` keyword",
    "constraints": "instruction ids and their kwargs (JSON); null = none. Reaches reward functions as `constraints`",
    "n_samples": "the policy's samples of this prompt",
    "n_verified": "samples a rule verifier decided (correct or incorrect)",
    "n_correct": "samples a rule verifier decided correct",
    "pass_rate": "n_correct / n_verified; null = no sample verified",
    "mean_reward": "mean aggregated reward of the scored samples; null = none scored",
    "difficulty": "from pass_rate: " + ", ".join(DIFFICULTIES),
    "zero_pass": "every verified sample failed (0/k): no group-relative signal at this policy",
    "all_pass": "every verified sample passed (k/k): no group-relative signal at this policy",
}

SFT_COLUMN_DOCS = {
    **_SHARED,
    "rollout_id": "the rollout the completion is (lineage); unique per row",
    "prompt": "the conversation before the answer (user turns), as `{role, content}` messages",
    "completion": "the policy's answer (assistant turn), as `{role, content}` messages",
    "reward": "aggregated reward of the completion, in [0, 1]",
    "confidence": "confidence of the completion's labels, in [0, 1]",
    "correct": "a rule verifier's verdict; null = no verifier decided",
    "rank": "rank of the completion among the prompt's samples by reward; 0 = best",
    "n_tokens": "length of the completion in policy tokens",
    "scores": "every `labeler/aspect` score of the completion (null score = could not label); `labeler/aspect:c<i>` is "
    "criterion i of the prompt's generated rubric, a part of `labeler/aspect`",
}

# The multi-turn versions (outputs of trajectories: schemas/__init__.py CURRENT_VERSIONS).
_MULTI_TURN = (
    "every message after the prompt in TRL's conversational format with tool calls: the policy's turns (`content`; "
    "`tool_calls` with `arguments` as a JSON string), tool results (`role` tool, `tool_call_id`, `name`) and the "
    "environment's feedback (`role` user)"
)
_TOOLS = (
    "JSON schemas of the tools the episodes offered (TRL's `tools` column: its trainers pass them to the chat "
    "template); null = none"
)
PAIR_V3_COLUMN_DOCS = {
    **PAIR_COLUMN_DOCS,
    "chosen": f"the preferred trajectory: {_MULTI_TURN}",
    "rejected": f"the dispreferred trajectory of the same prompt: {_MULTI_TURN}",
    "tools": _TOOLS,
}
SFT_V2_COLUMN_DOCS = {**SFT_COLUMN_DOCS, "completion": f"the verified trajectory: {_MULTI_TURN}", "tools": _TOOLS}
RL_V2_COLUMN_DOCS = {
    **RL_COLUMN_DOCS,
    "environment": "the environment the episodes ran in: `name`, `version` and `config` (canonical JSON), so a "
    "trainer's rollouts can run in the same one",
    "tools": _TOOLS,
}

PAIR_ASPECT_COLUMN_DOCS = {
    **PAIR_COLUMN_DOCS,
    "pair_id": "sha256 of the prompt id with the aspect and both rollout ids; unique per row",
    "aspect": "the objective this pair differs on: a name of the score vector (`labeler/aspect`)",
    "score_chosen": "the chosen side's score on `aspect` (not the aggregated reward)",
    "score_rejected": "the rejected side's score on `aspect`",
    "margin": "score_chosen - score_rejected on `aspect`, > 0",
    "pair_type": "`by_aspect`",
}
