"""MathAnswerVerifier: is the completion's final answer equal to the reference? (math-verify)."""

from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner

# Rule verifiers are ~99% precise but miss ~14% of equivalent answers (Pitfalls of Rule- and Model-based
# Verifiers), so a negative is less certain than a positive.
CONFIDENCE_CORRECT = 0.99
CONFIDENCE_INCORRECT = 0.86


@dataclass(frozen=True)
class MathAnswerConfig:
    timeout_seconds: int = 5  # per parse/verify call; exceeded => verdict timeout, score None
    float_rounding: int = 6
    workers: int = 2  # helper processes verifying a batch in parallel (math-verify is CPU-bound, one core each)


def verify_answer(completion: str, reference: str, timeout_seconds: int, float_rounding: int = 6) -> Label:
    """Pure core. Must run in a main thread (math-verify's timeouts use signal.alarm)."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    try:
        # The gold is wrapped in $...$ so bare numbers and LaTeX both parse; gold comes first in verify().
        gold = parse(
            f"${reference}$", fallback_mode="no_fallback", parsing_timeout=timeout_seconds, raise_on_error=True
        )
        if not gold:
            return Label(None, 0.0, "abstain", f"reference does not parse: {reference!r}", raw=None)
        answer = parse(completion, parsing_timeout=timeout_seconds, raise_on_error=True)
        if not answer:
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", "no final answer found in the completion", raw=None)
        ok = verify(gold, answer, float_rounding=float_rounding, timeout_seconds=timeout_seconds, raise_on_error=True)
    except TimeoutException:
        return Label(None, 0.0, "timeout", f"math-verify exceeded {timeout_seconds}s")
    except Exception as exc:  # math-verify raises on malformed LaTeX; that is "cannot verify", not wrong
        return Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
    extracted = str(answer[-1]) if answer else None
    if ok:
        return Label(1.0, CONFIDENCE_CORRECT, "correct", f"answer {extracted} equals reference {reference}", extracted)
    return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"answer {extracted} != reference {reference}", extracted)


class MathAnswerVerifier:
    """Score 1.0 when the completion's final answer equals the reference, else 0.0.

    Input columns: completion, reference.   Output: score (None = cannot verify), verdict, rationale, raw
    (the extracted answer). A missing or unparseable reference abstains: it never rewards.
    """

    name = "math_answer"
    version = "1"
    reads = ("completion", "reference")
    Config = MathAnswerConfig

    def __init__(self, config: MathAnswerConfig | None = None):
        self.config = config or MathAnswerConfig()
        self._runner = MainThreadRunner(max(1, self.config.workers))

    def label(self, completion: str, reference: str | None) -> Label:
        if not reference:
            return Label(None, 0.0, "abstain", "no reference answer for this prompt")
        cfg = self.config
        try:
            return self._runner.call(
                verify_answer,
                (completion, reference, cfg.timeout_seconds, cfg.float_rounding),
                hard_timeout=3 * cfg.timeout_seconds + 10,
            )
        except HardTimeout as exc:
            return Label(None, 0.0, "timeout", str(exc))

    def label_many(self, rows: list[tuple[str, str | None]]) -> list[Label]:
        """label(*row) for each (completion, reference), verified on `workers` processes; order is kept.

        A call past the hard bound raises HardTimeout; the Beam wrapper then labels the batch one by one.
        """
        cfg = self.config
        todo = [i for i, (_, reference) in enumerate(rows) if reference]
        results = self._runner.map(
            verify_answer,
            [(rows[i][0], rows[i][1], cfg.timeout_seconds, cfg.float_rounding) for i in todo],
            hard_timeout=3 * cfg.timeout_seconds + 10,
        )
        labels = [Label(None, 0.0, "abstain", "no reference answer for this prompt")] * len(rows)
        for i, label in zip(todo, results, strict=True):
            labels[i] = label
        return labels

    def teardown(self) -> None:
        self._runner.close()
