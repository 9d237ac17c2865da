"""How a sandboxed command is wrapped: bubblewrap, `unshare`, or (only when allowed) nothing. Pure command builders.

Every mechanism runs the same in-sandbox bootstrap (`BOOTSTRAP`, programs/bootstrap.py): it drops root to the
sandbox uid, sets the resource limits, then runs the code. RLIMIT_NPROC must be set *inside* the new namespaces: the
kernel counts processes per (user namespace, uid), so a limit set before bwrap creates its namespace would also cap
every other sandbox of the same uid, and a process whose uid is root outside is never held to RLIMIT_NPROC at all.
The other limits are set there too rather than in a `preexec_fn`: a preexec_fn makes subprocess fork() the whole
parent instead of vfork() (~20 ms per run once torch is imported) and is unsafe with threads; nothing untrusted runs
before the bootstrap, so the code is limited from its first instruction either way.

- bwrap (Debian `bubblewrap`): new net, pid, ipc, uts and cgroup namespaces; a root made of read-only binds of
  /usr (+ /bin, /lib... as on the host), a few loader files from /etc and the interpreter's prefix; a size-capped
  tmpfs at /sandbox as the only writable path. As root, bwrap runs privileged and the bootstrap drops to
  `sandbox_uid`; as a normal user, bwrap adds a user namespace.
- unshare (util-linux): new net, pid and mount namespaces (and a user namespace when not root); in the mount
  namespace the whole host is read-only, homes, temp dirs and /run are hidden under empty read-only tmpfs, and
  the run's temp dir is the only writable path (UNSHARE_SETUP). The rest of the host stays readable (bwrap shows
  only /usr, the loader and the interpreter), so it is weaker: used only when asked for (`isolation: unshare` or
  `allow_weaker_sandbox: true`).
- none: no namespaces: the code can reach the network and every file its uid may write. Used only with
  `allow_unisolated_network: true`.
"""

import json
import math
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from rewardmill.transforms.sandbox.programs import bootstrap, source

MECHANISMS = ("bwrap", "unshare", "none")
SANDBOX_DIR = "/sandbox"  # cwd inside bwrap
ENV_PATH = "/usr/local/bin:/usr/bin:/bin"

# argv after `-c BOOTSTRAP`: drop_uid drop_gid ('-' = keep), then the limits (cpu_seconds address_space_bytes
# file_size_bytes open_files processes), then the script, which runs as __main__ once all of them are set.
BOOTSTRAP = source(bootstrap)  # programs/bootstrap.py, run as `python -c BOOTSTRAP`


@dataclass(frozen=True)
class Interpreter:
    """The Python that runs untrusted code, and the directories it needs visible inside the sandbox."""

    executable: str  # what we exec
    dirs: tuple[str, ...]  # prefixes to bind read-only (outside /usr)


@lru_cache(maxsize=8)
def interpreter(python: str, site_packages: bool) -> Interpreter:
    """Ask `python` where it lives. Without site-packages we exec the real binary behind a venv's symlink, so
    only the base prefix (the stdlib) is bound and the project's environment stays out of the sandbox."""
    probe = (
        "import json,os,sys;print(json.dumps([os.path.realpath(sys.executable),"
        "sys.prefix,sys.base_prefix,sys.exec_prefix,sys.base_exec_prefix]))"
    )
    out = subprocess.run(
        [python, "-I", *([] if site_packages else ["-S"]), "-c", probe],  # a venv's sys.prefix is set by site
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": ENV_PATH},
    )
    if out.returncode != 0:
        raise RuntimeError(f"interpreter {python!r} does not run: {out.stderr.strip()[-300:]}")
    real, prefix, base_prefix, exec_prefix, base_exec_prefix = json.loads(out.stdout)
    dirs = {base_prefix, base_exec_prefix, os.path.dirname(os.path.dirname(real))}
    if site_packages:
        dirs |= {prefix, exec_prefix}
    dirs = {os.path.realpath(d) for d in dirs}
    executable = python if site_packages else real
    return Interpreter(executable, tuple(sorted(_outermost(d for d in dirs if not _under(d, "/usr")))))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths) -> list[str]:
    """Drop paths nested in another (binding the parent covers them)."""
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if p != "/" and not any(_under(p, q) for q in out):
            out.append(p)
    return out


def python_args(executable: str, site_packages: bool, drop: tuple[int, int] | None, rlimits, script: str):
    """`rlimits`: (cpu_seconds, address_space_bytes, file_size_bytes, open_files, processes)."""
    flags = ["-I"] if site_packages else ["-I", "-S"]  # -S: stdlib only, the project's venv stays out of reach
    uid, gid = (str(drop[0]), str(drop[1])) if drop else ("-", "-")
    return [executable, *flags, "-B", "-c", BOOTSTRAP, uid, gid, *(str(int(v)) for v in rlimits), script]


def env(home: str) -> dict[str, str]:
    """The whole environment of the sandboxed code: never the parent's (tokens must not leak)."""
    # MALLOC_ARENA_MAX: glibc reserves 64 MiB of address space per thread arena, which RLIMIT_AS would count
    return {
        "PATH": ENV_PATH,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "MALLOC_ARENA_MAX": "2",
    }


def bwrap_command(bwrap: str, interp: Interpreter, staged: dict[str, str], scratch_bytes: int, as_root: bool):
    """bwrap argv up to (not including) the command. `staged` maps in-sandbox file names to host paths."""
    args = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if as_root:
        # privileged bwrap: no user namespace (it would map the sandbox uid back to root, which RLIMIT_NPROC
        # ignores); keep only what the bootstrap needs to drop to the sandbox uid
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    made: set[str] = set()
    for d in interp.dirs:
        for parent in ancestors(d):  # bwrap would create these 0700 root-owned; the sandbox uid must traverse
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", d, d]
    args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--perms", "1777", "--size", str(scratch_bytes), "--tmpfs", SANDBOX_DIR]
    for name, host in staged.items():
        args += ["--ro-bind", host, f"{SANDBOX_DIR}/{name}"]
    args += ["--chdir", SANDBOX_DIR, "--clearenv"]
    for key, value in env(SANDBOX_DIR).items():
        args += ["--setenv", key, value]
    return [*args, "--"]


def ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


UNSHARE_DIR = "/mnt/sandbox"  # the run's temp dir inside unshare's mount namespace (its cwd and only writable path)
# Runs as (namespace) root in unshare's new mount namespace, before the bootstrap: the whole host read-only, the
# places where secrets and scratch live (homes, temp dirs, /run) hidden under empty read-only tmpfs, and the run's
# temp dir bound writable at UNSHARE_DIR. Every step must succeed (set -e), else the run never starts.
UNSHARE_SETUP = f"""set -e
work="$1"; shift
[ -d /mnt ] || {{ echo "unshare sandbox: /mnt is missing (the run's dir is mounted there)" >&2; exit 97; }}
mount --make-rprivate /
mount --rbind / /
for m in $(awk '{{print $2}}' /proc/self/mounts | sort -u); do mount -o remount,bind,ro "$m" 2>/dev/null || true; done
mount -t tmpfs -o size=16k,mode=755 tmpfs /mnt
mkdir {UNSHARE_DIR}
mount --bind "$work" {UNSHARE_DIR}
mount -o remount,bind,rw {UNSHARE_DIR}
for d in /tmp /var/tmp /dev/shm /root /home /run; do
  [ -d "$d" ] && mount -t tmpfs -o ro,size=4k,mode=755 tmpfs "$d"
done
mount -o remount,ro,bind /mnt
cd {UNSHARE_DIR}
unset OLDPWD
exec "$@"
"""


def unshare_command(unshare: str, as_root: bool, work: str) -> list[str]:
    """unshare argv up to (not including) the command: new net, pid and mount namespaces (a user namespace too when
    not root), then UNSHARE_SETUP's mounts around the run's temp dir `work`."""
    user = [] if as_root else ["--user", "--map-root-user"]
    namespaces = ["--mount", "--propagation", "private", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    return [unshare, *user, *namespaces, "--", "/bin/sh", "-c", UNSHARE_SETUP, "sandbox-setup", work]


def hidden_from_others(path: str) -> str | None:
    """The first directory on the way to `path` that other users cannot enter, if any."""
    real = os.path.realpath(path)
    for parent in ancestors(real):
        if not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def rlimit_values(limits) -> tuple[int, int, int, int, int]:
    """(cpu_seconds, address_space_bytes, file_size_bytes, open_files, processes) for the bootstrap to set."""
    cpu = limits.cpu_seconds or math.ceil(limits.timeout_seconds) + 1  # soft: SIGXCPU, hard (+1 s): SIGKILL
    mb = 1 << 20
    return (cpu, limits.memory_mb * mb, limits.max_file_mb * mb, limits.max_open_files, limits.max_processes)
