"""Where an export came from: the facts the driver gathers, the pure helpers that derive them, and the card section.

In (gathered by pipelines/export.py): the git commit, dvc.lock's stages, the export params hash, the policy's and the
judges' model fingerprints, and the upstream manifests. Out: a `Provenance` value and the card's "Provenance"
markdown. No clock and no absolute paths, so the same inputs give the same card bytes.

dvc.lock records, per stage, the md5 of every output; the card lists each stage upstream of the export (transitively,
through the deps that another stage outputs) with its outputs' md5s, and one sha256 over those entries. The export's
own entry and sibling stages (validate) are left out: they are written after or beside this run, so including them
would make a forced rerun with nothing changed give a different card.
"""

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from rewardmill.transforms.export.markdown import table

DEFAULT_JUDGE_MODEL = "models/policy"  # BackendConfig.model's default: judges run on the materialized policy


@dataclass(frozen=True)
class Provenance:
    """Where an export came from; every value is passed in by the driver. None / empty = not available."""

    params_hash: str  # sha256 of the export params
    git_commit: str | None = None
    model: dict[str, str] | None = None  # the policy: {name, source, fingerprint}
    # a candidate pool (rollouts.policies), instead of `model`: (name, backend, source, fingerprint) per member
    policies: tuple[tuple[str, str, str, str], ...] = ()
    # the environments the episodes ran in (rollouts.environment): (name, version, config JSON as resolved)
    environments: tuple[tuple[str, str, str], ...] = ()
    dvc_lock: str | None = None  # sha256 of the dvc.lock entries of the stages upstream of the export
    stages: tuple[tuple[str, str, str], ...] = ()  # (stage, output path, md5) from dvc.lock, upstream stages only
    judges: tuple[tuple[str, str, str], ...] = ()  # (labeler, model, fingerprint or "") of model-based labelers
    labelers: tuple[tuple[str, str, str], ...] = ()  # (params key, registry key, version) from label manifests
    inputs: dict[str, str] = field(default_factory=dict)  # input name -> sha256 of its files


def upstream_stages(stages: dict[str, Any], inputs: list[str]) -> dict[str, Any]:
    """dvc.lock stages whose outputs overlap `inputs` (paths relative to the lock's folder), and the stages those
    depend on, transitively; sorted by stage name."""
    todo = [os.path.normpath(p) for p in inputs]
    keep: dict[str, Any] = {}
    while todo:
        path = todo.pop()
        for name, stage in sorted(stages.items()):
            outs = [os.path.normpath(o.get("path", "")) for o in stage.get("outs") or []]
            if name not in keep and any(_overlaps(out, path) for out in outs):
                keep[name] = stage
                todo += [os.path.normpath(d.get("path", "")) for d in stage.get("deps") or []]
    return dict(sorted(keep.items()))


def lock_digest(stages: dict[str, Any]) -> str | None:
    """sha256 of the given dvc.lock entries (canonical JSON); None without any."""
    if not stages:
        return None
    text = json.dumps(stages, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def stage_outs(stages: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """(stage, output path, md5) for every output of every stage, sorted; "" when the lock has no md5 for it."""
    rows = []
    for name, stage in stages.items():
        for out in stage.get("outs") or []:
            rows.append((name, str(out.get("path", "")), str(out.get("md5") or out.get("etag") or "")))
    return tuple(sorted(rows))


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + os.sep) or b.startswith(a + os.sep)


def judge_backends(config: dict[str, Any], has_backend: bool) -> list[dict[str, Any]]:
    """Every `backend:` block in a labeler's params config (the panel's and each panelist's), in order of
    appearance, deduplicated; with `has_backend` (the labeler's Config has a `backend` field) and none set at the
    top, the default backend (the policy folder) comes first."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "backend" and isinstance(item, dict):
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(config)
    if has_backend and not isinstance(config.get("backend"), dict):
        found.insert(0, {})
    unique: list[dict[str, Any]] = []
    for backend in found:
        described = {
            "kind": backend.get("kind", "transformers"),
            "model": backend.get("model", DEFAULT_JUDGE_MODEL),
            "base_url": backend.get("base_url"),
        }
        if described not in unique:
            unique.append(described)
    return unique


def describe_backend(backend: dict[str, Any]) -> str:
    """`models/policy` (transformers), `gpt-x` at http://host/v1 (openai), ..."""
    where = f" at {backend['base_url']}" if backend.get("base_url") else ""
    return f"`{backend['model']}`{where} ({backend['kind']})"


def provenance_section(provenance: Provenance, license: str, upstream: dict[str, dict[str, Any]]) -> str:
    """The card's "Provenance" markdown. `upstream` maps each exported config to its upstream manifest."""
    model = provenance.model or {}
    rows = [
        ["git commit", f"`{provenance.git_commit}`" if provenance.git_commit else "not recorded (no git checkout)"],
        ["license", f"`{license}` (params `export.license`)"],
        ["export params sha256", f"`{provenance.params_hash}`"],
    ]
    if model:
        rows.append(["policy", f"`{model.get('name', '')}` from `{model.get('source', '')}`"])
        rows.append(["policy fingerprint", f"`{model.get('fingerprint', '')}`"])
    for name, backend, source, fingerprint in provenance.policies:
        what = "recorded traces (off-policy)" if backend == "recorded" else f"pool policy `{name}`"
        rows.append([what, f"`{source}` ({backend}), fingerprint `{fingerprint}`"])
    for name, version, config in provenance.environments:
        rows.append([f"environment `{name}` version {version}", f"`{config}`"])
    for labeler, described, fingerprint in provenance.judges:
        rows.append([f"judge `{labeler}`", described + (f", fingerprint `{fingerprint}`" if fingerprint else "")])
    # Configs one stage wrote share its params and inputs: one row per distinct value, naming the configs.
    shared: dict[tuple[str, str], list[str]] = {}
    for name, manifest in sorted(upstream.items()):
        if manifest.get("params_hash"):
            shared.setdefault(("upstream params", str(manifest["params_hash"])), []).append(name)
        for input_name, digest in sorted((manifest.get("inputs") or {}).items()):
            shared.setdefault((f"input `{input_name}`", str(digest)), []).append(name)
    for (what, digest), names in sorted(shared.items(), key=lambda item: (item[0][0] != "upstream params", item)):
        rows.append([", ".join(f"`{n}`" for n in names) + f" {what} sha256", f"`{digest}`"])
    for name, digest in sorted(provenance.inputs.items()):
        rows.append([f"input `{name}` sha256", f"`{digest}`"])
    if provenance.dvc_lock:
        rows.append(["dvc.lock sha256 (stages upstream of export)", f"`{provenance.dvc_lock}`"])
    lines = ["## Provenance", "", table(["what", "value"], rows)]
    if provenance.stages:
        lines += [
            "",
            "Stages upstream of the export, from dvc.lock (the md5 DVC records for each output):",
            "",
            table(
                ["stage", "output", "md5"],
                [[f"`{s}`", f"`{p}`", f"`{m}`" if m else "-"] for s, p, m in provenance.stages],
            ),
        ]
    rebuild = "`dvc repro export`"
    if provenance.git_commit:
        rebuild = f"`git checkout {provenance.git_commit}` then {rebuild}"
    return "\n".join([*lines, "", f"Rebuild with {rebuild}."])
