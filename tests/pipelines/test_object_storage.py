"""Stages reading and writing s3:// on a real S3-compatible server on localhost (moto's server mode; Beam's S3
filesystem): prompts -> rollouts -> label -> assemble give the same bytes as on local disk, with their caches on the
store too; on the Dask runner as well; and a bad setup fails before any work."""

import re

import pytest

from rewardmill.pipelines import assemble, label, prompts, rollouts
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.stage.runner import load_beam_config
from tests.conftest import only_labelers, s3_beam, tiny_params
from tests.pipelines.test_label_and_assemble import ROLLOUTS

FOLDERS = ("prompts", "rollouts", "labels", "datasets")


@pytest.fixture
def small(params_file, s3_endpoint):
    """Tiny params (math prompts, one rule labeler) whose beam options reach the local S3 server."""
    params = only_labelers(tiny_params(), ("math_answer",))
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]
    params["prompts"]["sources"][0].update(count=4)
    params["rollouts"].update(n=2, max_new_tokens=8, batch_size=4)
    params.pop("steps")
    params["beam"] = {**params.get("beam", {}), **s3_beam(s3_endpoint)}
    params_file(params)
    return params


def run_path(root: str, cache: str, model, stages: tuple[str, ...] = ("prompts", "rollouts", "label", "assemble")):
    """The stages as DVC runs them, every folder under `root` and every cache under `cache`."""
    runs = {
        "prompts": lambda: prompts.main(["--out", f"{root}/prompts"]),
        "rollouts": lambda: rollouts.main(
            ["--prompts", f"{root}/prompts", "--model", str(model), "--out", f"{root}/rollouts"]
            + ["--cache", f"{cache}/rollouts"]
        ),
        "label": lambda: label.main(
            ["math_answer", "--rollouts", f"{root}/rollouts", "--out", f"{root}/labels/math_answer"]
            + ["--cache", f"{cache}/labels"]
        ),
        "assemble": lambda: assemble.main(
            ["--rollouts", f"{root}/rollouts", "--labels", f"{root}/labels", "--steps", f"{root}/steps"]
            + ["--out", f"{root}/datasets"]
        ),
    }
    for stage in stages:
        runs[stage]()


def tree(folder: str) -> dict[str, bytes]:
    return {storage.relative(p, folder): storage.read_bytes(p) for p in storage.files_under(folder)}


def test_the_path_on_s3_writes_the_same_bytes_as_on_local_disk(tmp_path, small, s3_bucket, policy_dir, monkeypatch):
    workdir = tmp_path / "cwd"  # the stages run here: nothing may land in it when every path is s3://
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    local = str(tmp_path / "local")
    run_path(local, str(tmp_path / "cache"), policy_dir)
    run_path(f"{s3_bucket}/data", f"{s3_bucket}/cache", policy_dir)
    for folder in FOLDERS:  # every shard, reject file and manifest: byte-identical
        on_disk, on_s3 = tree(f"{local}/{folder}"), tree(f"{s3_bucket}/data/{folder}")
        assert on_disk and on_s3 == on_disk, folder
    assert {"pairs/_manifest.json", "_rewards/_rejects/part-00000-of-00001.parquet"} <= set(tree(f"{local}/datasets"))
    everything = [storage.relative(p, s3_bucket) for p in storage.files_under(s3_bucket)]
    assert not [p for p in everything if re.search(r"\.tmp-|_scratch|_counts|_records|_not_applicable", p)]
    assert any(p.startswith("cache/rollouts/") for p in everything) and any(
        p.startswith("cache/labels/") for p in everything
    )
    assert list(workdir.iterdir()) == []

    # The caches on the store serve a rerun: nothing is sampled or labeled again (no new segment), same bytes.
    before, cached = tree(f"{s3_bucket}/data"), storage.files_under(f"{s3_bucket}/cache")
    run_path(f"{s3_bucket}/data", f"{s3_bucket}/cache", policy_dir, ("rollouts", "label"))
    assert storage.files_under(f"{s3_bucket}/cache") == cached
    assert tree(f"{s3_bucket}/data") == before


@pytest.mark.cluster
def test_label_and_assemble_on_dask_workers_read_and_write_s3(tmp_path, small, s3_bucket, params_file):
    import dask
    from distributed import LocalCluster

    load_beam_config()  # this process's FileSystems reach the local server (each stage does this when it starts)
    local = tmp_path / "local"
    write_table(rows_to_table(ROLLOUTS, ROLLOUT_V2), str(local / "rollouts/part-00000-of-00001.parquet"))
    write_table(rows_to_table(ROLLOUTS, ROLLOUT_V2), f"{s3_bucket}/rollouts/part-00000-of-00001.parquet")
    small["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)  # every prompt asks the same
    params_file(small)
    label.main(["math_answer", "--rollouts", f"{local}/rollouts", "--out", f"{local}/labels/math_answer"])
    assemble.main(["--rollouts", f"{local}/rollouts", "--labels", f"{local}/labels", "--out", f"{local}/datasets"])
    # Workers start after the credentials are in the environment (they inherit it); the endpoint reaches them
    # through the pipeline's options (transforms/stage/dask_runner._DriverSettings).
    with dask.config.set({"distributed.worker.daemon": False}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster:
        dask_beam = {"runner": "DaskRunner", "dask_client_address": cluster.scheduler_address}
        params_file({**small, "beam": {**small["beam"], **dask_beam}})
        label.main(["math_answer", "--rollouts", f"{s3_bucket}/rollouts", "--out", f"{s3_bucket}/labels/math_answer"])
        assemble.main(
            [
                "--rollouts",
                f"{s3_bucket}/rollouts",
                "--labels",
                f"{s3_bucket}/labels",
                "--out",
                f"{s3_bucket}/datasets",
            ]
        )
    for folder in ("labels", "datasets"):
        on_disk = tree(f"{local}/{folder}")
        assert on_disk and tree(f"{s3_bucket}/{folder}") == on_disk, folder
    assert read_rows(f"{s3_bucket}/datasets/pairs")  # the hand-made rollouts make a pair


def test_an_output_in_a_missing_bucket_fails_before_any_work(tmp_path, small, s3_bucket, policy_dir):
    local = str(tmp_path / "local")
    prompts.main(["--out", f"{local}/prompts"])
    missing = f"{s3_bucket}-missing"
    with pytest.raises(storage.StorageError, match=rf"{missing}/rollouts.tmp-\d+: cannot write there .*NoSuchBucket"):
        rollouts.main(["--prompts", f"{local}/prompts", "--model", str(policy_dir), "--out", f"{missing}/rollouts"])
    with pytest.raises(storage.StorageError, match=rf"{missing}/rollouts: no rollouts there"):
        label.main(["math_answer", "--rollouts", f"{missing}/rollouts", "--out", f"{local}/labels/math_answer"])
