"""`rewardmill` command line: run any stage outside DVC, or list them.

rewardmill run check                             # every params section, labeler name and input, before any model
rewardmill run prompts
rewardmill run label math_answer --rollouts data/rollouts --out /tmp/labels
rewardmill push --repo-id owner/name --revision v1.0
rewardmill stages
rewardmill plan                                  # requests, tokens and money per stage, before any is spent
rewardmill new-environment my_env                # scaffold a multi-turn environment, its test and registry entry
rewardmill audit --skip-judges                   # each labeler's precision and hack pass rate on the gold packs
rewardmill --params other.yaml run assemble      # any params file (REWARDMILL_PARAMS does the same)

A user's mistake (a params key, a missing input folder, an unknown labeler) prints one line saying what is wrong and
how to fix it, and exits 2; `--debug` prints the traceback as well.
"""

import argparse
import ast
import importlib
import importlib.util
import logging
import os
import sys
from importlib import metadata
from pathlib import Path

from rewardmill.transforms.errors import is_user_error

STAGES = {
    "check": "rewardmill.pipelines.check",
    "model": "rewardmill.pipelines.model",
    "prompts": "rewardmill.pipelines.prompts",
    "rollouts": "rewardmill.pipelines.rollouts",
    "rubrics": "rewardmill.pipelines.rubrics",
    "label": "rewardmill.pipelines.label",
    "steps": "rewardmill.pipelines.steps",
    "assemble": "rewardmill.pipelines.assemble",
    "evaluate": "rewardmill.pipelines.evaluate",
    "validate": "rewardmill.pipelines.validate",
    "export": "rewardmill.pipelines.export",
}
USER_ERROR = 2  # exit status of a user's mistake (argparse's own)


class _HideBeamImportNoise(logging.Filter):
    """Beam's BigQuery client logs "apitools not found ..." on the root logger at import time: noise for every
    command of a project that never touches GCP."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("apitools not found")


HIDE_BEAM_IMPORT_NOISE = _HideBeamImportNoise()  # one instance: adding it again (main called twice) is a no-op


def version() -> str:
    try:
        return metadata.version("rewardmill")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def global_options(argv: list[str]) -> tuple[list[str], str | None, bool]:
    """(argv without them, --params FILE, --debug). They may stand anywhere: before the command, after it, or among
    a stage's own arguments (no stage has options of these names). A bare --params (no file after it) gives "": only
    `stages` takes it (show the settings of params.yaml)."""
    rest, params, debug = [], None, False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--debug":
            debug = True
        elif arg == "--params":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):  # no file: `stages --params` shows the settings
                params = ""
            else:
                params, i = argv[i + 1], i + 1
        elif arg.startswith("--params="):
            params = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return rest, params, debug


def stage_summaries() -> dict[str, str]:
    """Each stage's first docstring line, read from its source: importing every stage (Beam, torch) takes seconds."""
    summaries = {}
    for name, module in STAGES.items():
        path = Path(importlib.util.find_spec(module).origin)
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        summaries[name] = doc.strip().splitlines()[0] if doc.strip() else ""
    return summaries


def main(argv: list[str] | None = None) -> int:
    logging.getLogger().addFilter(HIDE_BEAM_IMPORT_NOISE)
    argv, params, debug = global_options(list(sys.argv[1:] if argv is None else argv))
    if params is not None and argv[:1] == ["stages"]:  # `stages --params [FILE]`: each stage's settings
        argv = [*argv, "--settings"]
    if params == "":
        if argv[:1] != ["stages"]:
            print("rewardmill: error: --params needs a file", file=sys.stderr)
            return USER_ERROR
        params = None
    if params is not None:
        if not Path(params).is_file():
            hint = f" (one stage's settings: rewardmill stages {params} --params)" if argv[:1] == ["stages"] else ""
            print(f"rewardmill: error: --params {params}: no such file{hint}", file=sys.stderr)
            return USER_ERROR
        os.environ["REWARDMILL_PARAMS"] = str(Path(params).resolve())  # stages and their workers read it
    try:
        return dispatch(argv)
    except Exception as exc:
        if debug or not is_user_error(exc):
            raise
        print(f"rewardmill: error: {one_line(exc)} (--debug shows the traceback)", file=sys.stderr)
        return USER_ERROR


def one_line(exc: BaseException) -> str:
    """The message on one line: a wrapped library error (PyYAML's, Beam's "[while running ...]") may span several."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def dispatch(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="rewardmill",
        description="Preference and process-reward dataset pipelines.",
        epilog="Anywhere on the line: --params FILE (default params.yaml or $REWARDMILL_PARAMS), --debug "
        "(tracebacks for user errors).",
    )
    parser.add_argument("--version", action="version", version=f"rewardmill {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one stage (the same code `dvc repro` runs); args go to the stage")
    run.add_argument("stage", choices=sorted(STAGES))
    run.add_argument("args", nargs=argparse.REMAINDER)
    stages = sub.add_parser("stages", help="list the stages; with --params [FILE], each stage's settings")
    stages.add_argument("names", nargs="*", metavar="STAGE", help="only these stages' settings (e.g. label@panel)")
    stages.add_argument(
        "--settings", action="store_true", help="each stage's settings, defaults filled in (the same as --params)"
    )
    sub.add_parser("label", help="label a JSONL/Parquet file of rollouts outside DVC", add_help=False)
    sub.add_parser(
        "audit", help="measure each labeler's precision, recall and hack pass rate on the gold packs", add_help=False
    )
    sub.add_parser("new-labeler", help="scaffold a labeler file, its test and its params entry", add_help=False)
    sub.add_parser(
        "new-environment", help="scaffold an environment file, its test and its registry entry", add_help=False
    )
    sub.add_parser("push", help="upload the export folder to a Hugging Face dataset repo, tagged", add_help=False)
    sub.add_parser("plan", help="what each stage would send: requests, tokens, money", add_help=False)
    sub.add_parser(
        "repro", help="dvc repro; in rounds until params `targets` (rows per dataset config) are met", add_help=False
    )
    sub.add_parser(
        "batch-server", help="the OpenAI Batch API on this machine, each batch run by vLLM's batch runner",
        add_help=False,
    )  # fmt: skip
    sub.add_parser(
        "doctor", help="check the setup (Python, sandbox, model, offline mode, disk, GPU, judges)", add_help=False
    )
    sub.add_parser(
        "view", help="write a static, offline HTML page to look at a dataset folder or the export", add_help=False
    )
    own_parsers = {
        "label": "label_file",
        "audit": "audit",
        "new-labeler": "scaffold",
        "new-environment": "scaffold_environment",
        "push": "push",
        "plan": "plan",
        "repro": "repro",
        "batch-server": "batch_server",
        "doctor": "doctor",
        "view": "view",
    }
    if argv and argv[0] in own_parsers:  # these parse their own arguments
        status = importlib.import_module(f"rewardmill.pipelines.{own_parsers[argv[0]]}").main(argv[1:])
        return status if isinstance(status, int) else 0
    args = parser.parse_args(argv)
    if args.command == "stages":
        if args.settings or args.names:
            return print_settings(args.names)
        for name, summary in stage_summaries().items():
            print(f"{name:10s} {summary}")
        return 0
    from rewardmill.transforms.io import timings

    stage = f"{args.stage}@{args.args[0]}" if args.stage in ("label", "steps", "rubrics") and args.args else args.stage
    timings.start(stage)  # bench/overhead.py: off unless REWARDMILL_TIMINGS is set
    program, sys.argv[0] = sys.argv[0], f"rewardmill run {args.stage}"  # the stage's --help names the real command
    try:
        importlib.import_module(STAGES[args.stage]).main(args.args)
    finally:
        sys.argv[0] = program
    if args.stage == "steps":
        _exit_now()
    return 0


def print_settings(names: list[str]) -> int:
    """Each stage's settings as YAML, defaults filled in; a section that does not load prints its one-line error
    (and the command exits 2), the others still print."""
    import yaml

    from rewardmill.pipelines.settings import all_settings
    from rewardmill.transforms.config import params_path

    settings = all_settings()
    unknown = [n for n in names if n not in settings]
    if unknown:
        print(f"rewardmill: error: no stage {', '.join(unknown)}; stages: {', '.join(settings)}", file=sys.stderr)
        return USER_ERROR
    print(f"# {params_path()}, every default filled in")
    failed = False
    for name, value in settings.items():
        if names and name not in names:
            continue
        if isinstance(value, Exception):
            failed = True
            print(f"# {name}: does not load (see the error below)")
            print(f"rewardmill: error: {name}: {value}", file=sys.stderr)
            continue
        print(yaml.safe_dump({name: value}, sort_keys=False, default_flow_style=False, width=119).rstrip())
    return USER_ERROR if failed else 0


def _exit_now() -> None:
    """End a finished steps stage without interpreter teardown. Its outputs are written and renamed into place by
    now, but in `dvc repro` the process sometimes aborted at exit ("terminate called without an active exception",
    exit -6: a native thread still joinable at teardown), which DVC reports as a failed stage. A vLLM engine is shut
    down first, so no engine process outlives the stage."""
    if "rewardmill.transforms.sampling.vllm_engine" in sys.modules:
        sys.modules["rewardmill.transforms.sampling.vllm_engine"].shutdown_engines()
    from rewardmill.transforms.io import timings

    if timings.STAGE:  # os._exit skips atexit
        timings.write()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
