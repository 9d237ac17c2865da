"""transforms/sandbox/runner.py: untrusted code gets no network, no writes outside its temp dir, no parent
secrets, and cannot outlive its timeout (fork bombs, memory bombs and stray children included).

Every security test runs on each isolation mechanism that works on this machine (bwrap, and unshare where an
interpreter the sandbox uid can read exists); a mechanism that is unavailable is skipped, not faked.
"""

import json
import os
import pickle
import random
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest

from rewardmill.transforms.sandbox import runner as sandbox_mod
from rewardmill.transforms.sandbox.isolation import BOOTSTRAP
from rewardmill.transforms.sandbox.runner import Sandbox, SandboxLimits, SandboxUnavailable

REPO = Path(__file__).resolve().parents[3]
FAST = SandboxLimits(timeout_seconds=10)


def working_sandbox(mech: str) -> Sandbox:
    """A sandbox using `mech`, or skip. As root, unshare needs an interpreter the sandbox uid can read."""
    candidates = [Sandbox(isolation=mech)]
    if os.path.exists("/usr/bin/python3"):
        candidates.append(Sandbox(isolation=mech, python="/usr/bin/python3"))
    reasons = []
    for sb in candidates:
        try:
            sb.mechanism()
            return sb
        except SandboxUnavailable as exc:
            reasons.append(str(exc))
    pytest.skip(f"{mech} isolation unavailable here: {reasons}")


@pytest.fixture(scope="module", params=["bwrap", "unshare"])
def sb(request) -> Sandbox:
    return working_sandbox(request.param)


@pytest.fixture(scope="module")
def bwrap() -> Sandbox:
    return working_sandbox("bwrap")


def sandbox_processes(marker: str = BOOTSTRAP) -> list[str]:
    """Command lines of live processes containing `marker` (seen from outside every namespace), except those another
    pytest process started (the other worker's tests under `make test`): this test's, and any left without a parent."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            cmdline = command_line(int(pid))
            if marker.encode() in cmdline and not under_another_pytest(int(pid)):
                found.append(cmdline.replace(b"\0", b" ").decode(errors="replace")[:200])
    return found


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def under_another_pytest(pid: int) -> bool:
    """Whether `pid` descends from a pytest process other than this one (a process of this test meets this one
    first; an orphan, reparented to init, meets none)."""
    while (pid := parent_of(pid)) > 1:
        if pid == os.getpid():
            return False
        if is_pytest(command_line(pid)):
            return True
    return False


def is_pytest(cmdline: bytes) -> bool:
    """pytest's own process or an xdist worker (which retitles itself "[pytest-xdist running] ...")."""
    args = cmdline.split(b"\0")[:2]
    return any(Path(a.decode(errors="replace")).name == "pytest" or a.startswith(b"[pytest-xdist") for a in args)


def test_runs_code_with_stdin_and_records_isolation(sb):
    result = sb.run("import sys\nprint(sys.stdin.read().upper())\nprint('err', file=sys.stderr)", "hello", FAST)
    assert result.ok
    assert (result.exit_code, result.stdout, result.stderr) == (0, "HELLO\n", "err\n")
    assert result.isolation == sb.mechanism() in ("bwrap", "unshare")
    assert not result.timed_out and result.killed_by_signal is None and result.sandbox_error is None
    assert 0 < result.wall_seconds < 10


@pytest.mark.parametrize(
    "code, exit_code, stderr_has",
    [
        ("import sys; sys.exit(3)", 3, ""),  # explicit exit code
        ("1 / 0", 1, "ZeroDivisionError"),  # uncaught exception: traceback on stderr
        ("def f(:\n  pass", 1, "SyntaxError"),  # does not compile
        ("exit(4)", 4, ""),  # site's exit() and quit() exist without site-packages (-S)
        ("print(1)\nquit()\nprint(2)", 0, ""),  # quit() ends the program with status 0
        ("import sys\nassert not [p for p in sys.path if 'site-packages' in p]", 0, ""),  # still no site-packages
    ],
)
def test_exit_codes(sb, code, exit_code, stderr_has):
    result = sb.run(code, "", FAST)
    assert result.exit_code == exit_code and not result.timed_out
    assert stderr_has in result.stderr


def test_code_does_not_run_as_root(sb):
    uid, euid, gid = map(
        int, sb.run("import os; print(os.getuid(), os.geteuid(), os.getgid())", "", FAST).stdout.split()
    )
    assert uid == euid and uid != 0 and gid != 0
    if os.geteuid() == 0:  # as root, each run gets its own unused uid (outside any user namespace)
        first, count = sandbox_mod.RUN_UIDS
        assert first <= uid < first + count


@pytest.mark.slow
def test_parallel_fork_bombs_do_not_starve_a_neighbour(sb):
    # RLIMIT_NPROC counts processes per uid: a neighbour's fork bomb must not use up this run's processes
    from concurrent.futures import ThreadPoolExecutor

    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    threads = "import threading\nts = [threading.Thread(target=print) for _ in range(8)]\n[t.start() for t in ts]\n"
    with ThreadPoolExecutor(2) as pool:
        bombing = pool.submit(sb.run, bomb, "", SandboxLimits(timeout_seconds=3, max_processes=16))
        time.sleep(1)  # the bomb is at its limit by now
        neighbour = sb.run(threads, "", SandboxLimits(timeout_seconds=5, max_processes=16))
        assert bombing.result().timed_out
    assert neighbour.exit_code == 0 and neighbour.stdout == "\n" * 8, neighbour


def test_cannot_connect_to_a_port_the_parent_listens_on(sb):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # reachable from outside the sandbox
        code = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('blocked', type(exc).__name__)\n"
        )
        result = sb.run(code, "", FAST)
    assert result.stdout.startswith("blocked"), result


def test_dns_lookup_fails(sb):
    code = (
        "import socket\n"
        "for host in ('pypi.org', 'example.com'):\n"
        "    try:\n"
        "        print('resolved', socket.getaddrinfo(host, 443))\n"
        "    except OSError as exc:\n"
        "        print('failed', type(exc).__name__)\n"
    )
    result = sb.run(code, "", FAST)
    assert result.stdout.splitlines() == ["failed gaierror", "failed gaierror"], result


def test_only_loopback_network_interface(sb):
    result = sb.run("import socket; print([n for _, n in socket.if_nameindex()])", "", FAST)
    assert result.stdout.strip() in ("['lo']", "[]")


def test_parent_environment_is_not_inherited(sb, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_FAKE_SECRET_do_not_leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-FAKE")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    env = json.loads(sb.run(code, "", FAST).stdout)
    assert "HF_TOKEN" not in env and "OPENAI_API_KEY" not in env
    assert "hf_FAKE_SECRET" not in json.dumps(env)
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PWD", "MALLOC_ARENA_MAX"}


def test_can_write_in_its_own_temp_dir(sb):
    code = "open('out.txt', 'w').write('x' * 1000); import os; print(os.path.getsize('out.txt'))"
    assert sb.run(code, "", FAST).stdout == "1000\n"


@pytest.mark.parametrize(
    "target",
    [
        "/tmp/rewardmill-escape-{tag}",  # the host's world-writable /tmp
        str(REPO / "escape-{tag}"),  # the repository
        "/escape-{tag}",  # the root
        "/usr/escape-{tag}",  # system files
        "/dev/shm/escape-{tag}",  # shared memory
        str(Path(sys.executable).parent / "escape-{tag}"),  # the interpreter's own prefix
        str(REPO / ".rewardmill" / "escape-{tag}"),  # the project's caches
        str(Path.home() / ".cache" / "escape-{tag}"),  # the user's caches
    ],
)
def test_cannot_write_outside_its_temp_dir(sb, target):
    path = target.format(tag=random.randrange(10**9))
    code = (
        f"try:\n    open({path!r}, 'w').write('x')\n    print('wrote')\nexcept OSError as exc:\n    print('denied')\n"
    )
    try:
        assert sb.run(code, "", FAST).stdout == "denied\n"
        assert not os.path.exists(path)
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_secret_files_cannot_be_read(sb):
    """A token under the user's home (where huggingface_hub and others keep theirs) is out of reach."""
    secret = Path.home() / ".cache" / f"rewardmill-test-token-{random.randrange(10**9)}"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("hf_secret_token")
    try:
        code = f"try:\n    print(open({str(secret)!r}).read())\nexcept OSError as exc:\n    print('hidden')\n"
        result = sb.run(code, "", FAST)
        assert result.stdout == "hidden\n" and "hf_secret_token" not in result.stdout + result.stderr
    finally:
        secret.unlink()


def test_root_filesystem_is_read_only_and_minimal(bwrap):
    code = "import os; print(sorted(os.listdir('/')))"
    top = set(json.loads(bwrap.run(code, "", FAST).stdout.replace("'", '"')))
    assert "sandbox" in top and "work" not in top and "home" not in top  # the host's data is not mounted


def test_infinite_loop_is_killed_at_the_timeout(sb):
    start = time.monotonic()
    result = sb.run("while True:\n    pass", "", SandboxLimits(timeout_seconds=1))
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 5
    assert sandbox_processes() == []


@pytest.mark.slow
def test_fork_bomb_is_contained(sb):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = sb.run(bomb, "", SandboxLimits(timeout_seconds=2, max_processes=16))
    assert result.timed_out
    assert sandbox_processes() == []  # every fork died with the run
    assert sb.run("print('still fine')", "", FAST).stdout == "still fine\n"  # and the machine is usable


def test_process_limit_stops_forks(sb):
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 100:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print(n, type(exc).__name__)\n"
    )
    result = sb.run(code, "", SandboxLimits(timeout_seconds=5, max_processes=8))
    forked, error = result.stdout.split()
    assert int(forked) < 8 and error == "BlockingIOError"  # EAGAIN
    assert sandbox_processes() == []


@pytest.mark.parametrize(
    "bomb",
    [
        "x = bytearray(4 << 30)",  # one huge allocation
        "a = []\nwhile True:\n    a.append(bytearray(16 << 20))",  # steady growth
    ],
)
def test_memory_bomb_is_stopped(sb, bomb):
    result = sb.run(bomb, "", SandboxLimits(timeout_seconds=10, memory_mb=256))
    assert not result.timed_out
    assert "MemoryError" in result.stderr or result.killed_by_signal is not None


def test_background_children_do_not_outlive_the_run(sb):
    marker = f"{random.randrange(10**6)}.{random.randrange(10**6)}"  # a unique `sleep` argument
    code = (
        "import os, subprocess\n"
        f"subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"  # detached into its own session
        "if os.fork() == 0:\n"  # a daemon: new session, no stdio, then sleep
        "    os.setsid()\n"
        "    for fd in (0, 1, 2):\n"
        "        os.close(fd)\n"
        f"    os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "print('parent exits')\n"
    )
    result = sb.run(code, "", FAST)
    assert result.stdout == "parent exits\n" and not result.timed_out
    assert sandbox_processes(marker) == []


def test_output_is_capped(sb):
    flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    result = sb.run(flood, "", SandboxLimits(timeout_seconds=1, max_output_bytes=10_000))
    assert result.stdout_truncated and len(result.stdout) == 10_000
    assert result.timed_out


def test_file_size_limit(sb):
    code = "open('big', 'wb').write(b'x' * (3 << 20))"
    result = sb.run(code, "", SandboxLimits(timeout_seconds=10, max_file_mb=1))
    assert result.exit_code == 1 and "File too large" in result.stderr  # Python ignores SIGXFSZ: EFBIG


def test_temp_dir_is_removed(sb, tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_mod.tempfile, "tempdir", str(tmp_path))
    sb.run("open('f', 'w').write('x')", "", FAST)
    assert list(tmp_path.iterdir()) == []


def test_parallel_runs_are_independent(sb):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda i: sb.run(f"print({i} * {i})", "", FAST).stdout, range(8)))
    assert outs == [f"{i * i}\n" for i in range(8)]


def test_unavailable_isolation_refuses_to_run(monkeypatch):
    monkeypatch.setattr(sandbox_mod, "_working", set())
    monkeypatch.setattr(sandbox_mod.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(SandboxUnavailable, match="sandbox unavailable.*bwrap not found.*unshare not found"):
        Sandbox(allow_weaker=True).run("print(1)")


def test_auto_fails_closed_without_bwrap(monkeypatch):
    """Without bwrap, `auto` refuses even where unshare works, and says how to accept it."""
    unshare = working_sandbox("unshare")
    monkeypatch.setattr(sandbox_mod, "_working", set())
    real_which = shutil.which
    monkeypatch.setattr(sandbox_mod.shutil, "which", lambda n, *a, **k: None if n == "bwrap" else real_which(n))
    with pytest.raises(SandboxUnavailable, match=r"bwrap not found.*isolation: unshare.*allow_weaker_sandbox: true"):
        Sandbox(python=unshare.python).run("print(1)")
    weaker = Sandbox(python=unshare.python, allow_weaker=True)
    assert weaker.run("print(1)", "", FAST).isolation == "unshare"


def test_unshare_hides_homes_and_temp_dirs():
    unshare = working_sandbox("unshare")
    code = "import os\nprint(sorted(os.listdir(d) for d in ('/tmp', '/root', '/home', '/var/tmp', '/run')))"
    assert unshare.run(code, "", FAST).stdout == "[[], [], [], [], []]\n"


def test_none_isolation_needs_the_explicit_flag():
    with pytest.raises(ValueError, match="allow_unisolated_network"):
        Sandbox(isolation="none")
    with pytest.raises(ValueError, match="isolation must be"):
        Sandbox(isolation="docker")


def test_unisolated_fallback_is_recorded(monkeypatch):
    # with the flag and no namespace tool, `auto` falls back to `none` and says so in every result
    monkeypatch.setattr(sandbox_mod, "_working", set())
    real_which = shutil.which
    monkeypatch.setattr(
        sandbox_mod.shutil, "which", lambda n, *a, **k: None if n in ("bwrap", "unshare") else real_which(n)
    )
    python = "/usr/bin/python3" if os.geteuid() == 0 and os.path.exists("/usr/bin/python3") else None
    sb = Sandbox(allow_unisolated_network=True, python=python)
    try:
        result = sb.run("print('ran')", "", FAST)
    except SandboxUnavailable as exc:
        pytest.skip(f"no interpreter the sandbox uid can run: {exc}")
    assert (result.stdout, result.isolation) == ("ran\n", "none")


def test_sandbox_pickles(sb):
    copy = pickle.loads(pickle.dumps(sb))
    assert copy.run("print(2 + 2)", "", FAST).stdout == "4\n"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_seconds": 0},  # no time at all
        {"memory_mb": -1},  # negative memory
        {"max_processes": 0},  # not even the code's own process
        {"max_output_bytes": -5},  # negative cap
    ],
)
def test_limits_reject_nonsense(kwargs):
    with pytest.raises(ValueError):
        SandboxLimits(**kwargs)
