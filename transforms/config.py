"""Load one params.yaml section into a frozen dataclass that rejects unknown keys.

Every stage reads exactly its own section (plus the shared `beam` runner section), so `dvc exp run -S` on one
stage's params reruns only that stage, and a typo fails loudly instead of silently using a default.
"""

import dataclasses
import hashlib
import json
import os
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from rewardmill.transforms.errors import UserError

T = TypeVar("T")

PARAMS_FILE_ENV = "REWARDMILL_PARAMS"


class ConfigError(UserError, ValueError):
    """A params file that does not parse, or a section that does not match its dataclass: the message names the file
    (line and column) or the section and key, and the reason."""


def params_path() -> Path:
    return Path(os.environ.get(PARAMS_FILE_ENV, "params.yaml"))


DEFAULT_CACHE_ROOT = ".rewardmill/cache"  # params `cache.root` when the file has none


def cache_root(params: dict[str, Any]) -> str:
    """params `cache.root`: where the rollouts, label and steps stages keep their caches (see `in_workspace`)."""
    return in_workspace((params.get("cache") or {}).get("root") or DEFAULT_CACHE_ROOT)


def in_workspace(path: str) -> str:
    """A relative cache path, named in the DVC workspace when the stage runs in an experiment's copy of the repo.

    `dvc exp run --temp` and queued experiments run each stage in a copy (under the workspace's .dvc/tmp/exps/)
    and set DVC_ROOT to the workspace's project root. The copy holds git's files, not the caches (.rewardmill/ is
    untracked), so a relative cache path there would start empty and recompute every judge call and audit the
    workspace already paid for. Here it names the same folder in the workspace instead: cache records are keyed by
    content and written whole (a temp name, then a rename), so experiments and the workspace share them safely, even
    when queued experiments run at once. Outside such a copy (DVC_ROOT unset, or the working directory inside the
    workspace itself), and for an absolute path or a URL, `path` is returned unchanged.
    """
    root = os.environ.get("DVC_ROOT")
    if not root or "://" in path or Path(path).is_absolute():
        return path
    here = Path.cwd().resolve()
    workspace = Path(root).resolve()
    if not here.is_relative_to(workspace / ".dvc" / "tmp"):  # the workspace itself (or not DVC's copy at all)
        return path
    copy = next((p for p in [here, *here.parents] if (p / ".dvc").is_dir()), None)  # the copy's project root
    if copy is None or copy == workspace:
        return path
    return str(workspace / here.relative_to(copy) / path)


def read_params(path: Path | None = None) -> dict[str, Any]:
    path = path or params_path()
    if not path.exists():
        raise ConfigError(f"{path}: params file not found (run from the project root or set {PARAMS_FILE_ENV})")
    try:
        data = yaml.safe_load(path.read_bytes()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_problem(path, exc)) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def yaml_problem(path: Path, exc: yaml.YAMLError) -> str:
    """One line for a YAML file that does not parse: the file, where (line and column, 1-based) and what.

    PyYAML's own message spans lines (the problem, its context, the marks); an editor wants `file:line:col`."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if isinstance(exc, yaml.reader.ReaderError):  # bytes that are not text: not UTF-8, or control characters
        where = f"{path} (character {exc.position + 1})"
        problem = f"not UTF-8 text ({exc.reason}): save it as UTF-8" if exc.encoding != "unicode" else exc.reason
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        context = f"{context} that starts at line {context_mark.line + 1}, column {context_mark.column + 1}"
    detail = f"{problem} ({context})" if context else problem
    return f"{where}: YAML syntax error: {detail}"


def load_section(cls: type[T], section: str, path: Path | None = None, *, key: str | None = None) -> T:
    """Read `section` (or `section.key` for foreach stages) from params.yaml into `cls`."""
    params = read_params(path)
    if section not in params:
        raise ConfigError(f"params.yaml: section '{section}' is missing")
    raw = params[section]
    where = section
    if key is not None:
        if not isinstance(raw, dict) or key not in raw:
            raise ConfigError(f"params.yaml: '{section}.{key}' is missing")
        raw, where = raw[key], f"{section}.{key}"
    return from_dict(cls, raw if raw is not None else {}, where)


def from_dict(cls: type[T], raw: Any, where: str) -> T:
    """Build a (possibly nested) frozen dataclass from plain YAML values, checking keys and basic types."""
    if not isinstance(raw, dict):
        raise ConfigError(f"params.yaml: '{where}' must be a mapping, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields), key=str)  # YAML 1.1 reads `on:`/`yes:` as bool keys
    if unknown:
        raise ConfigError(f"params.yaml: unknown key(s) {unknown} in '{where}'; allowed: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, value in raw.items():
        values[name] = _coerce(hints[name], value, f"{where}.{name}")
    try:
        return cls(**values)
    except TypeError as exc:  # a required key is missing
        raise ConfigError(f"params.yaml: '{where}': {exc}") from exc
    except ValueError as exc:  # __post_init__ validation
        raise ConfigError(f"params.yaml: '{where}': {exc}") from exc


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _coerce(option, value, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"params.yaml: '{where}': no type matched: {errors}")
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, where)
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"params.yaml: '{where}' must be a list, got {type(value).__name__}")
        inner = args[0] if args else Any
        return tuple(_coerce(inner, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"params.yaml: '{where}' must be a mapping, got {type(value).__name__}")
        if len(args) == 2 and dataclasses.is_dataclass(args[1]):  # name -> section, e.g. rollouts.policies
            return {k: _coerce(args[1], v if v is not None else {}, f"{where}.{k}") for k, v in value.items()}
        return dict(value)  # plain dict: Beam pickles configs to workers, mappingproxy does not pickle
    if hint is Any:
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise ConfigError(f"params.yaml: '{where}' must be {hint.__name__}, got {value!r}")
        return value
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"params.yaml: '{where}' must be one of {list(args)}, got {value!r}")
        return value
    return value


def to_plain(obj: Any) -> Any:
    """Dataclass / mapping proxy / tuple -> JSON-able plain values (for hashing and manifests)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict | types.MappingProxyType):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    return json.dumps(to_plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def params_hash(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def entry_section(stage: str) -> tuple[str, str]:
    """label@KEY -> ("labelers", KEY); steps@KEY -> ("steps", KEY); rubrics@KEY -> ("rubrics", KEY): where a foreach
    stage's entry is in params."""
    kind, _, key = stage.partition("@")
    return {"label": "labelers", "steps": "steps", "rubrics": "rubrics"}[kind], key


def mappings(value: Any, where: str = ""):
    """(where, mapping) for every mapping in a settings tree, `where` its params path (a.b[0].c)."""
    if isinstance(value, dict):
        yield where, value
        for key, item in value.items():
            yield from mappings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from mappings(item, f"{where}[{i}]")
