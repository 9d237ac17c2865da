"""The project as a wheel for the workers of a remote runner (Flink, Spark, Dataflow): Beam stages it with
`--extra_package` and each worker installs it at start (its dependencies come from the worker image).

The wheel is built from the source checkout rewardmill runs from, once per content of that source: a code change
gives a new wheel, an unchanged tree reuses the one built before.
"""

import hashlib
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]  # the checkout: pyproject.toml beside pipelines/ and transforms/
PACKAGED = ("pyproject.toml", "pipelines", "transforms", "schemas")


def source_digest(root: Path = SOURCE) -> str:
    """sha256 over the packaged files (names and bytes), first 16 hex digits."""
    h = hashlib.sha256()
    for name in PACKAGED:
        path = root / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def worker_wheel(dist: str | Path = ".rewardmill/dist", root: Path = SOURCE) -> Path:
    """The path of a wheel of the project at `root` (built into `dist/<source digest>/` unless already there)."""
    if not (root / "pyproject.toml").exists():
        raise FileNotFoundError(
            f"beam.package: rewardmill runs from {root}, not a source checkout with pyproject.toml; install "
            "rewardmill in the worker image instead and set beam.package: false"
        )
    out = Path(dist).resolve() / source_digest(root)
    wheels = sorted(out.glob("rewardmill-*.whl"))
    if wheels:
        return wheels[-1]
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(out.glob("rewardmill-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise RuntimeError(f"beam.package: building the worker wheel failed: {proc.stderr[-2000:]}")
    return wheels[-1]
