"""What a downstream stage is planned against: an upstream's rows on disk only while that upstream will not rerun.

`rewardmill plan` predicts the whole run the params describe. An upstream output is current when its manifest records
the params hash and input digests the params and inputs give now (and, for rollouts, the policies' fingerprints);
otherwise the run rebuilds it, and the stages after it are planned against what it will write. For the rollouts
stage that is every (prompt, policy)'s n samples: the ones its rollout cache holds, as the run would reuse them, and
for the others a placeholder answer (one per rollout, so no two share a judge call) of max_new_tokens tokens that no
rule verifier accepts, so each labeler is counted as judging it: an upper bound on the calls and their tokens.
"""

from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.params import Sample, rollout_id, sample_seed
from rewardmill.transforms.sampling.rows import to_rollout_row

# hex digits -> letters: a placeholder names its rollout without a digit a math verifier could read as an answer
_LETTERS = str.maketrans("0123456789abcdef", "ghijklmnopqrstuv")


def stale_reasons(
    manifest: dict | None,
    params_hash: str,
    digests: dict[str, str],
    fingerprints: dict[str, str] | None = None,
) -> list[str]:
    """Pure: why an output built as `manifest` records is not what the params give now (empty: it is current).

    `params_hash`: the stage's params section hashed now; `digests`: input name -> digest now (an input left out
    is not compared); `fingerprints`: policy name -> fingerprint now, against the manifest's `policies`."""
    if manifest is None:
        return ["it is not built"]
    reasons = []
    if manifest.get("params_hash") != params_hash:
        reasons.append("its params changed since it was built")
    recorded = manifest.get("inputs", {})
    changed = sorted(name for name, digest in digests.items() if recorded.get(name) != digest)
    if changed:
        reasons.append(f"its inputs changed since it was built ({', '.join(changed)})")
    if fingerprints is not None:
        before = {name: p.get("fingerprint") for name, p in manifest.get("policies", {}).items()}
        if before != fingerprints:
            reasons.append("its policy's weights changed since it was built")
    return reasons


def placeholder_completion(rollout_id: str, max_new_tokens: int) -> str:
    """A stand-in for an answer not sampled yet: unique to its rollout, no number in it, max_new_tokens words."""
    return " ".join([f"pending{rollout_id[:16].translate(_LETTERS)}", *["x"] * (max_new_tokens - 1)])


def predicted_rollouts(prompts: list[dict], members, sampling, cache_dir: str | None) -> tuple[list[dict], set[str]]:
    """The rows the rollouts stage would write for `prompts` (every member, n samples each), and the ids of those
    that are placeholders (not in the rollout cache). `members`: the resolved pool; `sampling`: its SamplingParams."""
    rows, placeholders = [], set()
    for m in members:
        cache = RolloutCache(cache_dir, m.info.fingerprint, m.backend, sampling)
        sampling_json = sampling.to_json(m.backend)
        for prompt in sorted(prompts, key=lambda p: p["prompt_id"]):
            samples = _cached(cache, prompt)
            pending = samples is None
            if pending:
                samples = [_placeholder(prompt, m, sampling, sampling_json, i) for i in range(sampling.n)]
            made = [to_rollout_row(prompt, s, m.info, m.backend, sampling_json) for s in samples]
            rows.extend(made)
            if pending:
                placeholders.update(r["rollout_id"] for r in made)
    return rows, placeholders


def _cached(cache: RolloutCache, prompt: dict):
    """The prompt's n cached samples, as the run would reuse them (RolloutCache.has asks the same store)."""
    if not cache.has(prompt):
        return None
    return cache._store.get(cache.key_of(prompt))


def _placeholder(prompt: dict, member, sampling, sampling_json: str, index: int) -> Sample:
    seed = sample_seed(sampling.seed, prompt["prompt_id"], index)
    ident = rollout_id(prompt["prompt_id"], member.info.fingerprint, sampling_json, index, seed)  # as the run's row
    completion = placeholder_completion(ident, sampling.max_new_tokens)
    return Sample(index, seed, completion, sampling.max_new_tokens, "length", None)
