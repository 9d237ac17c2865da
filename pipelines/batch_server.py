"""`rewardmill batch-server`: the OpenAI Batch API's files and batches endpoints on this machine, each batch run by
vLLM's batch runner on a local model (transforms/batch/local_server.py). Point a judge's backend at it with a
`batch:` block, and a label stage's calls run as one offline vLLM job per round.

    rewardmill batch-server --model models/policy --work batch-work [--port 8100] \
        [--upstream http://127.0.0.1:8000/v1] [-- --dtype float32 --enforce-eager]

Arguments after `--` go to `vllm run-batch` as they are. `--upstream` is an OpenAI-compatible server of the same
model for the online calls (the same base URL then takes both).
"""

import argparse
import logging
import threading

from rewardmill.transforms.batch.local_server import LocalBatchServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rewardmill batch-server", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="the model folder vLLM's batch runner loads")
    parser.add_argument("--work", required=True, help="folder for the files, the runs and requests.jsonl")
    parser.add_argument("--port", type=int, default=8100, help="port on 127.0.0.1")
    parser.add_argument("--upstream", default=None, help="an OpenAI-compatible server for online requests")
    args, runner = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    runner = [a for a in runner if a != "--"]
    with LocalBatchServer(args.model, args.work, runner, args.upstream, port=args.port) as server:
        print(f"batch server on {server.url} (model {args.model}); Ctrl-C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    main()
