"""Checks of the policy model: its source can be materialized, and the folder the stages read matches the
fingerprint the model stage recorded (a changed file would silently change every rollout's `policy`)."""

import json
from pathlib import Path

from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, fingerprint, resolve_source


def source_check(source: str) -> Check:
    """params `model.source` resolves to something the model stage can load."""
    try:
        location, gguf = resolve_source(source)
    except (FileNotFoundError, ValueError) as exc:
        return Check("model", FAIL, f"model.source {source}: {exc}", "fix model.source in params.yaml")
    where = f"{location}/{gguf}" if gguf else location
    return Check("model", OK, f"model.source {source} -> {where}")


def folder_check(folder: str) -> Check:
    """The materialized model folder: present, complete, and its files hash to the recorded fingerprint."""
    path = Path(folder)
    if not path.exists():
        return Check("model", WARN, f"{folder}: not built yet", "dvc repro model (writes it from model.source)")
    record = path / FINGERPRINT_FILE
    if not record.exists():
        return Check(
            "model", FAIL, f"{folder}: no {FINGERPRINT_FILE}, so not written by the model stage", "dvc repro -f model"
        )
    if not (path / "config.json").exists():
        return Check("model", FAIL, f"{folder}: no config.json", "dvc repro -f model")
    try:
        recorded = json.loads(record.read_text())["fingerprint"]
        actual = fingerprint(path)
    except (OSError, ValueError, KeyError) as exc:  # unreadable record, or no weights to hash
        return Check("model", FAIL, f"{folder}: {exc}", "dvc repro -f model")
    if actual != recorded:
        return Check(
            "model",
            FAIL,
            f"{folder}: its files hash to {actual[:12]}, the model stage recorded "
            f"{recorded[:12]}: the weights changed after it ran",
            "dvc repro -f model",
        )
    return Check("model", OK, f"{folder}: fingerprint {actual[:12]} matches its record")
