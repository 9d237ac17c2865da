"""Progress for long loops: counts, rate and ETA, logged at most every few seconds."""

import logging
import time

log = logging.getLogger("rewardmill")


class Progress:
    """Counts, rate and ETA for long loops, logged at most every `every` seconds."""

    def __init__(self, what: str, total: int | None, every: float = 10.0):
        self.what, self.total, self.every = what, total, every
        self.start = self.last = time.monotonic()
        self.done = 0
        self.tokens = 0

    def update(self, n: int, tokens: int = 0) -> None:
        self.done += n
        self.tokens += tokens
        now = time.monotonic()
        if now - self.last >= self.every or (self.total and self.done >= self.total):
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            eta = f", ETA {(self.total - self.done) / rate:.0f}s" if self.total and rate > 0 else ""
            of = f"/{self.total}" if self.total else ""
            tok = f", {self.tokens / max(now - self.start, 1e-9):.0f} tok/s" if self.tokens else ""
            log.info("%s: %d%s (%.2f/s%s%s)", self.what, self.done, of, rate, tok, eta)
