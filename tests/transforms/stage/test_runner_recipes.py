"""The recipes in docs/cluster-and-storage.md for runners that cannot run here (Flink, Spark, Dataflow): checked
offline. Their options parse to known Beam options, and the stages' pipeline graphs build for them (nothing is
submitted)."""

import re
import zipfile

import apache_beam as beam
import pytest
import yaml
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.dask.dask_runner import DaskOptions

from rewardmill.pipelines import label, prompts
from rewardmill.transforms.config import from_dict
from rewardmill.transforms.stage.runner import BeamConfig, pipeline_options
from tests.conftest import REPO, only_labelers, tiny_params
from tests.pipelines.test_label_and_assemble import rollouts_dir  # noqa: F401  (the fixture)


def recipes() -> dict[str, dict]:
    """runner -> the `beam` section of each yaml block in "Running on a cluster" (docs/cluster-and-storage.md)."""
    readme = (REPO / "docs/cluster-and-storage.md").read_text()
    section = readme.split("## Running on a cluster", 1)[1].split("\n## ", 1)[0]
    blocks = [yaml.safe_load(b)["beam"] for b in re.findall(r"```yaml\n(.*?)```", section, re.S)]
    return {b["runner"]: b for b in blocks}


def test_the_readme_has_a_recipe_for_each_runner():
    found = recipes()
    assert set(found) == {"DaskRunner", "FlinkRunner", "SparkRunner", "DataflowRunner"}
    options = pipeline_options(from_dict(BeamConfig, found["DaskRunner"], "beam")).view_as(DaskOptions)
    assert options.get_all_options(drop_default=True, current_only=True) == {
        "scheduler_file": "/shared/scheduler.json"
    }


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["FlinkRunner", "SparkRunner", "DataflowRunner"])
def test_a_recipe_parses_and_the_stage_graphs_build(runner, tmp_path, params_file, rollouts_dir, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # the worker wheel goes to .rewardmill/dist/ here
    cfg = from_dict(BeamConfig, recipes()[runner], "beam")
    options = pipeline_options(cfg)
    # the workers get this checkout as a wheel
    (wheel,) = options.get_all_options()["extra_packages"]
    with zipfile.ZipFile(wheel) as zf:
        assert {"rewardmill/transforms/stage/runner.py", "rewardmill/transforms/io/parquet.py"} <= set(zf.namelist())
    known = PipelineOptions(list(cfg.options)).get_all_options(retain_unknown_options=False)
    for flag in cfg.options:  # every flag is an option Beam knows (unknown ones would be silently ignored)
        name = flag.removeprefix("--").split("=", 1)[0]
        assert name in known, f"{runner}: {flag} is not a Beam option"
    params = only_labelers(tiny_params(), ("math_answer",))
    params_file(params)
    cfg_prompts = from_dict(prompts.PromptsConfig, params["prompts"], "prompts")
    built = []
    for name, build in (
        ("prompts", lambda p: prompts.build(p, cfg_prompts, str(tmp_path / "prompts"))),
        (
            "label",
            lambda p: label.build(
                p, "math_answer", label.LabelerParams("math_answer"), str(rollouts_dir), str(tmp_path / "labels")
            ),
        ),
    ):
        p = beam.Pipeline(options=options)
        build(p)
        assert type(p.runner).__name__ == runner
        built.append((name, len(p.to_runner_api().components.transforms)))
    assert all(n > 5 for _, n in built), built
    assert not (tmp_path / "prompts").exists()  # built, never run
