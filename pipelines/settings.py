"""Each stage's settings as the stage reads them: its params section through its config dataclass, with every
default filled in (params.yaml lists only what differs from a default, and a labeler's `config: {}` hides them all).

`rewardmill stages --params` prints them; `rewardmill doctor` reports a section that does not load. A section that
does not load is returned as its ConfigError, so one mistake does not hide the other stages' settings.
"""

import importlib
from typing import Any

from rewardmill.transforms.config import ConfigError, cache_root, entry_section, from_dict, read_params, to_plain

# Shared sections every stage reads: name -> (module, dataclass); `cache` has no dataclass (one key).
SHARED = {
    "beam": ("rewardmill.transforms.stage.runner", "BeamConfig"),
    "prices": ("rewardmill.transforms.planning.spend", "Prices"),
}
# Stage -> (module, dataclass) of its params section (the section is named after the stage). label@KEY and steps@KEY
# are per entry: see entry_settings.
STAGE_CONFIGS = {
    "model": ("rewardmill.pipelines.model", "ModelConfig"),
    "prompts": ("rewardmill.pipelines.prompts", "PromptsConfig"),
    "rollouts": ("rewardmill.pipelines.rollouts", "RolloutsConfig"),
    "assemble": ("rewardmill.pipelines.assemble", "AssembleConfig"),
    "evaluate": ("rewardmill.pipelines.evaluate", "EvaluateConfig"),
    "validate": ("rewardmill.pipelines.validate", "ValidateConfig"),
    "export": ("rewardmill.pipelines.export", "ExportConfig"),
}
FOREACH = (
    "rubrics",
    "labelers",
    "steps",
)  # params sections with one DVC stage per entry (rubrics@KEY, label@KEY, ...)


def dataclass_of(where: tuple[str, str]) -> type:
    module, name = where
    return getattr(importlib.import_module(module), name)


def stage_names(params: dict[str, Any]) -> list[str]:
    """Every stage as dvc.yaml names it, in DAG order."""
    return [
        "model",
        "prompts",
        "rollouts",
        *(f"rubrics@{key}" for key in params.get("rubrics") or {}),
        *(f"label@{key}" for key in params.get("labelers") or {}),
        *(f"steps@{key}" for key in params.get("steps") or {}),
        "assemble",
        "evaluate",
        "validate",
        "export",
    ]


def section_settings(params: dict[str, Any], section: str, where: tuple[str, str]) -> dict[str, Any]:
    if section not in params:
        raise ConfigError(f"params.yaml: section '{section}' is missing")
    return to_plain(from_dict(dataclass_of(where), params[section] or {}, section))


def entry_settings(params: dict[str, Any], stage: str) -> dict[str, Any]:
    """label@KEY: the entry with its labeler's Config resolved; steps@KEY: the entry with its StepsConfig."""
    section, key = entry_section(stage)
    entries = params.get(section) or {}
    if key not in entries:
        raise ConfigError(f"params.yaml: '{section}.{key}' is missing")
    where = f"{section}.{key}"
    if section == "rubrics":
        from rewardmill.transforms.rubrics.params import RubricsParams

        return to_plain(from_dict(RubricsParams, entries[key] or {}, where))
    if section == "labelers":
        from rewardmill.pipelines.label import LabelerParams
        from rewardmill.transforms.labelers import get_labeler_class

        entry = from_dict(LabelerParams, entries[key] or {}, where)
        config = from_dict(get_labeler_class(entry.labeler).Config, entry.config, f"{where}.config")
    else:
        from rewardmill.transforms.steps.labeler import StepsConfig
        from rewardmill.transforms.steps.params import StepsParams

        entry = from_dict(StepsParams, entries[key] or {}, where)
        config = from_dict(StepsConfig, entry.config, f"{where}.config")
    return {**to_plain(entry), "config": to_plain(config)}


def stage_settings(params: dict[str, Any], stage: str) -> dict[str, Any]:
    if "@" in stage:
        return entry_settings(params, stage)
    if stage not in STAGE_CONFIGS:
        raise ConfigError(f"unknown stage {stage!r}; stages: {', '.join(stage_names(params))}")
    return section_settings(params, stage, STAGE_CONFIGS[stage])


def all_settings(params: dict[str, Any] | None = None) -> dict[str, dict[str, Any] | Exception]:
    """Shared sections, then every stage in DAG order: its settings, or the error that stops it from loading
    (a ConfigError, or the ValueError a dataclass's own check raises)."""
    params = read_params() if params is None else params
    out: dict[str, dict[str, Any] | Exception] = {}
    for name, where in SHARED.items():
        out[name] = _settled(lambda name=name, where=where: section_settings(params, name, where))
    out["cache"] = {"root": cache_root(params)}
    out["targets"] = _settled(lambda: targets_settings(params))
    for stage in stage_names(params):
        out[stage] = _settled(lambda stage=stage: stage_settings(params, stage))
    return out


def targets_settings(params: dict[str, Any]) -> dict[str, Any]:
    """params `targets` (optional: read by `rewardmill repro` and `rewardmill plan`, no stage)."""
    from rewardmill.transforms.targets.params import TargetsConfig

    return to_plain(from_dict(TargetsConfig, params.get("targets") or {}, "targets"))


def _settled(load) -> dict[str, Any] | Exception:
    try:
        return load()
    except (ConfigError, ValueError, TypeError, KeyError) as exc:  # the stage would fail the same way
        return exc
