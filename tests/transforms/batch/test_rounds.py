"""Which backends the label stage's batch pass sends through a batch API: every backend with a `batch:` block, found
wherever the labeler's config holds it, an inner labeler's raw config (a tier, an appeal) included."""

from rewardmill.transforms.batch.rounds import batch_backends
from rewardmill.transforms.labelers.params import LabelerParams, resolve

BATCHED = {"kind": "openai", "model": "judge-model", "base_url": "http://127.0.0.1:1/v1", "batch": {}}


def test_a_batch_backend_inside_an_inner_labelers_config_is_found():
    params = LabelerParams(
        labeler="tiered",
        config={
            "tiers": [
                {"labeler": "format", "name": "syntax"},
                {"labeler": "pointwise_judge", "name": "quality", "config": {"backend": BATCHED}},
            ]
        },
    )
    _, config = resolve("tiered", params)
    (found,) = batch_backends(config)
    assert found.model == "judge-model" and found.batch is not None


def test_no_batch_block_no_batch_pass():
    plain = {key: value for key, value in BATCHED.items() if key != "batch"}
    _, config = resolve("judge", LabelerParams(labeler="pointwise_judge", config={"backend": plain}))
    assert batch_backends(config) == []
    _, config = resolve("judge", LabelerParams(labeler="pointwise_judge", config={"backend": BATCHED}))
    assert [b.model for b in batch_backends(config)] == ["judge-model"]
