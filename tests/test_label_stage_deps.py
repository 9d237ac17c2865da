"""The label stage's DVC deps cover the code its labelers run: a change to a module a labeler imports (directly, in a
function body, or through another module it imports) must rerun that label stage, or `dvc repro` ships stale labels.
The check follows imports of transforms.labelers and transforms.judges from every labeler params.yaml configures and
from the inner labelers its config names (an appeal's rule, a tier); the registry (the package itself, which imports
every labeler to look one up by name) is not followed: a stage runs only the labelers its params name."""

import yaml

from rewardmill.transforms.labelers.code_digest import closure
from tests.conftest import REPO


def inner_labelers(config) -> set[str]:
    """Registry keys named as `labeler` anywhere in a labeler's config (appeals, tiers, panelists)."""
    if isinstance(config, dict):
        named = {config["labeler"]} if isinstance(config.get("labeler"), str) else set()
        return named.union(*(inner_labelers(v) for v in config.values()))
    if isinstance(config, list):
        return set().union(*(inner_labelers(v) for v in config))
    return set()


def test_every_label_stage_depends_on_the_labeler_code_it_runs():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    deps = dvc["stages"]["label"]["do"]["deps"]
    missing = {}
    for key, entry in params["labelers"].items():
        declared = [REPO / d.replace("${item.labeler}", entry["labeler"]) for d in deps]
        keys = {entry["labeler"], *inner_labelers(entry.get("config") or {})}
        runs = closure(*(REPO / "transforms" / "labelers" / f"{k}.py" for k in sorted(keys)))
        uncovered = sorted(
            str(path.relative_to(REPO))
            for path in runs
            if path.name != "__init__.py" and not any(path == d or d in path.parents for d in declared)
        )
        if uncovered:
            missing[key] = uncovered
    assert not missing, f"label stages miss deps on code they run: {missing}"
