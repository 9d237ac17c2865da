"""Scores that depend on the whole run: a labeler with `normalize_run(frame, config) -> frame` (a reward model's
z-scored logits) rewrites its label shards once every label exists. The frame holds LABEL_V1 columns; the hook may
change values, never rows or their order, so shard names and sort order stay as the stage wrote them."""

import polars as pl

from rewardmill.schemas import LABEL_V1
from rewardmill.transforms.io.frames import frame_to_table
from rewardmill.transforms.io.parquet import list_shards, read_table, write_table
from rewardmill.transforms.labelers.contract import RunNormalizingLabeler, has_hook


def normalize_output(directory: str, labeler_cls, config) -> bool:
    """Apply the labeler's `normalize_run` (RunNormalizingLabeler) to the label shards in `directory` (local or a
    FileSystems URL); False when it has none."""
    if not has_hook(labeler_cls, RunNormalizingLabeler):
        return False
    paths = list_shards(directory)
    frames = [pl.from_arrow(read_table(path, LABEL_V1)) for path in paths]
    if not frames:
        return True
    before = pl.concat(frames)
    whole = labeler_cls.normalize_run(before, config)
    if whole["rollout_id"].to_list() != before["rollout_id"].to_list():
        raise ValueError(f"{labeler_cls.__name__}.normalize_run changed the rows; it may change values only")
    offset = 0
    for path, frame in zip(paths, frames, strict=True):
        write_table(frame_to_table(whole.slice(offset, frame.height), LABEL_V1), path)
        offset += frame.height
    return True
