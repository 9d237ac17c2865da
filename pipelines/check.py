"""Stage `check`: every params section loads as its stage reads it, every labeler resolves, inputs exist.

It runs first in `dvc repro`, before any model: a params typo, an unknown labeler (with a did-you-mean) or a missing
prompt file or local model stops the run here with one line, not a stage later or DVC's "No such file" about a
labeler's module. Its output (`{"ok": true}`) has the same bytes whatever valid params say, so a params change
reruns only this check and the stages that read the changed section.
"""

import argparse
import difflib
import json
import os
from pathlib import Path
from typing import Any

from rewardmill.pipelines.settings import all_settings
from rewardmill.transforms.config import from_dict, params_path, read_params
from rewardmill.transforms.errors import UserError

OK = {"ok": True}


class CheckError(UserError):
    """params, a labeler name or an input the run needs is wrong: every problem, in one line."""


def labeler_problem(params: dict[str, Any], stage: str) -> str | None:
    """label@KEY whose `labeler` names nothing registered: the key, the name, the closest known names."""
    from importlib.metadata import entry_points

    from rewardmill.transforms.labelers import ENTRY_POINT_GROUP, LABELERS

    key = stage.partition("@")[2]
    entry = (params.get("labelers") or {}).get(key)
    name = entry.get("labeler") if isinstance(entry, dict) else None
    known = sorted({*LABELERS, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})
    if not isinstance(name, str) or name in known:
        return None
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return (
        f"labelers.{key}.labeler: unknown labeler {name!r} ({hint}known: {', '.join(known)}; a labeler from another "
        "package needs its entry point installed)"
    )


def settings_problems(params: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """Each section and stage that does not load, as `rewardmill stages --params` and the stage itself would say."""
    return [setting_problem(params, name, value) for name, value in settings.items() if isinstance(value, Exception)]


def setting_problem(params: dict[str, Any], name: str, error: Exception) -> str:
    """`name: error`, or for an unknown labeler its params key and the closest registered names."""
    from rewardmill.transforms.labelers import UnknownLabeler

    if isinstance(error, UnknownLabeler) and name.startswith("label@"):
        return labeler_problem(params, name) or f"{name}: {error}"
    return f"{name}: {error}"


def input_problems(params: dict[str, Any], settings: dict[str, Any], model: bool = True) -> list[str]:
    """User-provided inputs a stage would miss after the models ran (or before Beam runs): prompt files, a local
    model source, the benchmarks assemble decontaminates against. A section that does not load is not looked at:
    its problem is already reported. `model=False` leaves model.source to the caller (doctor checks it its own way)."""
    from rewardmill.pipelines.model import ModelConfig, check_source
    from rewardmill.pipelines.prompts import PromptsConfig
    from rewardmill.transforms.sources.registry import check_sources

    checks = {
        "prompts": lambda raw: check_sources(from_dict(PromptsConfig, raw, "prompts").parsed_sources(), ""),
        "model": lambda raw: check_source(from_dict(ModelConfig, raw, "model")),
    }
    if not model:
        checks.pop("model")
    problems = []
    for section, check in checks.items():
        if isinstance(settings.get(section), Exception):
            continue
        try:
            check(params.get(section) or {})
        except (UserError, ValueError) as exc:
            problems.append(str(exc).removeprefix(f"{params_path()}: "))
    if model:
        problems += model_folder_problems(settings)
    if isinstance(settings.get("assemble"), dict):
        files = settings["assemble"]["filters"]["decontaminate"]["files"]
        for i, path in enumerate(files):
            if "://" not in path and not Path(path).exists():
                problems.append(f"assemble.filters.decontaminate.files[{i}]: {path}: no such benchmark file")
    return problems


def local_models(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """(params key, value) of every model params name as a local folder to load: judges' and step methods'
    transformers / vllm backends, a candidate pool's members, evaluate's reward model and base."""
    from rewardmill.transforms.config import mappings

    found = []
    for stage, value in settings.items():
        if isinstance(value, Exception):
            continue
        if "@" in stage:
            for where, block in mappings(value.get("config") or {}, f"{stage}.config"):
                if block.get("kind") in ("transformers", "vllm") and isinstance(block.get("model"), str):
                    found.append((f"{where}.model", block["model"]))
        elif stage == "rollouts":
            for name, member in (value.get("policies") or {}).items():
                backend = member.get("backend") or value.get("backend")
                if backend != "openai" and isinstance(member.get("model"), str):
                    found.append((f"rollouts.policies.{name}.model", member["model"]))
        elif stage == "evaluate":
            for where, name in (
                ("evaluate.reward_model", value.get("reward_model")),
                ("evaluate.train.base", (value.get("train") or {}).get("base")),
            ):
                if isinstance(name, str):
                    found.append((where, name))
    return found


def model_folder_problems(settings: dict[str, Any]) -> list[str]:
    """A local model folder params name that is not there (a DVC output such as models/policy is made by its stage;
    a name of the form org/name is a hub id, which the stage downloads or finds in the cache)."""
    from rewardmill.transforms.doctor.project import dvc_outs
    from rewardmill.transforms.sampling.policy import is_hub_id

    made = {out.rstrip("/") for out in dvc_outs(Path("."))}
    return [
        f"{where}: {name}: no such local model folder (and not a hub id of the form org/name)"
        for where, name in local_models(settings)
        if "://" not in name and name.rstrip("/") not in made and not is_hub_id(name) and not Path(name).exists()
    ]


def rubric_problems(params: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """Labelers graded by a rubric set (`config.rubrics`) that params `rubrics` does not configure."""
    sets = set(params.get("rubrics") or {})
    found = []
    for stage, value in settings.items():
        rubric_set = (
            value.get("config", {}).get("rubrics") if stage.startswith("label@") and isinstance(value, dict) else None
        )
        if isinstance(rubric_set, str) and rubric_set not in sets:
            known = f"params rubrics has {sorted(sets)}" if sets else "params rubrics configures none"
            found.append(f"{stage}: config.rubrics names rubric set {rubric_set!r}, but {known}")
    return found


def problems(params: dict[str, Any]) -> list[str]:
    settings = all_settings(params)
    return settings_problems(params, settings) + input_problems(params, settings) + rubric_problems(params, settings)


def rubric_sets(params: dict[str, Any]) -> dict[str, str]:
    """{rubric set: its mode}, sorted: what the rubrics stages will write (the label stages' dependency)."""
    return {
        name: (entry or {}).get("mode", "reference") for name, entry in sorted((params.get("rubrics") or {}).items())
    }


def write_ok(out: str, record: dict = OK) -> None:
    """`record` as JSON ({"ok": true}), whole or not at all."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="data/check.json", help='where {"ok": true} goes when every check passes')
    parser.add_argument("--rubric-sets", default=None, help="where the configured rubric sets ({name: mode}) go")
    args = parser.parse_args(argv)
    found = problems(read_params())
    if found:
        count = f"{len(found)} problems" if len(found) > 1 else "1 problem"
        raise CheckError(f"{params_path()}: {count}, nothing ran: {'; '.join(found)}")
    write_ok(args.out)
    if args.rubric_sets:
        write_ok(args.rubric_sets, {"rubric_sets": rubric_sets(read_params())})
    print(f"check: {params_path()} loads, every labeler resolves, every input exists")
