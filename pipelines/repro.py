"""`rewardmill repro`: `dvc repro`, in rounds when params `targets` asks for a number of rows.

Without targets it runs `dvc repro` once. With `targets: {pairs: N}` (and/or rl, sft, prm) each round runs
`dvc repro assemble`, reads how many rows each dataset config got per prompt of each task, and, while a target is
short, grows the prompt sources in params.yaml (their count / limit) by just enough to meet it, then runs again. Every
stage answers what it did before from its caches, so a round pays only for the new prompts, and the last round is a
plain `dvc repro` at the final sizes: the same bytes as a single run of those params. Then `dvc repro` builds the rest
(validate, export). The rounds stop when every target is met, a budget stops them, the sources run dry or after
`targets.max_rounds`; the exit status is 1 when a target was not met. Each round's sizes, counts and rates go to
--record (docs/targets.md).

rewardmill repro                  # dvc repro, or the rounds params `targets` asks for
rewardmill repro --record FILE    # where the rounds' record goes (default .rewardmill/targets.json)
"""

import argparse
import logging
import shutil
import subprocess
import sys
from pathlib import Path

from rewardmill.transforms.config import from_dict, params_path, read_params
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.io import storage
from rewardmill.transforms.stage.outputs import manifest_or_none, write_json_atomic
from rewardmill.transforms.targets.driver import Sources, run_rounds
from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.yields import observe

log = logging.getLogger("rewardmill")


def dvc_command() -> str:
    """The dvc beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "dvc"
    return str(beside) if beside.exists() else (shutil.which("dvc") or "dvc")


def dvc(*args: str) -> None:
    """`dvc ARGS`, its output to the terminal as it runs; a failure names the command."""
    command = [dvc_command(), *args]
    if subprocess.run(command).returncode != 0:
        raise UserError(
            f"`{' '.join(['dvc', *args])}` failed (its output is above); fix what it says and rerun "
            "`rewardmill repro`: the rounds go on from params.yaml's sizes and the caches"
        )


def stage_folders(data: str) -> list[str]:
    """The outputs of the stages with a budget: data/rollouts, data/labels/<key>, data/steps/<key>."""
    params = read_params()
    return [
        storage.join(data, "rollouts"),
        *(storage.join(data, "labels", key) for key in params.get("labelers") or {}),
        *(storage.join(data, "steps", key) for key in params.get("steps") or {}),
    ]


def budget_rejected(folders: list[str]) -> dict[str, int]:
    """{folder: rows rejected with reason `budget`} from each built folder's manifest."""
    found = {}
    for folder in folders:
        if (manifest := manifest_or_none(folder)) is not None:
            found[folder] = int(manifest.get("rejects", {}).get("budget", 0))
    return found


def warn_if_batched(params: dict) -> None:
    """Rounds equal one run byte for byte only with batch-invariant local models (docs/targets.md): say so when the
    rollouts sample in shared batches."""
    rollouts = params.get("rollouts") or {}
    if (rollouts.get("backend") or "transformers") == "transformers" and not rollouts.get("batch_invariant"):
        log.warning(
            "targets: rollouts.batch_invariant is off: the last round gives one run's texts, verdicts and pairs, but "
            "logprob floats may differ from a single run's in their 6th digit (the batches differ); set it, and "
            "batch_invariant on local judges, for byte-identical rounds (docs/targets.md)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rewardmill repro", description=__doc__.split("\n\n")[1])
    parser.add_argument("--record", default=".rewardmill/targets.json", help="the rounds' record (JSON)")
    parser.add_argument("--data", default="data", help="where dvc.yaml's stages write (data/prompts, data/datasets)")
    args = parser.parse_args(argv)
    from rewardmill.transforms.stage.runner import setup_logging

    setup_logging()
    path = params_path()
    params = read_params(path)
    targets = from_dict(TargetsConfig, params.get("targets") or {}, "targets")
    if not targets.wanted:
        dvc("repro")
        return 0
    warn_if_batched(params)
    sources = Sources.from_params(list(params["prompts"]["sources"]))
    fixed = [name for i, name in enumerate(sources.names) if i not in sources.base]
    log.info(
        "targets: %s; sources that can grow: %s%s",
        ", ".join(f"{c} >= {n}" for c, n in targets.wanted.items()),
        ", ".join(f"{sources.names[i]}.{'.'.join(p)} {n}" for i, s in sources.base.items() for p, n in s.items())
        or "none",
        f" (these cannot: {', '.join(fixed)})" if fixed else "",
    )
    record = run_rounds(
        targets,
        sources,
        path,
        run_dag=lambda: dvc("repro", "assemble"),
        observe=lambda: observe(
            storage.join(args.data, "prompts"),
            storage.join(args.data, "datasets"),
            list(targets.wanted),
            targets.split,
        ),
        budget_rejects=lambda: budget_rejected(stage_folders(args.data)),
    )
    log.info("targets: building what reads the final dataset (validate, export): dvc repro")
    dvc("repro")
    write_json_atomic(args.record, record)
    last = record["rounds"][-1]["observed"]["rows"]
    summary = ", ".join(f"{c} {sum(last[c].values())} of {n}" for c, n in targets.wanted.items())
    if record["met"]:
        log.info("targets: met in %d round(s): %s (record: %s)", len(record["rounds"]), summary, args.record)
        return 0
    log.error(
        "targets: not met after %d round(s) (%s): %s. Record: %s",
        len(record["rounds"]),
        {"dry": "the prompt sources ran dry", "budget": "a budget stopped them"}.get(
            record["outcome"], f"targets.max_rounds={targets.max_rounds} reached"
        ),
        summary,
        args.record,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
