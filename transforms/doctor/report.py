"""A check's result, and the report `rewardmill doctor` prints from them."""

from dataclasses import dataclass

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    """One finding. `fix` says what to do (empty when nothing needs doing); `detail` never holds a secret."""

    area: str  # python, packages, params, model, sandbox, offline, disk, accelerator, endpoint, dvc
    status: str  # OK | WARN | FAIL
    detail: str
    fix: str = ""

    def __post_init__(self):
        if self.status not in (OK, WARN, FAIL):
            raise ValueError(f"status must be one of {OK, WARN, FAIL}, got {self.status!r}")


def render(checks: list[Check]) -> str:
    """One line per check (status, area, detail) and the fix indented below it; a closing count."""
    width = max((len(c.area) for c in checks), default=0)
    lines = []
    for check in checks:
        lines.append(f"{check.status:4s}  {check.area:{width}s}  {check.detail}")
        if check.fix and check.status != OK:
            lines.append(f"{'':4s}  {'':{width}s}  fix: {check.fix}")
    counts = {status: sum(c.status == status for c in checks) for status in (OK, WARN, FAIL)}
    verdict = "problems found" if counts[FAIL] else "ready" if not counts[WARN] else "ready, with warnings"
    lines.append(f"{verdict}: {counts[OK]} ok, {counts[WARN]} warnings, {counts[FAIL]} failed")
    return "\n".join(lines)


def exit_status(checks: list[Check]) -> int:
    """1 when any check failed, else 0."""
    return int(any(c.status == FAIL for c in checks))
