"""`rewardmill` command line: run any stage outside DVC, or list them.

rewardmill run prompts
rewardmill run label math_answer --rollouts data/rollouts --out /tmp/labels
rewardmill push --repo-id owner/name --revision v1.0
rewardmill stages
"""

import argparse
import importlib
import sys

STAGES = {
    "model": "rewardmill.pipelines.model",
    "prompts": "rewardmill.pipelines.prompts",
    "rollouts": "rewardmill.pipelines.rollouts",
    "label": "rewardmill.pipelines.label",
    "steps": "rewardmill.pipelines.steps",
    "assemble": "rewardmill.pipelines.assemble",
    "evaluate": "rewardmill.pipelines.evaluate",
    "validate": "rewardmill.pipelines.validate",
    "export": "rewardmill.pipelines.export",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="rewardmill", description="Preference and process-reward dataset pipelines.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one stage (the same code `dvc repro` runs); args go to the stage")
    run.add_argument("stage", choices=sorted(STAGES))
    run.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("stages", help="list the stages")
    sub.add_parser("label", help="label a JSONL/Parquet file of rollouts outside DVC", add_help=False)
    sub.add_parser("new-labeler", help="scaffold a labeler file, its test and its params entry", add_help=False)
    sub.add_parser("push", help="upload the export folder to a Hugging Face dataset repo, tagged", add_help=False)
    own_parsers = {"label": "label_file", "new-labeler": "scaffold", "push": "push"}
    if argv and argv[0] in own_parsers:  # these parse their own arguments
        importlib.import_module(f"rewardmill.pipelines.{own_parsers[argv[0]]}").main(argv[1:])
        return 0
    args = parser.parse_args(argv)
    if args.command == "stages":
        for name, module in STAGES.items():
            doc = (importlib.import_module(module).__doc__ or "").strip().splitlines()[0]
            print(f"{name:10s} {doc}")
        return 0
    importlib.import_module(STAGES[args.stage]).main(args.args)
    if args.stage == "steps":
        _exit_now()
    return 0


def _exit_now() -> None:
    """End a finished steps stage without interpreter teardown. Its outputs are written and renamed into place by
    now, but in `dvc repro` the process sometimes aborted at exit ("terminate called without an active exception",
    exit -6: a native thread still joinable at teardown), which DVC reports as a failed stage. A vLLM engine is shut
    down first, so no engine process outlives the stage."""
    import logging
    import os

    if "rewardmill.transforms.sampling.vllm_engine" in sys.modules:
        sys.modules["rewardmill.transforms.sampling.vllm_engine"].shutdown_engines()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
