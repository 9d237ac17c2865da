"""Audit results, kept between runs: validate measures every configured labeler on the gold packs each time it runs,
and a labeler's result depends only on its code, its config (a judge's model included) and the pack rows, not on
the dataset. So a rerun of validate for new data (an experiment on the rollouts, a new weight) reads the result back
instead of running the packs again: for code_tests its never-ending completions' timeouts, for a judge the loading of
its model (its calls were already replayed from the call cache).

Key: the label cache's namespace of the labeler (its name, version, config, the identity of every judge model it
calls, and the digest of every file it runs: transforms/labelers/cache.py), its params `tasks`, the confidence
level, the digest of every pack row, and for a judge the sample size (`validate.audit_judge_rows`). A change to any
of them measures again.

A result is kept only when it is settled: each label the label cache would not keep (a timeout, which may be the
machine's load rather than the code) agrees with its gold row. A correct row that timed out is measured again next
time instead of lowering the recall for good.
"""

import hashlib
import json
import logging
from dataclasses import asdict
from typing import Any

from rewardmill.transforms.evaluation.gold_packs import GoldRow
from rewardmill.transforms.io import storage
from rewardmill.transforms.labelers.cache import namespace
from rewardmill.transforms.stage.outputs import write_json_atomic

log = logging.getLogger("rewardmill")
FOLDER = "audit"  # beside the label cache folder, as `calls/` is


def rows_digest(rows: list[GoldRow]) -> str:
    """sha256 of every pack row, in order (the packs as the audit reads them)."""
    text = json.dumps([asdict(r) for r in rows], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def result_path(
    label_cache_dir: str,
    labeler_cls,
    config: Any,
    tasks: Any,
    packs_digest: str,
    confidence: float,
    judge_rows: int | None = None,
) -> str:
    ident = {
        "labeler": namespace(labeler_cls, config),
        "tasks": tasks,
        "packs": packs_digest,
        "confidence": confidence,
    }
    if judge_rows is not None:  # a model-based labeler's sample size (absent for a rule verifier: keys unchanged)
        ident["judge_rows"] = judge_rows
    ident = json.dumps(ident, sort_keys=True)
    name = f"{labeler_cls.name}-{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"
    return storage.join(storage.parent(label_cache_dir), FOLDER, name)


def read_result(path: str) -> dict[str, Any] | None:
    """The kept result at `path`, or None (none kept, or a file that does not parse: it is measured again)."""
    if not storage.is_file(path):
        return None
    try:
        return json.loads(storage.read_text(path))
    except (OSError, ValueError) as exc:
        log.warning("audit: ignoring the kept result %s (%s); measuring again", path, exc)
        return None


def keep_result(path: str, result: dict[str, Any]) -> None:
    storage.make_folder(storage.parent(path))
    write_json_atomic(path, result)
