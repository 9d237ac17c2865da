"""Run untrusted Python in an isolated subprocess and report what happened. Used by the code verifiers.

Each run gets a fresh temp dir, an empty environment (PATH/LANG/HOME only: the parent's tokens never leak),
`python -I` (isolated mode; `-S` too unless site-packages are asked for), resource limits set before the code's
first line (CPU seconds, address space, processes, file size, open files; no core dumps — see BOOTSTRAP in
isolation.py for why not in a preexec_fn), a wall-clock timeout after which the whole process group is
SIGKILLed, capped stdout/stderr capture, and no network: new namespaces through bubblewrap, else
`unshare` (isolation.py says what each gives). `auto` fails closed: without bwrap it refuses unless
`allow_weaker=True` (then unshare) or `allow_unisolated_network=True` (then unshare, else no namespaces at all).
The mechanism is probed once per process (including that the sandbox sees no network interface but loopback) and
recorded in every result. When none is allowed and works, runs raise `SandboxUnavailable`. Run as root, the
code itself never runs as root: each run gets an unused high uid of its own
(or the configured `sandbox_uid`), so RLIMIT_NPROC, which the kernel counts per uid, holds one run's processes
only: a fork bomb in one run cannot starve parallel runs, nor be starved by other users' (e.g. nobody's) processes.
"""

import json
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rewardmill.transforms.sandbox import isolation as iso
from rewardmill.transforms.sandbox.programs import probe, source

EXIT_GRACE_SECONDS = 0.5  # after the main process exits, how long stray children may keep its pipes open
# (first, count): per-run uids, far above login accounts (< 65536) and the usual /etc/subuid ranges
RUN_UIDS = (1_900_000_000, 1 << 20)
KILL_WAIT_SECONDS = 2.0  # after the kill, how long to wait for the sandbox's processes to be gone
PROBE = source(probe)  # programs/probe.py: prints the network interfaces the sandbox sees


class SandboxUnavailable(RuntimeError):
    """No isolation mechanism works here (and unisolated runs were not allowed)."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_seconds: float = 10.0  # wall clock for the whole run; then the process group is killed
    cpu_seconds: int | None = None  # RLIMIT_CPU per process; None = the timeout rounded up, plus 1
    memory_mb: int = 512  # RLIMIT_AS (address space) per process
    max_processes: int = 32  # RLIMIT_NPROC: processes + threads of the sandbox uid (fork bombs stop here)
    max_file_mb: int = 16  # RLIMIT_FSIZE: largest file the code may write
    max_open_files: int = 64  # RLIMIT_NOFILE
    max_output_bytes: int = 65536  # stdout and stderr each keep this much; the rest is read and dropped
    scratch_mb: int = 64  # size of the writable tmpfs at /sandbox (bwrap only)

    def __post_init__(self):
        for name in ("timeout_seconds", "memory_mb", "max_processes", "max_file_mb", "max_open_files"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.max_output_bytes < 0 or self.scratch_mb <= 0:
            raise ValueError("max_output_bytes must be >= 0 and scratch_mb > 0")


@dataclass(frozen=True)
class SandboxResult:
    exit_code: int | None  # None when killed by a signal
    stdout: str
    stderr: str
    timed_out: bool  # hit the wall-clock timeout (and was killed)
    killed_by_signal: int | None  # e.g. 9 (timeout kill), 24 (SIGXCPU: CPU limit), 25 (SIGXFSZ: file size)
    isolation: str  # bwrap | unshare | none
    wall_seconds: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    sandbox_error: str | None = None  # the sandbox itself failed to start: the code never ran

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.sandbox_error is None


@dataclass
class Sandbox:
    """Runs code; plain settings only, so it pickles. Thread-safe: one process per `run`."""

    isolation: str = "auto"  # auto (bwrap; unshare only if allowed) | bwrap | unshare | none
    allow_unisolated_network: bool = False  # let `auto` fall back to (or `none` select) no namespaces at all
    python: str | None = None  # interpreter for the code; None = the one running rewardmill
    site_packages: bool = False  # False: stdlib only (-S), the project's environment is not visible
    sandbox_uid: int | None = None  # as root, the code runs as this uid; None = a fresh one per run (RUN_UIDS)
    sandbox_gid: int | None = None  # None = the same number as the uid
    allow_weaker: bool = False  # let `auto` fall back to unshare (the host filesystem readable) without bwrap
    _mechanism: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.isolation not in ("auto", *iso.MECHANISMS):
            raise ValueError(f"isolation must be auto or one of {iso.MECHANISMS}, got {self.isolation!r}")
        if self.isolation == "none" and not self.allow_unisolated_network:
            raise ValueError("isolation 'none' runs code with network access: set allow_unisolated_network: true")

    def mechanism(self) -> str:
        """The isolation this sandbox uses (probed once per process); raises SandboxUnavailable."""
        if self._mechanism is None:
            order = [self.isolation]
            if self.isolation == "auto":  # fail closed: nothing weaker than bwrap unless asked for
                order = ["bwrap"] + (["unshare"] if self.allow_weaker or self.allow_unisolated_network else [])
                order += ["none"] if self.allow_unisolated_network else []
            reasons = []
            for mech in order:
                reason = _probe(self, mech)
                if reason is None:
                    self._mechanism = mech
                    break
                reasons.append(f"{mech}: {reason}")
            else:
                hint = ""
                if order == ["bwrap"]:
                    hint = (
                        "; install bubblewrap (apt-get install bubblewrap), or accept unshare (no network, the host "
                        "read-only with homes and temp dirs hidden, the rest of it readable) with `isolation: "
                        "unshare` or `allow_weaker_sandbox: true`"
                    )
                raise SandboxUnavailable("sandbox unavailable (" + "; ".join(reasons) + ")" + hint)
        return self._mechanism

    def __getstate__(self):  # a copy on another machine probes its own isolation
        return {**self.__dict__, "_mechanism": None}

    def run(self, code: str, stdin: str = "", limits: SandboxLimits | None = None) -> SandboxResult:
        """Run `code` as __main__ with `stdin` as its standard input."""
        return _execute(self, self.mechanism(), code, stdin, limits or SandboxLimits())

    def spawn(self, code: str, limits: SandboxLimits | None = None) -> "SandboxProcess":
        """Start `code` as __main__ with pipes on stdin, stdout and stderr, for a caller that talks to it (see
        relay.py); the caller reads the pipes and then calls `finish` on it."""
        return SandboxProcess(self, self.mechanism(), code, limits or SandboxLimits(), None)


_random = random.SystemRandom()
_probe_lock = threading.Lock()
_working: set[tuple] = set()  # (mechanism, settings) known to work in this process


def _probe(sb: Sandbox, mech: str) -> str | None:
    """None when `mech` runs code here (with an isolated network where it promises one), else why not."""
    key = (mech, sb.python, sb.site_packages, sb.sandbox_uid, sb.sandbox_gid, os.geteuid())
    with _probe_lock:
        if key in _working:
            return None
        reason = _try(sb, mech)
        if reason is None:  # only successes are kept: a failure (maybe transient) is probed again next time
            _working.add(key)
        return reason


def _try(sb: Sandbox, mech: str) -> str | None:
    for tool in {"bwrap": ("bwrap",), "unshare": ("unshare", "mount")}.get(mech, ()):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH"
    try:
        result = _execute(sb, mech, PROBE, "", SandboxLimits(timeout_seconds=20))
    except Exception as exc:  # interpreter missing, spawn failure, ...
        return f"{type(exc).__name__}: {exc}"[:300]
    if not result.ok:
        reason = (result.sandbox_error or result.stderr.strip()[-300:] or f"exit {result.exit_code}").strip()
        if mech != "bwrap" and os.geteuid() == 0:
            hidden = iso.hidden_from_others(iso.interpreter(sb.python or sys.executable, sb.site_packages).executable)
            if hidden:
                reason = (
                    f"{hidden} cannot be entered by the unprivileged uid that runs the code here; set `python` to "
                    f"an interpreter other users can read (e.g. /usr/bin/python3). {reason}"
                )
        return reason
    if mech != "none" and result.stdout.strip() not in ("['lo']", "[]"):
        return f"network not isolated: interfaces {result.stdout.strip()}"
    return None


def _run_ids(sb: Sandbox) -> tuple[int, int]:
    """(uid, gid) for one run as root: the configured ones, else a random uid from RUN_UIDS (no account has it)."""
    uid = sb.sandbox_uid if sb.sandbox_uid is not None else RUN_UIDS[0] + _random.randrange(RUN_UIDS[1])
    return uid, sb.sandbox_gid if sb.sandbox_gid is not None else uid


class SandboxProcess:
    """A started sandboxed process with pipes (`proc.stdin` only when started interactive). `finish` kills what
    is left of it, removes its temp dir and says how it ended; call it exactly once."""

    def __init__(self, sb: Sandbox, mech: str, code: str, limits: SandboxLimits, stdin: str | None):
        self.mech, self.limits = mech, limits
        as_root = os.geteuid() == 0
        drop = _run_ids(sb) if as_root else None
        interp = iso.interpreter(sb.python or sys.executable, sb.site_packages)
        self.work = Path(tempfile.mkdtemp(prefix="rewardmill-sbx-"))
        self.status_r = status_w = None
        try:
            (self.work / "main.py").write_text(code, encoding="utf-8", errors="surrogateescape")
            os.chmod(self.work / "main.py", 0o644)
            if as_root:  # outside bwrap the temp dir is the code's cwd: the sandbox uid must be able to write it
                os.chown(self.work, *drop)
            py = iso.python_args(interp.executable, sb.site_packages, drop, iso.rlimit_values(limits), "main.py")
            pass_fds: tuple[int, ...] = ()
            if mech == "bwrap":
                self.status_r, status_w = os.pipe()  # bwrap reports {"child-pid"} here once the sandbox is set up
                staged = {"main.py": str(self.work / "main.py")}
                scratch = limits.scratch_mb << 20
                cmd = [*iso.bwrap_command(shutil.which("bwrap"), interp, staged, scratch, as_root), *py]
                cmd[1:1] = ["--json-status-fd", str(status_w)]
                pass_fds = (status_w,)
            elif mech == "unshare":
                cmd = [*iso.unshare_command(shutil.which("unshare"), as_root, str(self.work)), *py]
            else:
                cmd = py
            self.start = time.monotonic()
            if stdin is None:
                stdin_source = subprocess.PIPE
            else:  # a file, not a pipe: a run that never reads its input cannot block the parent
                (self.work / "stdin").write_text(stdin, encoding="utf-8", errors="surrogateescape")
                stdin_source = open(self.work / "stdin", "rb")  # noqa: SIM115 (closed right after the start)
            try:
                self.proc = subprocess.Popen(
                    cmd,
                    stdin=stdin_source,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=self.work,
                    env=iso.env(iso.UNSHARE_DIR if mech == "unshare" else str(self.work)),
                    start_new_session=True,  # its own process group, killed as a whole
                    close_fds=True,
                    pass_fds=pass_fds,
                )
            finally:
                if stdin is not None:
                    stdin_source.close()
        except BaseException:
            self._cleanup()
            raise
        finally:
            if status_w is not None:
                os.close(status_w)

    def finish(self, out: tuple[bytes, bool], err: tuple[bytes, bool], timed_out: bool) -> SandboxResult:
        """Kill the group, reap it, and build the result from what the caller read from stdout/stderr."""
        try:
            if self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
            _kill_group(self.proc)
            wall = time.monotonic() - self.start
            started = True
            if self.status_r is not None:
                child = _bwrap_child(self.status_r)
                started = child is not None
                if child is not None:
                    _wait_gone(child, time.monotonic() + KILL_WAIT_SECONDS)
            cap = self.limits.max_output_bytes
            return _result(self.mech, self.proc.returncode, out, err, timed_out, wall, started, cap)
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self.status_r is not None:
            os.close(self.status_r)
            self.status_r = None
        shutil.rmtree(self.work, ignore_errors=True)


def _execute(sb: Sandbox, mech: str, code: str, stdin: str, limits: SandboxLimits) -> SandboxResult:
    run = SandboxProcess(sb, mech, code, limits, stdin)
    try:
        out, err, timed_out = _collect(run.proc, run.start + limits.timeout_seconds, limits.max_output_bytes)
    except BaseException:
        run.finish((b"", False), (b"", False), False)
        raise
    return run.finish(out, err, timed_out)


def _collect(proc, deadline: float, cap: int):
    """Read stdout/stderr until both close, the deadline passes, or the main process has exited a while."""
    bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    dropped = dict.fromkeys(bufs, False)
    sel = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        sel.register(pipe, selectors.EVENT_READ)
    timed_out, exited_at = False, None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                exited_at = now  # not reaped yet (WNOWAIT), so its process group id stays valid for killpg
            if exited_at is not None and now - exited_at > EXIT_GRACE_SECONDS:
                break  # a stray child holds the pipes; it is killed with the group
            for key, _ in sel.select(timeout=min(0.1, deadline - now)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                room = cap - len(bufs[key.fd])
                bufs[key.fd] += chunk[: max(room, 0)]
                dropped[key.fd] |= len(chunk) > room
    finally:
        sel.close()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    return (bytes(bufs[out_fd]), dropped[out_fd]), (bytes(bufs[err_fd]), dropped[err_fd]), timed_out


def _kill_group(proc) -> None:
    """SIGKILL the group, reap the leader, then wait (bounded) until every process holding the output pipes is
    gone: a killed bwrap tears its pid namespace down asynchronously, and the run must not return before."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    sel = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        sel.register(pipe, selectors.EVENT_READ)
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    try:
        while sel.get_map() and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.05):
                if not os.read(key.fd, 1 << 16):
                    sel.unregister(key.fileobj)
    finally:
        sel.close()
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()


def _bwrap_child(fd: int) -> int | None:
    """The host pid of the sandbox's first process, which bwrap reports once the namespaces and mounts are set up
    (None: it never started)."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    data = b""
    try:
        while sel.select(timeout=0.5):
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        sel.close()
    for line in data.decode(errors="replace").splitlines():
        try:
            status = json.loads(line)
        except ValueError:
            continue
        if isinstance(status, dict) and isinstance(status.get("child-pid"), int):
            return status["child-pid"]
    return None


def _wait_gone(pid: int, deadline: float) -> None:
    """Wait (bounded) until the pid namespace's first process is dead: the kernel empties the namespace before
    that process finishes exiting, so daemons the code left behind are gone too."""
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def _result(mech, rc, out, err, timed_out, wall, started, cap) -> SandboxResult:
    (out_b, out_t), (err_b, err_t) = out, err
    stderr = err_b.decode("utf-8", "replace")
    signum = -rc if rc < 0 else None
    if mech in ("bwrap", "unshare") and 128 < rc <= 128 + 64:
        signum = rc - 128  # these tools report a signalled child as 128 + signal, like a shell
    sandbox_error = None
    if not started and not timed_out:
        sandbox_error = "bwrap failed to set up the sandbox: " + (stderr.strip()[-300:] or f"exit {rc}")
    return SandboxResult(
        exit_code=None if signum else rc,
        stdout=out_b.decode("utf-8", "replace"),
        stderr=stderr,
        timed_out=timed_out,
        killed_by_signal=signum,
        isolation=mech,
        wall_seconds=round(wall, 4),
        stdout_truncated=out_t,
        stderr_truncated=err_t,
        sandbox_error=sandbox_error,
    )


def describe(result: SandboxResult) -> str:
    """One line for rationales: how the run ended."""
    if result.sandbox_error:
        return f"sandbox: {result.sandbox_error}"
    if result.timed_out:
        return f"timed out after {result.wall_seconds:.1f}s"
    if result.killed_by_signal:
        return f"killed by {signal_name(result.killed_by_signal)}"
    return f"exit {result.exit_code}"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
