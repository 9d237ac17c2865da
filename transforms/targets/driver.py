"""The rounds of `rewardmill repro` with targets: run the DAG up to assemble, observe, decide, grow the prompt
sources in params.yaml, again. The DAG run, the observation and the budget check are handed in (pipelines/repro.py
passes `dvc repro assemble` and the data folders), so this loop is the same whatever runs the stages.

Stops when every target is met, when a stage rejected prompts for its budget (growing would only add rejects), when
no source can grow any more (a source whose size grew but whose prompts did not has run dry), or after max_rounds.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.params_file import write_sizes
from rewardmill.transforms.targets.rounds import GROW, MET, decide
from rewardmill.transforms.targets.sizes import SizePath, scaled, source_sizes
from rewardmill.transforms.targets.yields import Observation

log = logging.getLogger("rewardmill")

BUDGET, MAX_ROUNDS = "budget", "max_rounds"


@dataclass
class Sources:
    """The params' prompt sources: names, the sizes the user set (`base`) and the sizes now, of those that can grow."""

    names: list[str]
    base: dict[int, dict[SizePath, int]]
    now: dict[int, dict[SizePath, int]] = field(default_factory=dict)

    @classmethod
    def from_params(cls, entries: list[dict[str, Any]]) -> "Sources":
        sizes = {i: source_sizes(raw, f"prompts.sources[{i}]") for i, raw in enumerate(entries)}
        base = {i: s for i, s in sizes.items() if s}
        return cls([raw["name"] for raw in entries], base, {i: dict(s) for i, s in base.items()})

    def at(self, factor: float, growable: set[str]) -> tuple[float, dict[int, dict[SizePath, int]]]:
        """(factor, sizes) of the growable sources at `factor`, raised just enough that one of them adds a prompt."""
        grow = {i: base for i, base in self.base.items() if self.names[i] in growable}
        if all(scaled(base, factor)[p] <= self.now[i][p] for i, base in grow.items() for p in base):
            factor = max(factor, min((self.now[i][p] + 1) / base[p] for i, base in grow.items() for p in base))
        return factor, {i: scaled(base, factor) for i, base in grow.items()}

    def describe(self, sizes: dict[int, dict[SizePath, int]]) -> str:
        return ", ".join(
            f"{self.names[i]}.{'.'.join(p)} {self.now[i][p]} -> {n}" for i, s in sizes.items() for p, n in s.items()
        )


def run_rounds(
    targets: TargetsConfig,
    sources: Sources,
    params: Path,
    run_dag: Callable[[], None],
    observe: Callable[[], Observation],
    budget_rejects: Callable[[], dict[str, int]],
) -> dict[str, Any]:
    """Round after round (see the module docstring); returns the record `rewardmill repro` writes."""
    growable = {sources.names[i] for i in sources.base}
    factor, previous, rounds = 1.0, None, []
    grown: set[str] = set()  # the sources this round grew
    seconds_per_prompt = None
    outcome = MAX_ROUNDS
    for number in range(1, targets.max_rounds + 1):
        started = time.monotonic()
        run_dag()
        took = time.monotonic() - started
        obs = observe()
        if previous is not None:
            added = sum(obs.per_source().values()) - sum(previous.per_source().values())
            seconds_per_prompt = took / added if added > 0 else seconds_per_prompt
            for name in sorted(grown):
                if obs.per_source().get(name, 0) <= previous.per_source().get(name, 0):
                    growable.discard(name)
                    log.warning("targets: source %s grew but gave no new prompt: it has run dry", name)
        decision = decide(obs, targets, factor, growable)
        over_budget = {stage: n for stage, n in budget_rejects().items() if n}
        record = {
            "round": number,
            "factor": round(factor, 6),
            "sizes": {sources.names[i]: {".".join(p): n for p, n in s.items()} for i, s in sources.now.items()},
            "observed": obs.record(),
            "seconds": round(took, 1),
        }
        rounds.append(record)
        log.info("targets: round %d done in %.0fs: %s", number, took, progress(obs, targets))
        if decision.outcome != GROW:
            outcome = decision.outcome
            break
        if over_budget:
            outcome = BUDGET
            log.warning(
                "targets: a budget stopped the rounds (prompts rejected for budget: %s); raise it and rerun "
                "`rewardmill repro` to go on from the caches",
                ", ".join(f"{stage} {n}" for stage, n in sorted(over_budget.items())),
            )
            break
        if number == targets.max_rounds:
            break
        factor, sizes = sources.at(decision.factor, growable)
        new = sum(n - sources.now[i][p] for i, s in sizes.items() for p, n in s.items())
        eta = f", about {seconds_per_prompt * new:.0f}s at the last round's pace" if seconds_per_prompt else ""
        log.info(
            "targets: round %d: %s (rows expected %s)%s",
            number + 1,
            sources.describe(sizes),
            ", ".join(f"{c} {v:.0f}" for c, v in decision.expected.items()),
            eta,
        )
        record["next"] = {"factor": round(decision.factor, 6), "expected": decision.expected}
        write_sizes(params, sizes)
        for i, s in sizes.items():
            sources.now[i].update(s)
        grown = {sources.names[i] for i in sizes}
        previous = obs
    return {
        "targets": targets.wanted,
        "split": targets.split,
        "outcome": outcome,
        "met": outcome == MET,
        "rounds": rounds,
    }


def progress(obs: Observation, targets: TargetsConfig) -> str:
    """`pairs 87 of 100 (math 2.10 per prompt, code 0.45)`, per target."""
    tasks = sorted({t for _, t in obs.prompts})
    parts = []
    for config, want in targets.wanted.items():
        rates = ", ".join(f"{t} {obs.rate(config, t):.2f}" for t in tasks)
        parts.append(f"{config} {obs.total(config)} of {want} (rows per prompt: {rates})")
    return "; ".join(parts) + f"; {sum(obs.prompts.values())} prompts"
