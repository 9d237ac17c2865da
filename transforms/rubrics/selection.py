"""Which prompts a rubrics stage writes rubrics for: those of its tasks and split, the first `max_prompts` by prompt
id (ids are hashes: a fixed pseudo-random sample). The stage and `rewardmill plan` choose the same ones."""

import polars as pl

from rewardmill.transforms.rubrics.params import RubricsParams
from rewardmill.transforms.stage.conservation import id_frame


def chosen_prompts(prompts_dir: str, params: RubricsParams) -> list[str]:
    """The prompt ids, sorted."""
    frame = id_frame(prompts_dir, ["prompt_id", "task", "split"])
    if params.tasks is not None:
        frame = frame.filter(pl.col("task").is_in(list(params.tasks)))
    if params.split is not None:
        frame = frame.filter(pl.col("split") == params.split)
    ids = sorted(frame["prompt_id"].unique().to_list())
    return ids if params.max_prompts is None else ids[: params.max_prompts]
