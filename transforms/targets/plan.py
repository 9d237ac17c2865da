"""`rewardmill plan`'s part for params `targets`: the rounds `rewardmill repro` would run, the prompts they add, and
what those would send.

The rates come from the dataset on disk (data/datasets and data/prompts, as the first round would observe them when
params did not change since), or, before any dataset is built, from `targets.assumed_yield` (rows per prompt). The
rounds are `transforms/targets/rounds.predict`: the driver's own decision at rates held constant. The requests, tokens
and money of the new prompts are the whole DAG's plan without caches, per prompt, times the prompts added: an
estimate (a judge's follow-up calls after an answer are not in a plan; outputs count at their limit).
"""

from dataclasses import dataclass, field

from rewardmill.transforms.io import storage
from rewardmill.transforms.planning.spend import Spend
from rewardmill.transforms.planning.spent import per_row, spend_record
from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.rounds import Prediction, expected_rows, predict
from rewardmill.transforms.targets.sizes import source_sizes
from rewardmill.transforms.targets.yields import Observation, count_columns, observe


@dataclass
class TargetsPlan:
    targets: dict[str, int]
    basis: str  # observed | assumed | none
    prediction: Prediction | None = None
    observed: dict | None = None
    prompts_now: int = 0
    new: Spend = field(default_factory=Spend)  # what the prompts the rounds add would send (estimate)
    notes: list[str] = field(default_factory=list)

    @property
    def rounds(self) -> int | None:
        return len(self.prediction.rounds) if self.prediction else None

    @property
    def prompts_ratio(self) -> float:
        """The prompts the last round has over those now (1.0 without a prediction)."""
        if not self.prediction or not self.prompts_now:
            return 1.0
        return self.prediction.rounds[-1][1] / self.prompts_now

    @property
    def prompts_added(self) -> int:
        return round(self.prediction.rounds[-1][1] - self.prompts_now) if self.prediction else 0

    def summary(self) -> dict:
        """JSON-able (the `targets` entry of `rewardmill plan --json`)."""
        return {
            "stage": "targets",
            "targets": self.targets,
            "basis": self.basis,
            "rounds": self.rounds,
            "outcome": self.prediction.outcome if self.prediction else None,
            "per_round": [
                {"factor": f, "prompts": p, "rows": rows}
                for f, p, rows in (self.prediction.rounds if self.prediction else [])
            ],
            "prompts_added": self.prompts_added,
            "requests": self.new.requests,
            "tokens_in": self.new.tokens_in,
            "tokens_out_max": self.new.tokens_out,
            "cost_usd": round(self.new.cost, 6),
            "observed": self.observed,
            "notes": list(self.notes),
        }

    def render(self) -> list[str]:
        wanted = ", ".join(f"{c} >= {n}" for c, n in self.targets.items())
        if self.prediction is None:
            return [f"targets: {wanted}: rounds not predicted", *(f"  targets: {note}" for note in self.notes)]
        lines = [
            f"targets: {wanted}: {self.rounds} round(s) predicted ({self.prediction.outcome}), from {self.basis} rates"
        ]
        for i, (factor, prompts, rows) in enumerate(self.prediction.rounds, 1):
            expected = ", ".join(f"{c} ~{v:.0f}" for c, v in rows.items())
            lines.append(f"  round {i}: sources x{factor:.2f}, ~{prompts:.0f} prompts: {expected}")
        lines.append(
            f"  the rounds add ~{self.prompts_added} prompts: about {self.new.requests} requests, "
            f"{self.new.tokens_in} tokens in, {self.new.tokens_out} out (max), ${self.new.cost:.4f}"
        )
        return lines + [f"  targets: {note}" for note in self.notes]


def observed_yields(targets: TargetsConfig, prompts_dir: str, datasets_dir: str) -> tuple[Observation | None, str]:
    """(observation, basis): the dataset on disk when every targeted config is built, else the assumed yields over
    the prompts on disk, else (None, why)."""
    configs = list(targets.wanted)
    if not storage.exists(prompts_dir):
        return None, f"{prompts_dir} is not built: `dvc repro prompts` first"
    if all(storage.exists(storage.join(datasets_dir, c)) for c in configs):
        return observe(prompts_dir, datasets_dir, configs, targets.split), "observed"
    assumed = targets.assumed_yield or {}
    if all(c in assumed for c in configs):
        prompts = dict(count_columns(prompts_dir, ["source", "task"], "prompts"))
        rows: dict[str, dict[str, float]] = {c: {} for c in configs}
        for c in configs:
            for (_, task), n in prompts.items():
                rows[c][task] = rows[c].get(task, 0.0) + assumed[c] * n
        return Observation(prompts, rows), "assumed"
    return None, (
        f"no dataset built for {configs} yet and no targets.assumed_yield for them: the first round's rates decide "
        "(`dvc repro assemble`, then plan again)"
    )


def plan_targets(
    targets: TargetsConfig, sources: list[dict], prompts_dir: str, datasets_dir: str, full: Spend, prompts: int
) -> TargetsPlan:
    """`sources`: params prompts.sources; `full`: what the DAG's calling stages send for the `prompts` prompts on
    disk without caches (the per-prompt cost of a new prompt)."""
    plan = TargetsPlan(targets.wanted, "none")
    obs, basis = observed_yields(targets, prompts_dir, datasets_dir)
    if obs is None:
        plan.notes.append(basis)
        return plan
    growable = {raw["name"] for i, raw in enumerate(sources) if source_sizes(raw, f"prompts.sources[{i}]")}
    plan.basis, plan.observed = basis, obs.record()
    plan.prediction = predict(obs, targets, growable)
    plan.prompts_now = sum(obs.prompts.values())
    added = plan.prompts_added
    if prompts and added:
        plan.new = scaled_spend(full, added / prompts)
    if not growable:
        plan.notes.append("no prompt source can grow (a count or a limit): the rounds cannot add prompts")
    return plan


@dataclass
class RowCosts:
    """`rewardmill plan`'s tokens and money per accepted row of each dataset config, split by stage: the calling
    stages' plan without caches (what the rows cost the first time) over the rows observed on disk, both at the size
    the targets' rounds end at (`prompts_ratio`, 1 without targets)."""

    configs: dict[str, dict]
    prompts_ratio: float = 1.0

    def summary(self) -> dict:
        return {"stage": "per_accepted_row", "prompts_ratio": round(self.prompts_ratio, 6), "configs": self.configs}

    def render(self) -> list[str]:
        at = "" if self.prompts_ratio == 1.0 else f" (at the targets' final size, x{self.prompts_ratio:.2f} prompts)"
        lines = [f"per accepted row, without caches{at}:"]
        for name, spend in self.configs.items():
            per = spend["per_row"]
            stages = sorted(per["by_stage"].items(), key=lambda kv: -(kv[1]["tokens"] or 0))[:3]
            top = ", ".join(f"{stage} {v['tokens']:.0f}" for stage, v in stages)
            cost = "-" if per["cost_usd"] is None else f"${per['cost_usd']:.6f}"
            toks = "-" if per["tokens"] is None else f"{per['tokens']:.0f}"
            lines.append(f"  {name:16s} ~{spend['rows']:.0f} rows: {toks} tokens, {cost} per row (most tokens: {top})")
        return lines


def plan_row_costs(
    full: dict[str, Spend],
    obs: Observation,
    growable: set[str],
    prompts_ratio: float = 1.0,
    rubric_sets: frozenset[str] = frozenset(),
) -> RowCosts:
    """`full`: stage -> what it sends without caches for the prompts `obs` counts; `prompts_ratio`: the prompts at
    the size planned over those now (the growable sources grown, the others as they are); `rubric_sets`: the sets the
    label stages grade against (pairs, rl and sft rest on them, as assemble counts them)."""
    ratio = 1.0
    now = sum(obs.prompts.values())
    growing = sum(n for (source, _), n in obs.prompts.items() if source in growable)
    if growing and prompts_ratio != 1.0:
        ratio = 1 + (prompts_ratio - 1) * now / growing  # the growable sources' own growth
    configs = {}
    for config in sorted(obs.rows):
        rows = expected_rows(obs, config, ratio, growable)
        kinds = ("rollouts", "steps@") if config == "prm" else ("rollouts", "label@")
        read = set() if config == "prm" else {f"rubrics@{name}" for name in rubric_sets}
        spends = {
            stage: spend_record(scaled_spend(s, prompts_ratio), bound=stage.startswith("steps@"))
            for stage, s in full.items()
            if stage.startswith(kinds) or stage in read
        }
        configs[config] = per_row(spends, round(rows, 3))
    return RowCosts(configs, prompts_ratio)


def scaled_spend(spend: Spend, scale: float) -> Spend:
    return Spend(
        round(spend.requests * scale),
        round(spend.tokens_in * scale),
        round(spend.tokens_out * scale),
        spend.cost * scale,
        set(spend.unpriced),
    )
