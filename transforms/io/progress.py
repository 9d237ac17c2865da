"""Progress for long loops: counts, rate and ETA, formatted by tqdm.

On a terminal it is a live tqdm bar on stderr. Off a terminal (CI, `dvc repro > log`, a cluster worker) it is a log
line at most every `every` seconds and one at the end, so a log file stays readable instead of filling with carriage
returns. REWARDMILL_PROGRESS=log|bar|off overrides the choice.
"""

import logging
import os
import sys
import time

from tqdm import tqdm

log = logging.getLogger("rewardmill")
MODE_ENV = "REWARDMILL_PROGRESS"
LOG_FORMAT_TOTAL = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
LOG_FORMAT = "{desc}: {n_fmt} [{elapsed}, {rate_fmt}{postfix}]"


def mode(stream=None) -> str:
    """bar on a terminal, else log; REWARDMILL_PROGRESS=log|bar|off overrides."""
    chosen = os.environ.get(MODE_ENV, "").strip().lower()
    if chosen in ("log", "bar", "off"):
        return chosen
    stream = stream if stream is not None else sys.stderr
    return "bar" if getattr(stream, "isatty", lambda: False)() else "log"


class Progress:
    """Counts, rate and ETA of `what` (e.g. "steps@mc: rollouts"); `total` None when unknown (no ETA then)."""

    def __init__(self, what: str, total: int | None, every: float = 10.0, unit: str = "it"):
        self.what, self.total, self.every, self.unit = what, total or None, every, unit
        self.start = self.last = time.monotonic()
        self.done = 0
        self.tokens = 0
        self.mode = mode()
        self.bar = None
        if self.mode == "bar":
            self.bar = tqdm(total=self.total, desc=what, unit=unit, file=sys.stderr, mininterval=1.0, leave=True)

    def update(self, n: int, tokens: int = 0) -> None:
        self.done += n
        self.tokens += tokens
        now = time.monotonic()
        if self.bar is not None:
            if self.tokens:
                self.bar.set_postfix_str(f"{self.tokens / max(now - self.start, 1e-9):.0f} tok/s", refresh=False)
            self.bar.update(n)
            if self.total and self.done >= self.total:
                self.bar.close()
            return
        finished = self.total is not None and self.done >= self.total
        if self.mode == "log" and (now - self.last >= self.every or finished):
            self.last = now
            log.info("%s", self.line(now))

    def line(self, now: float | None = None) -> str:
        """The log line: done/total, share, elapsed<remaining, rate (and tokens/s when counted)."""
        elapsed = (now if now is not None else time.monotonic()) - self.start
        postfix = f"{self.tokens / max(elapsed, 1e-9):.0f} tok/s" if self.tokens else ""  # tqdm adds the ", "
        return tqdm.format_meter(
            self.done,
            self.total,
            elapsed,
            prefix=self.what,
            unit=self.unit,
            postfix=postfix,
            bar_format=LOG_FORMAT_TOTAL if self.total else LOG_FORMAT,
        )
