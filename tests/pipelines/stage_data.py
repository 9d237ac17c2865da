"""Helpers that build small stage outputs in tmp_path for driver tests."""

from pathlib import Path

from rewardmill.pipelines import prompts as prompts_stage


def make_prompts(tmp_path: Path, params_file, params: dict) -> Path:
    params_file(params)
    out = tmp_path / "data/prompts"
    prompts_stage.main(["--out", str(out)])
    return out
