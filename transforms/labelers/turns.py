"""TurnLabelsVerifier: turn-level labels of a multi-turn trajectory, from what its environment recorded per turn.

Three aspects per trajectory (the per-turn detail is in the `turns` aspect's raw JSON, one entry per assistant turn):
- `turns`: the share of assistant turns that are good steps (no tool error or failure, no answer checked wrong);
  verdict correct when every one is. Its raw JSON lists each turn's signals and the first bad turn.
- `tool_use`: the share of the tool calls the policy attempted that parsed and ran cleanly (a malformed call, an
  unknown tool, a refused call, a hang or a crash all count against it). Abstains when it attempted none.
- `progress`: how soon the policy reached a correct answer: 1 / (the number of answers the environment checked up
  to the first correct one), 0.0 when none was correct. Abstains when no answer was checked (an environment with no
  verifier, or an episode that never answered).

Single-turn rollouts (no `turns`) abstain on every aspect.

The signals, per assistant turn (pure over the TURN structs, so the assemble stage's turn-level process rows and the
viewer read the same facts; nothing is re-run: a tool's outcome is what the sandbox reported when the episode ran):
- `tool_calls`: the calls that parsed (the turn's `tool_calls`);
- `tool_errors`: calls that did not parse, named an unknown tool, had bad arguments, or were refused (past
  `max_calls`): the environment's `tool_errors` count;
- `tool_failures`: parsed calls whose code hung (`timeouts`) or died (`crashes`);
- `unparsed`: the tool errors that were calls that did not parse (`parse_errors`), so a refused call is not counted
  twice among the attempts;
- `verdict`: the environment's check of the turn's answer (`correct` | `incorrect` | None when it checked none:
  a turn of tool calls, or an environment without a verifier);
- `ok`: the turn's hard label: no tool error or failure, and no answer checked wrong. A turn the environment did
  not check and that used its tools cleanly is a good step, as a correct reasoning step is in a PRM;
- `score`: 1.0 / 0.0 for a checked answer, None otherwise (not estimated, as a PRM's soft label).
"""

import json
from dataclasses import asdict, dataclass
from typing import Any

from rewardmill.schemas.trajectory import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from rewardmill.transforms.labelers.base import Label

FAILURES = ("timeouts", "crashes")
CHECKED = ("correct", "incorrect")


@dataclass(frozen=True)
class TurnSignal:
    turn: int  # 0-based among the assistant turns
    message: int  # index of the assistant turn in `turns`
    tool_calls: int
    tool_errors: int
    tool_failures: int
    unparsed: int  # calls that did not parse (a part of tool_errors; the rest were parsed calls refused)
    verdict: str | None
    ok: bool
    score: float | None

    @property
    def answered(self) -> bool:
        """An answer the environment checked (a final answer, or an attempt in `feedback`)."""
        return self.verdict in CHECKED


def step_info(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn's step info (JSON in the TURN struct's `info`), {} when it has none or it is not an object."""
    text = turn.get("info")
    if not text:
        return {}
    try:
        info = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _count(info: dict[str, Any], key: str) -> int:
    value = info.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def turn_signals(turns: list[dict[str, Any]] | None) -> list[TurnSignal]:
    """One TurnSignal per assistant turn of `turns`, in order ([] for a single-turn rollout: no turns)."""
    signals = []
    for index, turn in enumerate(turns or ()):
        if turn.get("role") != "assistant":
            continue
        info = step_info(turn)
        errors = _count(info, "tool_errors")
        failures = sum(_count(info, key) for key in FAILURES)
        # an environment that does not say which errors were unparsed calls: all of them (none was parsed)
        unparsed = min(_count(info, "parse_errors"), errors) if "parse_errors" in info else errors
        verdict = info.get("verdict") if info.get("verdict") in CHECKED else None
        ok = errors == 0 and failures == 0 and verdict != "incorrect"
        score = None if verdict is None else float(verdict == "correct")
        signals.append(
            TurnSignal(
                len(signals), index, len(turn.get("tool_calls") or ()), errors, failures, unparsed, verdict, ok, score
            )
        )
    return signals


def first_error(signals: list[TurnSignal]) -> int:
    """The first assistant turn that is not `ok`, -1 when every one is."""
    return next((s.turn for s in signals if not s.ok), -1)


def render_turn(turn: dict[str, Any]) -> str:
    """An assistant turn as the text the policy committed to: its answer, then each tool call in the text protocol's
    form (transforms/environments/tool_calls.py), so a step that only called a tool is not an empty string. A turn
    of the text protocol already holds its calls as written in its content: that text alone."""
    parts = [turn.get("content") or ""]
    if TOOL_CALL_OPEN in parts[0]:
        return parts[0]
    for call in turn.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass  # kept as the string the policy wrote
        body = json.dumps({"name": function.get("name"), "arguments": arguments}, sort_keys=True, ensure_ascii=False)
        parts.append(f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}")
    return "\n".join(p for p in parts if p)


ASPECTS = ("turns", "tool_use", "progress")


@dataclass(frozen=True)
class TurnLabelsConfig:
    pass  # nothing to set: the signals are the environment's own records


class TurnLabelsVerifier:
    """Input columns: turns (ROLLOUT_V3).   Output: one Label per aspect of ASPECTS."""

    name = "turns"
    version = "1"
    reads = ("turns",)
    Config = TurnLabelsConfig

    def __init__(self, config: TurnLabelsConfig | None = None):
        self.config = config or TurnLabelsConfig()

    def label(self, turns) -> list[Label]:
        signals = turn_signals(turns)
        if not signals:
            why = "no assistant turns recorded (a single-turn rollout)"
            return [Label(None, 0.0, "abstain", why, aspect=aspect) for aspect in ASPECTS]
        return [_turns_label(signals), _tool_use_label(signals), _progress_label(signals)]


def _turns_label(signals: list[TurnSignal]) -> Label:
    good = sum(s.ok for s in signals)
    first = first_error(signals)
    raw = json.dumps({"first_error_turn": first, "turns": [asdict(s) for s in signals]}, sort_keys=True)
    where = "every turn is good" if first < 0 else f"first bad turn {first}"
    rationale = f"{good} of {len(signals)} assistant turns good; {where}"
    return Label(good / len(signals), 1.0, "correct" if first < 0 else "incorrect", rationale, raw, aspect="turns")


def _tool_use_label(signals: list[TurnSignal]) -> Label:
    attempted = sum(s.tool_calls + s.unparsed for s in signals)
    if not attempted:
        return Label(None, 0.0, "abstain", "no tool call attempted", aspect="tool_use")
    bad = sum(s.tool_errors + s.tool_failures for s in signals)
    bad = min(bad, attempted)  # a failure is of a parsed call: never more than were attempted
    rationale = f"{attempted - bad} of {attempted} tool calls parsed and ran cleanly"
    raw = json.dumps({"attempted": attempted, "errors": sum(s.tool_errors for s in signals),
                      "failures": sum(s.tool_failures for s in signals)}, sort_keys=True)  # fmt: skip
    return Label(1 - bad / attempted, 1.0, "correct" if not bad else "incorrect", rationale, raw, aspect="tool_use")


def _progress_label(signals: list[TurnSignal]) -> Label:
    answers = [s for s in signals if s.answered]
    if not answers:
        return Label(None, 0.0, "abstain", "no answer was checked by the environment", aspect="progress")
    solved = next((k for k, s in enumerate(answers, 1) if s.verdict == "correct"), None)
    if solved is None:
        return Label(0.0, 1.0, "incorrect", f"none of {len(answers)} checked answers was correct", aspect="progress")
    rationale = f"correct at checked answer {solved} of {len(answers)}"
    return Label(1 / solved, 1.0, "correct", rationale, aspect="progress")
