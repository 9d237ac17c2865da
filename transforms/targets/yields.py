"""What a round observed: the prompts per (source, task) and the rows per (dataset config, task), read from the
prompts stage's and assemble's outputs. A config's rate for a task is its rows per prompt of that task: what one more
prompt of the task is expected to add."""

from collections import Counter
from dataclasses import dataclass, field

from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import list_shards, read_table


@dataclass(frozen=True)
class Observation:
    """`prompts`: {(source, task): prompts}; `rows`: {config: {task: rows}} (the split counted, when one is set)."""

    prompts: dict[tuple[str, str], int]
    rows: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self, config: str) -> int:
        return sum(self.rows.get(config, {}).values())

    def prompts_of_task(self, task: str) -> int:
        return sum(n for (_, t), n in self.prompts.items() if t == task)

    def rate(self, config: str, task: str) -> float:
        """Rows of `config` per prompt of `task` (0 when the task has no prompt)."""
        n = self.prompts_of_task(task)
        return self.rows.get(config, {}).get(task, 0) / n if n else 0.0

    def per_source(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for (source, _), n in self.prompts.items():
            counts[source] += n
        return dict(counts)

    def record(self) -> dict:
        """JSON-able: prompts per source and task, rows and rates per config and task."""
        tasks = sorted({t for _, t in self.prompts})
        return {
            "prompts": {f"{s}/{t}": n for (s, t), n in sorted(self.prompts.items())},
            "rows": {c: dict(sorted(by_task.items())) for c, by_task in sorted(self.rows.items())},
            "rates": {c: {t: round(self.rate(c, t), 6) for t in tasks} for c in sorted(self.rows)},
        }


def count_columns(directory: str, columns: list[str], where: str) -> Counter:
    """Rows of a stage output folder by the values of `columns` (only those columns are read)."""
    if not storage.exists(directory):
        raise FileNotFoundError(f"{directory}: not built ({where}); run `dvc repro assemble` first")
    counts: Counter = Counter()
    for path in list_shards(directory):
        table = read_table(path, columns=columns)
        if table.num_rows:
            counts.update(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    return counts


def observe(prompts_dir: str, datasets_dir: str, configs: list[str], split: str | None = None) -> Observation:
    """The prompts at `prompts_dir` and the rows of each of `configs` under `datasets_dir` (only `split`'s, if set)."""
    prompts = count_columns(prompts_dir, ["source", "task"], "prompts")
    rows: dict[str, dict[str, int]] = {}
    for config in configs:
        counts = count_columns(storage.join(datasets_dir, config), ["task", "split"], f"assemble's {config}")
        by_task: Counter[str] = Counter()
        for (task, row_split), n in counts.items():
            if split is None or row_split == split:
                by_task[task] += n
        rows[config] = dict(by_task)
    return Observation(dict(prompts), rows)
