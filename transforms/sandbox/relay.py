"""Run a completion and its tests in two sandboxes and relay the calls between them (programs/__init__.py says why).

The relay is the only link: the tests' `C` lines go to the completion's stdin, each line the completion writes goes
to the tests' stdin as `c <line>` (so nothing it writes can pass for the relay's word), and the tests' `R` lines
are the report. The relay decides what the completion cannot be trusted to report: loading that does not answer
within the load allowance, or a call not answered within the per-test limit (plus a grace second), gets its
process killed and the tests told `r {"dead": ..., "timeout": true}`; a completion that exits or sends a line
longer than `MAX_LINE_BYTES` is dead too (`r {"dead": ..., "timeout": false}`); and the whole session has one
wall-clock deadline.
"""

import json
import os
import selectors
import signal
import time
from collections import deque
from dataclasses import dataclass

from rewardmill.transforms.sandbox.runner import Sandbox, SandboxLimits, SandboxResult

MAX_LINE_BYTES = 8 << 20  # one value crossing between the processes
CALL_GRACE_SECONDS = 1.0  # beyond the per-test limit before an unanswered call kills the completion


@dataclass(frozen=True)
class SessionResult:
    reports: list[dict]  # the tests' process's report lines, in order
    candidate: SandboxResult  # how the completion's process ended (its stdout is the protocol: left out)
    tests: SandboxResult
    timed_out: bool  # the session's wall clock ran out
    candidate_killed: str | None  # why the relay killed the completion's process, if it did
    call_timed_out: bool  # it was killed because a call did not return in time


class _Pipe:
    """Bytes read from one process's stdout that do not yet end a line."""

    def __init__(self):
        self.lines = bytearray()


def run_session(
    sandbox: Sandbox,
    candidate_code: str,
    tests_code: str,
    limits: SandboxLimits,
    call_seconds: float,
    load_seconds: float,
) -> SessionResult:
    """Start both programs with `limits` each, relay until the tests finish or the deadline passes, then stop both."""
    candidate = sandbox.spawn(candidate_code, limits)
    try:
        tests = sandbox.spawn(tests_code, limits)
    except BaseException:
        candidate.finish((b"", False), (b"", False), False)
        raise
    relay = _Relay(candidate.proc, tests.proc, limits.max_output_bytes, call_seconds + CALL_GRACE_SECONDS)
    relay.expect(candidate.start, load_seconds + CALL_GRACE_SECONDS)  # the load message, sent unasked
    try:
        relay.run(candidate.start + limits.timeout_seconds)
    finally:
        cand_result = candidate.finish((b"", False), relay.stderr(candidate.proc), relay.timed_out)
        tests_result = tests.finish((b"", False), relay.stderr(tests.proc), relay.timed_out)
    return SessionResult(
        relay.reports, cand_result, tests_result, relay.timed_out, relay.killed, relay.killed_for_timeout
    )


class _Relay:
    def __init__(self, candidate, tests, cap: int, call_seconds: float):
        self.candidate, self.tests = candidate, tests
        self.cap, self.call_seconds = cap, call_seconds
        self.reports: list[dict] = []
        self.timed_out = False
        self.killed: str | None = None
        self.killed_for_timeout = False
        self.dead: dict | None = None  # the notice the tests get once the completion is gone
        self.waiting: deque[tuple[float, float]] = deque()  # (since, allowed seconds) per unanswered message
        self.errs = {candidate.stderr.fileno(): bytearray(), tests.stderr.fileno(): bytearray()}
        self.dropped = dict.fromkeys(self.errs, False)
        self.from_candidate, self.from_tests = _Pipe(), _Pipe()
        self.to_candidate, self.to_tests = candidate.stdin.fileno(), tests.stdin.fileno()
        self.queues = {self.to_candidate: bytearray(), self.to_tests: bytearray()}
        for fd in self.queues:
            os.set_blocking(fd, False)

    def stderr(self, proc) -> tuple[bytes, bool]:
        fd = proc.stderr.fileno()
        return bytes(self.errs[fd]), self.dropped[fd]

    def run(self, deadline: float) -> None:
        sel = selectors.DefaultSelector()
        reading = {
            self.candidate.stdout.fileno(): self._candidate_line,
            self.tests.stdout.fileno(): self._tests_line,
        }
        for fd in (*reading, *self.errs):
            sel.register(fd, selectors.EVENT_READ)
        tests_out = self.tests.stdout.fileno()
        try:
            while tests_out in {k.fd for k in sel.get_map().values()}:
                now = time.monotonic()
                if now >= deadline:
                    self.timed_out = True
                    return
                if self.waiting and now - self.waiting[0][0] > self.waiting[0][1]:
                    self._kill_candidate("the completion did not answer in time", timeout=True)
                self._sync_writers(sel)
                for key, events in sel.select(timeout=min(0.1, deadline - now)):
                    if events & selectors.EVENT_WRITE:
                        self._flush(key.fd)
                    if events & selectors.EVENT_READ:
                        self._read(sel, key.fd, reading)
        finally:
            sel.close()

    def _read(self, sel, fd: int, reading) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if fd in self.errs:
            if not chunk:
                self._unregister_read(sel, fd)
                return
            room = self.cap - len(self.errs[fd])
            self.errs[fd] += chunk[: max(room, 0)]
            self.dropped[fd] |= len(chunk) > room
            return
        pipe = self.from_candidate if fd == self.candidate.stdout.fileno() else self.from_tests
        if not chunk:
            self._unregister_read(sel, fd)
            if pipe is self.from_candidate and self.dead is None:
                self._mark_dead("the completion's process ended", timeout=False)
            return
        pipe.lines += chunk
        while b"\n" in pipe.lines:
            line, _, rest = bytes(pipe.lines).partition(b"\n")
            pipe.lines[:] = rest
            reading[fd](line)
        if len(pipe.lines) > MAX_LINE_BYTES:
            pipe.lines.clear()
            if pipe is self.from_candidate:
                self._kill_candidate(f"the completion sent more than {MAX_LINE_BYTES} bytes in one value", False)

    def _unregister_read(self, sel, fd: int) -> None:
        events = sel.get_key(fd).events & ~selectors.EVENT_READ
        if events:
            sel.modify(fd, events)
        else:
            sel.unregister(fd)

    def expect(self, since: float, seconds: float) -> None:
        self.waiting.append((since, seconds))

    def _candidate_line(self, line: bytes) -> None:
        if self.dead is None:
            if self.waiting:
                self.waiting.popleft()
            self.queues[self.to_tests] += b"c " + line + b"\n"

    def _tests_line(self, line: bytes) -> None:
        kind, _, body = line.partition(b" ")
        if kind == b"R":
            try:
                self.reports.append(json.loads(body))
            except ValueError:
                pass
        elif kind == b"C":
            if self.dead is not None:
                self.queues[self.to_tests] += b"r " + json.dumps(self.dead).encode() + b"\n"
            else:
                self.expect(time.monotonic(), self.call_seconds)
                self.queues[self.to_candidate] += body + b"\n"

    def _kill_candidate(self, why: str, timeout: bool) -> None:
        if self.killed is None:
            self.killed, self.killed_for_timeout = why, timeout
            try:
                os.killpg(self.candidate.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._mark_dead(why, timeout)

    def _mark_dead(self, why: str, timeout: bool) -> None:
        self.dead = {"dead": why, "timeout": timeout}
        self.waiting.clear()
        self.queues[self.to_candidate].clear()
        self.queues[self.to_tests] += b"r " + json.dumps(self.dead).encode() + b"\n"

    def _sync_writers(self, sel) -> None:
        for fd, queue in self.queues.items():
            registered = sel.get_map().get(fd)
            if queue and registered is None:
                sel.register(fd, selectors.EVENT_WRITE)
            elif not queue and registered is not None:
                sel.unregister(fd)

    def _flush(self, fd: int) -> None:
        queue = self.queues[fd]
        try:
            written = os.write(fd, queue)
        except BlockingIOError:
            return
        except OSError:  # the reader is gone
            queue.clear()
            return
        del queue[:written]
