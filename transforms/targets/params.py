"""params `targets`: the rows a run must end with, per dataset config, and how the rounds may grow."""

from dataclasses import dataclass

CONFIGS = ("pairs", "rl", "sft", "prm")  # the data/datasets configs a target may name
SPLITS = ("train", "test")


@dataclass(frozen=True)
class TargetsConfig:
    # At least this many rows in data/datasets/<config> (null = no target). Any target set makes `rewardmill repro`
    # run in rounds: it grows the prompt sources (their count / limit) until every target is met.
    pairs: int | None = None
    rl: int | None = None
    sft: int | None = None
    prm: int | None = None
    split: str | None = None  # count only this split's rows (train | test); null = both
    max_rounds: int = 5  # the first round is the params as they are
    margin: float = 0.1  # ask for this share more than the observed rates predict, so one more round is rarely needed
    max_growth: float = 4.0  # a round grows the sources at most this many times (rates seen on few rows are noisy)
    # Rows per prompt to assume when no dataset is built yet ({pairs: 1.5, ...}): what `rewardmill plan` predicts
    # the rounds from before the first round (none = the plan waits for a built dataset to predict them).
    assumed_yield: dict | None = None

    def __post_init__(self):
        for name in CONFIGS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be an int >= 1 or null, got {value!r}")
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS} or null, got {self.split!r}")
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.margin < 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")
        if self.max_growth <= 1:
            raise ValueError(f"max_growth must be > 1, got {self.max_growth}")
        unknown = sorted(set(self.assumed_yield or {}) - set(CONFIGS))
        if unknown:
            raise ValueError(f"assumed_yield: unknown configs {unknown}; known: {list(CONFIGS)}")
        for name, value in (self.assumed_yield or {}).items():
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"assumed_yield.{name} must be a number >= 0, got {value!r}")

    @property
    def wanted(self) -> dict[str, int]:
        """{config: rows} of the targets set."""
        return {name: getattr(self, name) for name in CONFIGS if getattr(self, name) is not None}
