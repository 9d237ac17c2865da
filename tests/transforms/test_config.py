"""transforms/config.py: params sections load into frozen dataclasses, loudly rejecting anything unexpected."""

import dataclasses
import hashlib
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
import yaml

from rewardmill.transforms.config import (
    PARAMS_FILE_ENV,
    ConfigError,
    cache_root,
    canonical_json,
    from_dict,
    in_workspace,
    load_section,
    params_hash,
    params_path,
    read_params,
    to_plain,
)


@dataclass(frozen=True)
class Inner:
    depth: int = 1
    label: str = "x"


@dataclass(frozen=True)
class Stage:
    name: str  # required
    count: int = 2
    rate: float = 0.5
    enabled: bool = False
    levels: tuple[int, ...] = (1, 2)
    tags: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    limit: int | None = None
    mode: Literal["fast", "slow"] = "fast"
    inner: Inner = field(default_factory=Inner)
    inners: tuple[Inner, ...] = ()


@dataclass(frozen=True)
class Positive:
    n: int = 1

    def __post_init__(self):
        if self.n < 1:
            raise ValueError("n must be >= 1")


# --- from_dict: accepted values and their coercions -------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        # only the required key: every other field keeps its default
        ({"name": "a"}, Stage(name="a")),
        # an int where a float is expected becomes a float
        ({"name": "a", "rate": 1}, Stage(name="a", rate=1.0)),
        # a YAML list becomes a tuple (hashable, immutable config)
        ({"name": "a", "levels": [3, 4]}, Stage(name="a", levels=(3, 4))),
        # list[str] is also coerced to a tuple
        ({"name": "a", "tags": ["p", "q"]}, Stage(name="a", tags=("p", "q"))),
        # an empty list stays empty
        ({"name": "a", "levels": []}, Stage(name="a", levels=())),
        # an optional int accepts None ...
        ({"name": "a", "limit": None}, Stage(name="a", limit=None)),
        # ... and an int
        ({"name": "a", "limit": 7}, Stage(name="a", limit=7)),
        # a Literal accepts one of its values
        ({"name": "a", "mode": "slow"}, Stage(name="a", mode="slow")),
        # a free-form dict is passed through as a plain dict
        ({"name": "a", "extra": {"k": [1, 2]}}, Stage(name="a", extra={"k": [1, 2]})),
        # a nested dataclass is built from a nested mapping, partial keys keep defaults
        ({"name": "a", "inner": {"depth": 3}}, Stage(name="a", inner=Inner(depth=3))),
        # a list of nested dataclasses becomes a tuple of them
        (
            {"name": "a", "inners": [{"depth": 2}, {"label": "y"}]},
            Stage(name="a", inners=(Inner(depth=2), Inner(label="y"))),
        ),
    ],
)
def test_from_dict_accepts(raw, expected):
    assert from_dict(Stage, raw, "stage") == expected


def test_from_dict_coerced_types():
    cfg = from_dict(Stage, {"name": "a", "rate": 1, "levels": [1], "extra": {"k": 1}}, "stage")
    assert type(cfg.rate) is float
    assert type(cfg.levels) is tuple
    assert type(cfg.extra) is dict  # not a mappingproxy: configs are pickled to Beam workers


def test_from_dict_does_not_mutate_input():
    raw = {"name": "a", "levels": [1, 2], "inner": {"depth": 2}}
    snapshot = yaml.safe_dump(raw)
    from_dict(Stage, raw, "stage")
    assert yaml.safe_dump(raw) == snapshot


def test_from_dict_result_is_frozen():
    cfg = from_dict(Stage, {"name": "a"}, "stage")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.count = 3


# --- from_dict: rejected values; the message must name where the problem is -------------------------------------


@pytest.mark.parametrize(
    "raw, fragments",
    [
        # a typo'd key is not silently ignored
        ({"name": "a", "cuont": 3}, ["'stage'", "cuont"]),
        # several unknown keys are all listed
        ({"name": "a", "zz": 1, "aa": 2}, ["'stage'", "'aa'", "'zz'"]),
        # an unknown key inside a nested section names the nested path
        ({"name": "a", "inner": {"depht": 1}}, ["'stage.inner'", "depht"]),
        # an unknown key inside a list of sections names the list item
        ({"name": "a", "inners": [{}, {"bad": 1}]}, ["'stage.inners[1]'", "bad"]),
        # a string where an int is expected
        ({"name": "a", "count": "3"}, ["stage.count", "int", "'3'"]),
        # a bool is an int in Python, but not in a config
        ({"name": "a", "count": True}, ["stage.count", "int", "True"]),
        # a bool is not a float either
        ({"name": "a", "rate": True}, ["stage.rate", "float"]),
        # a float is not an int (no silent truncation)
        ({"name": "a", "count": 2.5}, ["stage.count", "int"]),
        # an int is not a str
        ({"name": 5}, ["stage.name", "str"]),
        # a string is not a bool ("false" would be truthy)
        ({"name": "a", "enabled": "false"}, ["stage.enabled", "bool"]),
        # the required key is missing
        ({"count": 3}, ["'stage'", "name"]),
        # a scalar where a list is expected
        ({"name": "a", "levels": 3}, ["stage.levels", "list"]),
        # a string is not a list of characters
        ({"name": "a", "levels": "12"}, ["stage.levels", "list"]),
        # a bad item inside a list names its index
        ({"name": "a", "levels": [1, "two"]}, ["stage.levels[1]", "int"]),
        # a scalar where a nested section is expected
        ({"name": "a", "inner": 3}, ["stage.inner", "mapping"]),
        # a list where a dict is expected
        ({"name": "a", "extra": [1]}, ["stage.extra", "mapping"]),
        # a value outside a Literal
        ({"name": "a", "mode": "medium"}, ["stage.mode", "medium"]),
        # an optional int still rejects a string
        ({"name": "a", "limit": "7"}, ["stage.limit", "int"]),
    ],
)
def test_from_dict_rejects(raw, fragments):
    with pytest.raises(ConfigError) as info:
        from_dict(Stage, raw, "stage")
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize(
    "raw",
    [
        # a list instead of a mapping
        [1, 2],
        # a scalar instead of a mapping
        "name: a",
        # None is not a mapping (load_section maps an empty section to {} itself)
        None,
    ],
)
def test_from_dict_requires_a_mapping(raw):
    with pytest.raises(ConfigError, match="'stage' must be a mapping"):
        from_dict(Stage, raw, "stage")


def test_from_dict_post_init_error_becomes_config_error():
    with pytest.raises(ConfigError, match=r"'pos'.*n must be >= 1"):
        from_dict(Positive, {"n": 0}, "pos")


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_from_dict_unknown_non_string_keys():
    # yaml.safe_load("on: 1\ntypo: 2") == {True: 1, "typo": 2}
    raw = yaml.safe_load("name: a\non: 1\ntypo: 2\n")
    with pytest.raises(ConfigError, match="typo"):
        from_dict(Stage, raw, "stage")


# --- load_section / read_params ------------------------------------------------------------------------------------


def write_params(tmp_path, data) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def test_load_section_reads_its_section(tmp_path):
    path = write_params(tmp_path, {"stage": {"name": "a", "count": 4}, "other": {"anything": 1}})
    assert load_section(Stage, "stage", path) == Stage(name="a", count=4)


def test_load_section_uses_env_var(params_file):
    params_file({"pos": {"n": 3}})
    assert load_section(Positive, "pos") == Positive(n=3)


def test_params_path_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv(PARAMS_FILE_ENV, raising=False)
    assert str(params_path()) == "params.yaml"
    monkeypatch.setenv(PARAMS_FILE_ENV, str(tmp_path / "p.yaml"))
    assert params_path() == tmp_path / "p.yaml"


def test_load_section_empty_section_uses_defaults(tmp_path):
    # `pos:` with nothing under it is YAML null: all defaults
    path = write_params(tmp_path, "pos:\n")
    assert load_section(Positive, "pos", path) == Positive()


def test_load_section_unknown_key_names_section_and_key(tmp_path):
    path = write_params(tmp_path, {"pos": {"n": 2, "m": 3}})
    with pytest.raises(ConfigError, match=r"\['m'\] in 'pos'"):
        load_section(Positive, "pos", path)


def test_load_section_missing_section(tmp_path):
    path = write_params(tmp_path, {"other": {}})
    with pytest.raises(ConfigError, match="section 'pos' is missing"):
        load_section(Positive, "pos", path)


@pytest.mark.parametrize(
    "params, key, expected",
    [
        # foreach stage: the named entry is loaded
        ({"labelers": {"one": {"n": 1}, "two": {"n": 2}}}, "two", Positive(n=2)),
        # an empty entry gets the defaults
        ({"labelers": {"one": None}}, "one", Positive()),
    ],
)
def test_load_section_with_key(tmp_path, params, key, expected):
    path = write_params(tmp_path, params)
    assert load_section(Positive, "labelers", path, key=key) == expected


@pytest.mark.parametrize(
    "params, key, match",
    [
        # the foreach key is absent
        ({"labelers": {"one": {"n": 1}}}, "three", r"'labelers\.three' is missing"),
        # the section is a list, not a mapping of entries
        ({"labelers": [{"n": 1}]}, "one", r"'labelers\.one' is missing"),
        # the section is empty
        ({"labelers": None}, "one", r"'labelers\.one' is missing"),
        # an unknown key inside the entry names 'section.key'
        ({"labelers": {"one": {"n": 1, "typo": 2}}}, "one", r"'typo'.*'labelers\.one'"),
        # a bad type inside the entry names the full path
        ({"labelers": {"one": {"n": "1"}}}, "one", r"labelers\.one\.n"),
    ],
)
def test_load_section_with_key_rejects(tmp_path, params, key, match):
    path = write_params(tmp_path, params)
    with pytest.raises(ConfigError, match=match):
        load_section(Positive, "labelers", path, key=key)


def test_missing_params_file(tmp_path):
    with pytest.raises(ConfigError, match="params file not found"):
        load_section(Positive, "pos", tmp_path / "nope.yaml")


def test_missing_params_file_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv(PARAMS_FILE_ENV, str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match=f"nope.yaml.*{PARAMS_FILE_ENV}"):
        read_params()


@pytest.mark.parametrize(
    "text, expected",
    [
        # an empty file is an empty set of sections
        ("", {}),
        # a comment-only file too
        ("# nothing yet\n", {}),
        # ordinary sections
        ("a:\n  b: 1\n", {"a": {"b": 1}}),
    ],
)
def test_read_params(tmp_path, text, expected):
    assert read_params(write_params(tmp_path, text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        # a top-level list
        "- a\n- b\n",
        # a top-level scalar
        "just text\n",
    ],
)
def test_read_params_rejects_non_mapping(tmp_path, text):
    with pytest.raises(ConfigError, match="mapping of sections"):
        read_params(write_params(tmp_path, text))


@pytest.mark.parametrize(
    "data, where, says",
    [
        # an unclosed flow list: PyYAML notices at the end of the file and names where the list started
        (b"beam:\n  runner: [x\n", ":3:1:", "while parsing a flow sequence that starts at line 2, column 11"),
        # a key after a value on one line
        (b"model:\n  source: a: b\n", ":2:12:", "mapping values are not allowed here"),
        # a tab indent
        (b"model:\n\tsource: x\n", ":2:1:", "found character '\\t' that cannot start any token"),
        # latin-1 bytes, not UTF-8
        (b"model:\n  name: caf\xe9\n", " (character 19)", "not UTF-8 text"),
    ],
)
def test_a_yaml_syntax_error_is_one_config_error_line_naming_file_line_and_column(tmp_path, data, where, says):
    """PyYAML's ScannerError/ParserError print over several lines and end a run with a traceback; read_params turns
    them into one ConfigError (a UserError: the CLI's one line and exit status 2)."""
    from rewardmill.transforms.errors import UserError

    path = tmp_path / "params.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as exc:
        read_params(path)
    message = str(exc.value)
    assert isinstance(exc.value, UserError) and "\n" not in message, message
    assert message.startswith(f"{path}{where}") and "YAML syntax error" in message and says in message, message


def test_real_params_file_loads_with_tiny_params(params_file):
    # The project's own params.yaml parses as sections (the fixture copies and shrinks it).
    path = params_file()
    params = read_params(path)
    assert {"beam", "prompts", "rollouts", "labelers", "assemble"} <= set(params)


# --- to_plain / canonical_json / params_hash ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, expected",
    [
        # a dataclass becomes a dict of its fields, tuples become lists, nested dataclasses recurse
        (
            Stage(name="a", levels=(1,), inner=Inner(2, "z")),
            {
                "name": "a",
                "count": 2,
                "rate": 0.5,
                "enabled": False,
                "levels": [1],
                "tags": [],
                "extra": {},
                "limit": None,
                "mode": "fast",
                "inner": {"depth": 2, "label": "z"},
                "inners": [],
            },
        ),
        # a mapping proxy becomes a dict; non-string keys become strings (JSON keys)
        (types.MappingProxyType({1: (2, 3)}), {"1": [2, 3]}),
        # scalars are unchanged
        (3.5, 3.5),
        # nested lists of tuples
        ([(1, 2), [3]], [[1, 2], [3]]),
    ],
)
def test_to_plain(obj, expected):
    assert to_plain(obj) == expected


def test_canonical_json_sorted_and_compact():
    assert canonical_json({"b": 1, "a": [1, 2], "é": "ü"}) == '{"a":[1,2],"b":1,"é":"ü"}'


def test_params_hash_pinned_value():
    # The hash is sha256 of the canonical JSON: changing either invalidates every manifest, so pin it.
    assert params_hash({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()


def test_params_hash_key_order_independent():
    assert params_hash({"a": 1, "b": {"x": 1, "y": 2}}) == params_hash({"b": {"y": 2, "x": 1}, "a": 1})


def test_params_hash_stable_across_calls_and_equal_configs():
    a = from_dict(Stage, {"name": "a", "levels": [1, 2], "extra": {"p": 1, "q": 2}}, "s")
    b = from_dict(Stage, {"extra": {"q": 2, "p": 1}, "levels": [1, 2], "name": "a"}, "s")
    assert params_hash(a) == params_hash(a) == params_hash(b)
    # a dataclass hashes like its plain form
    assert params_hash(a) == params_hash(to_plain(a))


@pytest.mark.parametrize(
    "left, right",
    [
        # a changed value
        ({"a": 1}, {"a": 2}),
        # list order matters (levels cycle in order)
        ({"a": [1, 2]}, {"a": [2, 1]}),
        # int vs float are different JSON
        ({"a": 1}, {"a": 1.0}),
        # an added key
        ({"a": 1}, {"a": 1, "b": None}),
    ],
)
def test_params_hash_differs(left, right):
    assert params_hash(left) != params_hash(right)


@pytest.fixture
def experiment_copy(tmp_path, monkeypatch):
    """A workspace and the copy of it `dvc exp run --temp` runs stages in (.dvc/tmp/exps/standalone/tmpXXXX, as DVC
    3 lays it out), with DVC_ROOT naming the workspace as DVC sets it there."""
    workspace = tmp_path / "project"
    copy = workspace / ".dvc/tmp/exps/standalone/tmpabc123"
    (copy / ".dvc").mkdir(parents=True)
    monkeypatch.setenv("DVC_ROOT", str(workspace))
    return workspace, copy


@pytest.mark.parametrize(
    "path, where, expected",
    [
        (".rewardmill/cache", "copy", "{workspace}/.rewardmill/cache"),  # a temp experiment: the workspace's cache
        (".rewardmill/cache", "copy/sub", "{workspace}/sub/.rewardmill/cache"),  # a stage's wdir below the root
        (".rewardmill/cache", "workspace", ".rewardmill/cache"),  # a workspace run: unchanged
        ("/abs/cache", "copy", "/abs/cache"),  # an absolute path names itself
        ("s3://bucket/cache", "copy", "s3://bucket/cache"),  # a URL too
    ],
)
def test_a_relative_cache_in_an_experiments_copy_names_the_workspaces(
    experiment_copy, monkeypatch, path, where, expected
):
    workspace, copy = experiment_copy
    folder = {"copy": copy, "copy/sub": copy / "sub", "workspace": workspace}[where]
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    assert in_workspace(path) == expected.format(workspace=workspace.resolve())
    assert cache_root({"cache": {"root": path}}) == expected.format(workspace=workspace.resolve())


def test_without_dvc_root_a_cache_path_is_unchanged(experiment_copy, monkeypatch):
    _, copy = experiment_copy
    monkeypatch.chdir(copy)
    monkeypatch.delenv("DVC_ROOT")
    assert in_workspace(".rewardmill/cache") == ".rewardmill/cache"
