"""The rounds' arithmetic: from what a round observed, whether the targets are met, and if not, how far to grow.

A round runs the DAG at a growth `factor`: every growable source at its params size times the factor (sizes.py).
The rows a config gets from a prompt of task t are taken to stay at the rate observed (yields.py); prompts of a source
that cannot grow stay as they are. The next factor is the smallest one at which the rows expected reach each target
plus `margin`, and at most `max_growth` times the current one. `rewardmill repro` runs the rounds; `rewardmill plan`
predicts them with the same function on observations scaled at constant rates (`predict`).
"""

from dataclasses import dataclass, field

from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.yields import Observation

MET, GROW, DRY = "met", "grow", "dry"


@dataclass(frozen=True)
class Decision:
    """`outcome`: met (every target reached), grow (to `factor`) or dry (short, and no source can grow).
    `expected`: {config: rows} the rates predict at `factor`; `short`: {config: rows missing now}."""

    outcome: str
    factor: float
    expected: dict[str, float] = field(default_factory=dict)
    short: dict[str, int] = field(default_factory=dict)


def expected_rows(obs: Observation, config: str, ratio: float, growable: set[str]) -> float:
    """The rows of `config` expected when every growable source has `ratio` times the prompts it has now."""
    return sum(
        obs.rate(config, task) * n * (ratio if source in growable else 1.0)
        for (source, task), n in obs.prompts.items()
    )


def decide(obs: Observation, targets: TargetsConfig, factor: float, growable: set[str]) -> Decision:
    """What to do after a round at `factor` that observed `obs`; `growable`: the sources that can still grow."""
    short = {c: want - obs.total(c) for c, want in targets.wanted.items() if obs.total(c) < want}
    if not short:
        return Decision(MET, factor)
    if not growable:
        return Decision(DRY, factor, short=short)
    ratios = []
    for config in short:
        want = targets.wanted[config] * (1 + targets.margin)
        fixed = expected_rows(obs, config, 0.0, growable)  # the sources that stay as they are
        grows = expected_rows(obs, config, 1.0, growable) - fixed
        # no row of this config came from a growable source yet: nothing to size by, so the most a round may grow
        ratios.append((want - fixed) / grows if grows > 0 else targets.max_growth)
    ratio = min(max(ratios), targets.max_growth)
    expected = {c: round(expected_rows(obs, c, ratio, growable), 3) for c in targets.wanted}
    return Decision(GROW, factor * ratio, expected, short)


def scaled_observation(obs: Observation, ratio: float, growable: set[str]) -> Observation:
    """`obs` with the growable sources' prompts times `ratio` and every config's rows at the rates observed."""
    prompts = {key: n * ratio if key[0] in growable else n for key, n in obs.prompts.items()}
    rows = {}
    for config in obs.rows:
        by_task: dict[str, float] = {}
        for (_, task), n in prompts.items():
            by_task[task] = by_task.get(task, 0.0) + obs.rate(config, task) * n
        rows[config] = by_task
    return Observation(prompts, rows)


@dataclass(frozen=True)
class Prediction:
    """The rounds `rewardmill repro` would run if every rate stayed as observed: (factor, prompts, {config: rows})
    per round, and how the last one ends (met, dry, or max_rounds)."""

    rounds: list[tuple[float, float, dict[str, float]]]
    outcome: str


def predict(obs: Observation, targets: TargetsConfig, growable: set[str]) -> Prediction:
    """Round 1 is `obs` itself (the params as they are); each next round is what `decide` asks for."""
    factor, current, rounds = 1.0, obs, []
    while True:
        rows = {c: round(current.total(c), 3) for c in targets.wanted}
        rounds.append((round(factor, 6), round(sum(current.prompts.values()), 3), rows))
        decision = decide(current, targets, factor, growable)
        if decision.outcome != GROW:
            return Prediction(rounds, decision.outcome)
        if len(rounds) >= targets.max_rounds:
            return Prediction(rounds, "max_rounds")
        current = scaled_observation(current, decision.factor / factor, growable)
        factor = decision.factor
