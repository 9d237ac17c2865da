"""assemble's prm/ output: PRM_V1 rows from hand-made rollouts and step labels of two steps labelers (no model)."""

import hashlib
import json
import pickle
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rewardmill.pipelines import assemble
from rewardmill.schemas import LABEL_V1, PRM_V1, REJECT_V1, ROLLOUT_V2, STEP_LABEL_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.aggregate.prm import REJECTED, MakePrmRows
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.io.parquet import read_rows, read_table, rows_to_table, write_table
from rewardmill.transforms.stage.outputs import count_rejects
from rewardmill.transforms.steps.segment import segment
from tests.conftest import only_labelers, tiny_params

MSG = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is x + x?"}]

T, F, U = True, False, None  # decided right, decided wrong, undecided


def rollout(rollout_id: str, prompt_id: str, completion: str, split: str) -> dict:
    return {
        "rollout_id": rollout_id,
        "prompt_id": prompt_id,
        "task": "math",
        "messages": MSG,
        "reference": "4",
        "tests": None,
        "constraints": None,
        "rubric": None,
        "split": split,
        "sample_index": int(rollout_id[-1]),
        "completion": completion,
        "n_tokens": len(completion),
        "finish_reason": "stop",
        "logprob_sum": -1.0,
        "policy": {"name": "m", "fingerprint": "f", "backend": "transformers"},
        "sampling": "{}",
        "seed": 0,
    }


ROLLOUTS = [
    rollout("p1-r0", "p1", "2 + 2 = 4.\n\nThe answer is \\boxed{4}.", "train"),
    rollout("p1-r1", "p1", "2 + 2 = 5.\n\nThe answer is \\boxed{5}.", "train"),
    rollout("p2-r0", "p2", "3 + 3 = 6.\n\nCheck: 6 - 3 = 3.\n\n\\boxed{6}", "test"),
    rollout("p2-r1", "p2", "\\boxed{7}", "test"),  # no steps labeler labels it: no PRM row, no reject
]
COMPLETIONS = {r["rollout_id"]: r["completion"] for r in ROLLOUTS}
SCORES = {"p1-r0": 1.0, "p1-r1": 0.0, "p2-r0": 1.0, "p2-r1": 0.0}


def label(rollout_id: str, score: float) -> dict:
    return {
        "rollout_id": rollout_id,
        "prompt_id": rollout_id.split("-")[0],
        "labeler": "math_answer",
        "labeler_version": "1",
        "aspect": "correctness",
        "score": score,
        "confidence": 1.0,
        "verdict": "correct" if score else "incorrect",
        "rationale": None,
        "raw": None,
    }


def step_labels(
    labeler: str, rollout_id: str, hard: list[bool | None], soft: list[float | None] | None = None, **kw
) -> list[dict]:
    """STEP_LABEL_V1 rows for every paragraph of the rollout's completion ("ghost" rollouts get made-up text)."""
    completion = COMPLETIONS.get(rollout_id, "a.\n\nb.")
    steps = segment(completion)
    soft = soft if soft is not None else [None] * len(hard)
    first_error = next((i for i, h in enumerate(hard) if h is False), -1)
    return [
        {
            "rollout_id": rollout_id,
            "prompt_id": rollout_id.split("-")[0],
            "labeler": labeler,
            "labeler_version": "1",
            "step_index": step.index,
            "n_steps": len(steps),
            "step_text": step.text,
            "char_start": step.start,
            "char_end": step.end,
            "score": s,
            "hard_label": h,
            "method": "mc" if labeler == "mc_steps" else "judge",
            "n_continuations": 8 if labeler == "mc_steps" else 0,
            "first_error_step": first_error,
            "raw": None,
            **kw,
        }
        for step, h, s in zip(steps, hard, soft, strict=True)
    ]


def inconsistent(rows: list[dict]) -> list[dict]:
    """The last step label claims one more step than the others."""
    return [*rows[:-1], {**rows[-1], "n_steps": rows[-1]["n_steps"] + 1}]


STEP_LABELS = {
    "mc_steps": [
        *step_labels("mc_steps", "p1-r0", [T, T], [1.0, 1.0]),
        *step_labels("mc_steps", "p1-r1", [T, F], [0.5, 0.0]),
        *inconsistent(step_labels("mc_steps", "p2-r0", [T, T, T], [1.0, 0.75, 1.0])),  # rejected
        *step_labels("mc_steps", "ghost-r0", [T, T], [1.0, 1.0]),  # no such rollout: orphan
    ],
    "judge_steps": [
        *step_labels("judge_steps", "p1-r1", [F, U]),  # first step wrong; the judge decides nothing after it
        *step_labels("judge_steps", "p2-r0", [T, T, T]),
    ],
}
# (labeler, rollout) groups in the step labels: each gives exactly one PRM row or one reject.
GROUPS = {(r["labeler"], r["rollout_id"]) for rows in STEP_LABELS.values() for r in rows}


def write(rows: list[dict], schema, directory: Path) -> Path:
    directory.mkdir(parents=True)
    write_table(rows_to_table(rows, schema), str(directory / "part-00000-of-00001.parquet"))
    return directory


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Rollouts, one labeler's labels and two steps labelers' step labels under tmp_path/data."""
    data = tmp_path / "data"
    write(ROLLOUTS, ROLLOUT_V2, data / "rollouts")
    write([label(rid, s) for rid, s in SCORES.items()], LABEL_V1, data / "labels/math_answer")
    for name, rows in STEP_LABELS.items():
        write(rows, STEP_LABEL_V1, data / "steps" / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def params(steps: dict | None, **assemble_params) -> dict:
    p = only_labelers(tiny_params(), ("math_answer",))
    p["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)  # both prompts share MSG on purpose
    p["assemble"].update(assemble_params)
    p.pop("steps", None)
    if steps is not None:
        p["steps"] = steps
    return p


# assemble reads only the keys of `steps`; the settings belong to the steps@NAME stages.
STEPS = {"mc_steps": {"method": "mc"}, "judge_steps": {"method": "judge"}}


def run_assemble(out: str = "data/datasets") -> Path:
    assemble.main(["--rollouts", "data/rollouts", "--labels", "data/labels", "--steps", "data/steps", "--out", out])
    return Path(out)


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_prm_rows_rejects_and_manifest(project, params_file):
    params_file(params(STEPS))
    out = run_assemble()
    rows = read_rows(str(out / "prm"), PRM_V1)
    # sorted by (labeler, rollout_id) in the one shard
    assert [(r["labeler"], r["rollout_id"], r["labels"], r["first_error_step"]) for r in rows] == [
        ("judge_steps", "p1-r1", [F], 0),  # truncated after the first (wrong) step
        ("judge_steps", "p2-r0", [T, T, T], -1),
        ("mc_steps", "p1-r0", [T, T], -1),
        ("mc_steps", "p1-r1", [T, F], 1),
    ]
    by_key = {(r["labeler"], r["rollout_id"]): r for r in rows}
    mc = by_key["mc_steps", "p1-r1"]
    assert mc["prompt"] == "What is x + x?"  # the last user message, a str
    assert mc["completions"] == ["2 + 2 = 5.", "The answer is \\boxed{5}."]
    assert mc["soft_labels"] == [0.5, 0.0] and (mc["min_score"], mc["last_score"]) == (0.0, 0.0)
    assert (mc["method"], mc["task"], mc["split"], mc["prompt_id"]) == ("mc", "math", "train", "p1")
    judge = by_key["judge_steps", "p2-r0"]
    assert judge["split"] == "test" and judge["soft_labels"] == [None] * 3 and judge["min_score"] == 1.0
    assert all(len(r["labels"]) == len(r["completions"]) == len(r["soft_labels"]) for r in rows)
    (shard,) = sorted((out / "prm").glob("*.parquet"))
    assert read_table(str(shard)).schema == PRM_V1

    assert count_rejects(out / "prm") == {"inconsistent_n_steps": 1, "orphan_step_label": 1}
    rejects = read_rows(str(out / "prm/_rejects"), REJECT_V1)
    assert [(r["row_id"], r["reason"], r["stage"]) for r in rejects] == [
        ("ghost-r0/mc_steps", "orphan_step_label", "assemble"),
        ("p2-r0/mc_steps", "inconsistent_n_steps", "assemble"),
    ]
    assert "[3, 4]" in rejects[1]["detail"]
    # nothing lost: every (labeler, rollout) with step labels is a row or a reject
    assert len(rows) + len(rejects) == len(GROUPS) == 6

    manifest = json.loads((out / "prm/_manifest.json").read_text())
    assert manifest["schema"] == schema_id(PRM_V1) and manifest["rows"] == 4
    assert manifest["rejects"] == {"inconsistent_n_steps": 1, "orphan_step_label": 1}
    assert manifest["step_labelers"] == ["judge_steps", "mc_steps"]
    assert sorted(manifest["inputs"]) == ["rollouts", "steps/judge_steps", "steps/mc_steps"]
    assert manifest["params"]["prm_truncate_after_error"] is True
    assert manifest["step_methods"] == {"judge_steps": None, "mc_steps": None}  # no `config.method` in these params
    # the pairs are built as before, beside the PRM rows
    pairs = read_rows(str(out / "pairs"))
    assert sorted((p["chosen_rollout_id"], p["rejected_rollout_id"]) for p in pairs) == [
        ("p1-r0", "p1-r1"),
        ("p2-r0", "p2-r1"),
    ]


def test_keeping_steps_after_the_first_error(project, params_file):
    params_file(params(STEPS, prm_truncate_after_error=False))
    out = run_assemble()
    rows = {(r["labeler"], r["rollout_id"]): r for r in read_rows(str(out / "prm"), PRM_V1)}
    assert rows["mc_steps", "p1-r1"]["labels"] == [T, F]  # nothing after the error to keep
    assert ("judge_steps", "p1-r1") not in rows  # its kept step after the error is undecided
    assert count_rejects(out / "prm") == {"inconsistent_n_steps": 1, "orphan_step_label": 1, "undecided_step": 1}
    assert len(rows) + sum(count_rejects(out / "prm").values()) == len(GROUPS)


def test_no_steps_section_writes_no_prm_and_the_same_pairs(project, params_file):
    params_file(params(STEPS))
    with_steps = digests(run_assemble("a/datasets") / "pairs")
    for steps in (None, {}):  # section absent, section empty
        params_file(params(steps))
        out = run_assemble("b/datasets")
        assert sorted(p.name for p in out.iterdir()) == ["_rewards", "pairs", "pairs_by_aspect", "rl", "sft"]
        assert digests(out / "pairs") == with_steps  # shards, rejects and manifest byte for byte


def test_missing_steps_output_fails_before_writing(project, params_file):
    params_file(params({**STEPS, "never_run": {}}))
    with pytest.raises(FileNotFoundError, match="never_run"):
        run_assemble()
    assert not (project / "data/datasets").exists()


def test_steps_section_must_be_a_mapping(project, params_file):
    params_file(params(["mc_steps"]))
    with pytest.raises(ConfigError, match="'steps' must be a mapping"):
        run_assemble()


def test_make_prm_rows_outputs_and_pickles():
    fn = pickle.loads(pickle.dumps(MakePrmRows(truncate_after_error=True)))
    rollout_row = ROLLOUTS[1]
    steps = [
        *step_labels("mc_steps", "p1-r1", [T, F], [0.5, 0.0]),
        *inconsistent(step_labels("judge_steps", "p1-r1", [F, U])),
    ]
    elements = [
        ("p1-r1", {"rollouts": [rollout_row], "steps": steps}),
        ("ghost-r0", {"rollouts": [], "steps": step_labels("mc_steps", "ghost-r0", [T, T])}),
        ("p2-r1", {"rollouts": [ROLLOUTS[3]], "steps": []}),  # labelled by no steps labeler: nothing out
    ]
    with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = p | beam.Create(elements) | beam.ParDo(fn).with_outputs(REJECTED, main="rows")
        assert_that(
            out.rows | "Keys" >> beam.Map(lambda r: (r["labeler"], r["rollout_id"], r["labels"])),
            equal_to([("mc_steps", "p1-r1", [T, F])]),
            label="rows",
        )
        assert_that(
            out[REJECTED] | "Reasons" >> beam.Map(lambda r: (r["row_id"], r["reason"])),
            equal_to([("p1-r1/judge_steps", "inconsistent_n_steps"), ("ghost-r0/mc_steps", "orphan_step_label")]),
            label="rejects",
        )
