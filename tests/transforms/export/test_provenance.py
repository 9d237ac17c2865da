"""provenance: upstream dvc.lock stages, per-stage md5s, judge backends from label configs, the card section."""

import pytest

from rewardmill.transforms.export.provenance import (
    Provenance,
    describe_backend,
    judge_backends,
    lock_digest,
    provenance_section,
    stage_outs,
    upstream_stages,
)

STAGES = {
    "prompts": {"outs": [{"path": "data/prompts", "md5": "1.dir"}]},
    "model": {"outs": [{"path": "models/policy", "hash": "md5", "md5": "2.dir"}]},
    "rollouts": {"deps": [{"path": "data/prompts"}, {"path": "models/policy"}], "outs": [{"path": "data/rollouts"}]},
    "label@a": {"deps": [{"path": "data/rollouts"}], "outs": [{"path": "data/labels/a", "md5": "4.dir"}]},
    "assemble": {"deps": [{"path": "data/labels"}], "outs": [{"path": "data/datasets", "md5": "5.dir"}]},
    "validate": {"deps": [{"path": "data/datasets"}], "outs": [{"path": "reports", "md5": "6.dir"}]},
    "export": {"deps": [{"path": "data/datasets"}], "outs": [{"path": "export", "md5": "7.dir"}]},
}


def test_upstream_stages_follow_deps_transitively():
    # data/labels (a dep) contains data/labels/a (an out): folders overlap both ways.
    assert list(upstream_stages(STAGES, ["data/datasets"])) == ["assemble", "label@a", "model", "prompts", "rollouts"]
    assert list(upstream_stages(STAGES, ["data/prompts/"])) == ["prompts"]  # normalized paths
    assert upstream_stages(STAGES, ["elsewhere"]) == {}


def test_stage_outs_and_digest():
    upstream = upstream_stages(STAGES, ["data/datasets"])
    assert stage_outs(upstream) == (
        ("assemble", "data/datasets", "5.dir"),
        ("label@a", "data/labels/a", "4.dir"),
        ("model", "models/policy", "2.dir"),
        ("prompts", "data/prompts", "1.dir"),
        ("rollouts", "data/rollouts", ""),  # no md5 recorded
    )
    digest = lock_digest(upstream)
    assert digest and len(digest) == 64 and lock_digest(dict(reversed(list(upstream.items())))) == digest
    assert lock_digest({}) is None


@pytest.mark.parametrize(
    "config, has_backend, expected",
    [
        ({"threshold": 0.5}, True, [("transformers", "models/policy", None)]),  # a judge on its default backend
        ({"timeout_seconds": 5}, False, []),  # a rule verifier calls no model
        (
            {"backend": {"kind": "openai", "model": "m", "base_url": "http://h/v1"}},
            True,
            [("openai", "m", "http://h/v1")],
        ),
        # the panel's default backend, then a panelist's own; a repeat is listed once
        (
            {
                "panelists": [
                    {"backend": {"kind": "openai", "model": "m"}},
                    {"backend": {"kind": "openai", "model": "m"}},
                ]
            },
            True,
            [("transformers", "models/policy", None), ("openai", "m", None)],
        ),
        ({"backend": {"model": "judges/big"}}, True, [("transformers", "judges/big", None)]),
    ],
)
def test_judge_backends(config, has_backend, expected):
    got = judge_backends(config, has_backend)
    assert [(b["kind"], b["model"], b["base_url"]) for b in got] == expected


def test_describe_backend():
    assert describe_backend({"kind": "transformers", "model": "models/policy", "base_url": None}) == (
        "`models/policy` (transformers)"
    )
    assert describe_backend({"kind": "openai", "model": "m", "base_url": "http://h/v1"}) == (
        "`m` at http://h/v1 (openai)"
    )


def test_configs_of_one_stage_share_rows():
    same = {"params_hash": "h", "inputs": {"rollouts": "r"}}
    upstream = {"pairs": same, "rl": same, "prm": {"params_hash": "h", "inputs": {"rollouts": "r", "steps/mc": "s"}}}
    text = provenance_section(Provenance(params_hash="p"), "mit", upstream)
    assert "| `pairs`, `prm`, `rl` upstream params sha256 | `h` |" in text
    assert "| `pairs`, `prm`, `rl` input `rollouts` sha256 | `r` |" in text
    assert "| `prm` input `steps/mc` sha256 | `s` |" in text
    assert text.index("upstream params") < text.index("input `rollouts`")


def test_section_lists_per_config_upstream_and_escapes_cells():
    provenance = Provenance(params_hash="p", stages=(("label@a|b", "data/labels/a", "4.dir"),))
    text = provenance_section(provenance, "mit", {"pairs": {"params_hash": "h", "inputs": {"labels": "l"}}, "rl": {}})
    assert "| license | `mit` (params `export.license`) |" in text
    assert "| `pairs` upstream params sha256 | `h` |" in text and "| `pairs` input `labels` sha256 | `l` |" in text
    assert "| `label@a\\|b` | `data/labels/a` | `4.dir` |" in text  # a `|` cannot break the table
    assert "not recorded (no git checkout)" in text and text.endswith("Rebuild with `dvc repro export`.")


def test_a_candidate_pool_lists_every_member_instead_of_one_policy():
    pool = (("fast", "vllm", "models/policy", "f1"), ("remote", "openai", "http://h/v1", "f2"))
    text = provenance_section(Provenance(params_hash="p", policies=pool), "mit", {})
    assert "| pool policy `fast` | `models/policy` (vllm), fingerprint `f1` |" in text
    assert "| pool policy `remote` | `http://h/v1` (openai), fingerprint `f2` |" in text
    assert "| policy |" not in text
