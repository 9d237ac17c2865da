"""The declared labeler contract (contract.py): every registered labeler satisfies `Labeler` and the hook Protocols it
opts into, signatures included; a labeler that subclasses nothing and has no hooks runs through the same helpers; an
entry point that is no labeler fails when it is loaded, naming what it lacks."""

import dataclasses
import inspect
from importlib.metadata import EntryPoint

import pytest

from rewardmill.schemas.rollout import ROLLOUT_V3
from rewardmill.transforms import labelers
from rewardmill.transforms.config import from_dict
from rewardmill.transforms.errors import UserError, is_user_error
from rewardmill.transforms.labelers import ENTRY_POINT_GROUP, LABELERS, get_labeler_class
from rewardmill.transforms.labelers.base import Label, label_values, uses_groups
from rewardmill.transforms.labelers.cache import label_with_cache
from rewardmill.transforms.labelers.contract import (
    GENERATED_RUBRIC,
    HOOKS,
    PROMPT_ONLY_COLUMNS,
    BatchLabeler,
    Labeler,
    NotALabeler,
    TearDownLabeler,
    check_labeler,
    declared_tasks,
    has_hook,
    members,
    missing,
    tear_down,
    usage_of,
)
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from rewardmill.transforms.labelers.normalize import normalize_output

# Settings without a default (a reward model is the user's to name; a hub id is not loaded until the first label)
REQUIRED = {"reward_model": {"model": "example/reward-model"}, "rule_checker": {"rubrics": "rules"}}


def build(key: str):
    cls = LABELERS[key]
    return cls(from_dict(cls.Config, REQUIRED.get(key, {}), key))


def asked_of_the_class(protocol: type, name: str) -> bool:
    """A hook the stage calls on the class (declared as a classmethod or staticmethod in its Protocol)."""
    return isinstance(inspect.getattr_static(protocol, name), classmethod | staticmethod)


def bound_signature(owner: type, name: str) -> inspect.Signature:
    """The signature of `owner.name` as a caller sees it: without `self` for a plain method."""
    sig = inspect.signature(getattr(owner, name))
    if inspect.isfunction(inspect.getattr_static(owner, name)):
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return sig


@pytest.mark.parametrize("key", sorted(LABELERS))
def test_registered_labeler_satisfies_the_labeler_protocol(key):
    cls, labeler = LABELERS[key], build(key)
    assert missing(cls, Labeler) == [] and isinstance(labeler, Labeler)
    assert check_labeler(cls, key) is cls
    assert dataclasses.is_dataclass(cls.Config)
    for reads in (cls.reads, labeler.reads):  # the class's default and the instance's own
        # a rollout's columns, or a prompt's the label stage joins (pipelines/label.py PROMPT_ONLY_COLUMNS)
        joined = {*PROMPT_ONLY_COLUMNS, GENERATED_RUBRIC}  # the prompt's metadata, a generated rubric
        assert isinstance(reads, tuple) and set(reads) <= {*ROLLOUT_V3.names, *joined}, reads
    inspect.signature(labeler.label).bind(*labeler.reads)  # label takes the reads values, in order
    for subject in (cls, labeler):
        tasks = declared_tasks(subject)
        assert tasks is None or (isinstance(tasks, tuple) and all(isinstance(t, str) for t in tasks))


@pytest.mark.parametrize("key", sorted(LABELERS))
def test_each_hook_a_labeler_defines_matches_its_protocol(key):
    cls = LABELERS[key]
    for hook in HOOKS:
        if not has_hook(cls, hook):
            continue
        for name in members(hook):
            if asked_of_the_class(hook, name):  # called on the class, before any labeler is built
                assert isinstance(inspect.getattr_static(cls, name), classmethod | staticmethod), f"{key}.{name}"
            declared = bound_signature(hook, name)
            own = bound_signature(cls, name)
            own.bind(*(object() for _ in declared.parameters))  # takes what the stage passes, positionally
            required = [p for p in own.parameters.values() if p.default is p.empty and p.kind != p.VAR_POSITIONAL]
            assert len(required) <= len(declared.parameters), f"{key}.{name} needs more than {declared}"


@dataclasses.dataclass(frozen=True)
class ShoutingConfig:
    threshold: float = 0.5  # share of letters in capitals that counts as shouting


class Shouting:
    """A labeler from another package: no base class, no optional hook.

    Input columns: completion.   Output: score 1.0 when most letters are capitals, else 0.0 (None: no letters).
    """

    name = "shouting"
    version = "1"
    reads = ("completion",)
    Config = ShoutingConfig

    def __init__(self, config: ShoutingConfig | None = None):
        self.config = config or ShoutingConfig()

    def label(self, completion: str) -> Label:
        letters = [c for c in completion if c.isalpha()]
        if not letters:
            return Label(None, 0.0, "abstain", "no letters")
        shouting = sum(c.isupper() for c in letters) / len(letters) > self.config.threshold
        return Label(float(shouting), 1.0, "correct" if shouting else "incorrect")


class NoLabel:
    """Everything but `label`."""

    name, version, reads = "no_label", "1", ("completion",)
    Config = ShoutingConfig


class PlainConfig(Shouting):
    class Config:  # not a dataclass: params.yaml could never build it
        pass


def test_a_labeler_without_base_class_or_hooks_runs_through_the_helpers(tmp_path):
    labeler = Shouting()
    assert isinstance(labeler, Labeler) and check_labeler(Shouting, "test") is Shouting
    for subject in (Shouting, labeler):
        assert [hook for hook in HOOKS if has_hook(subject, hook)] == []
        assert declared_tasks(subject) is None
    assert not uses_groups(Shouting, ShoutingConfig())
    assert usage_of(labeler) is None
    tear_down(labeler)  # nothing to release: a no-op
    assert not normalize_output(str(tmp_path / "never-read"), Shouting, ShoutingConfig())
    rows = [("HELLO",), ("hello",), ("42",)]
    expected = [(1.0, "correct"), (0.0, "incorrect"), (None, "abstain")]
    assert [(x.score, x.verdict) for x in label_values(labeler, rows)] == expected
    assert [(x.score, x.verdict) for x in label_with_cache(labeler, None, rows)] == expected


def test_setting_a_hook_to_none_opts_out():
    class OneByOne(MathAnswerVerifier):
        label_many = None  # as tests/pipelines/slow_labeler.py does

    assert has_hook(MathAnswerVerifier, BatchLabeler) and has_hook(MathAnswerVerifier(), BatchLabeler)
    assert not has_hook(OneByOne, BatchLabeler) and not has_hook(OneByOne(), BatchLabeler)
    assert has_hook(OneByOne, TearDownLabeler)  # the other hooks stay
    assert [x.verdict for x in label_values(OneByOne(), [("\\boxed{4}", "4"), ("\\boxed{5}", "4")])] == [
        "correct",
        "incorrect",
    ]


@pytest.mark.parametrize(
    "subject, named",
    [
        # no label method: the error names it
        (NoLabel, "no label"),
        # label present but not callable
        (type("Broken", (Shouting,), {"label": None}), "no label"),
        # members missing on a bare class: each one named
        (type("Bare", (), {}), "no name, version, reads, Config, label"),
        # a Config that from_dict cannot build
        (PlainConfig, "Config must be a dataclass"),
        # not a class at all (an entry point naming a function)
        (lambda completion: None, "is not a class"),
    ],
)
def test_check_labeler_names_what_is_missing(subject, named):
    with pytest.raises(NotALabeler, match=named) as err:
        check_labeler(subject, "labeler entry point 'x'")
    assert "labeler entry point 'x'" in str(err.value) and is_user_error(err.value)


def fake_entry_points(monkeypatch, **targets: str) -> None:
    eps = [EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in targets.items()]
    monkeypatch.setattr(labelers, "entry_points", lambda group: [ep for ep in eps if ep.group == group])


def test_an_entry_point_labeler_is_checked_when_loaded(monkeypatch):
    module = __name__
    fake_entry_points(monkeypatch, shouting=f"{module}:Shouting", broken=f"{module}:NoLabel")
    assert get_labeler_class("shouting") is Shouting
    with pytest.raises(UserError, match=r"labeler entry point 'broken' .*NoLabel is not a labeler: it has no label"):
        get_labeler_class("broken")
