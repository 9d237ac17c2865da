"""A local batch endpoint: the OpenAI Batch API's files and batches endpoints on top of vLLM's batch runner.

Each batch runs `vllm run-batch` (the CPU or GPU build) on its input file with the server's model, then its result
lines are split into an output file (2xx) and an error file, as the hosted API does. `/v1/chat/completions` goes to
an `upstream` OpenAI-compatible server (a `vllm serve` of the same model), so one base URL takes a judge's online
and batch calls alike. Batches run one at a time, in order.

What it is for: on a machine with a GPU, a judge stage's whole set of calls as one offline vLLM run; and here, a
real runner behind the batch lifecycle, which a hosted service cannot be made to show on cue (expiry, partial
failure). `faults` are those cues, for tests only. Every request the runner is handed, and every online request, is
appended to `requests.jsonl` in the work folder: what was really sent, and how often.

    rewardmill batch-server --model models/policy --work batch-work [--port 8100]
        [--upstream http://127.0.0.1:8000/v1] [-- extra vllm run-batch arguments]
"""

import email.parser
import email.policy
import hashlib
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

log = logging.getLogger("rewardmill")
EXPIRED = {
    "code": "batch_expired",
    "message": "This request could not be executed before the completion window expired.",
}


@dataclass
class Faults:
    """Cues a test gives the server (a hosted service cannot be told to fail): custom ids answered with an error
    instead of their result the first time they run, batch ordinals (1 = the first batch created) that expire
    after running only the first half of their requests, and delays that hold a kill's window open."""

    fail_ids: set[str] = field(default_factory=set)
    expire_batches: set[int] = field(default_factory=set)
    hold_seconds: float = 0.0  # how long a batch stays `validating` before it runs (a kill mid-flight needs time)
    create_reply_seconds: float = 0.0  # how long the answer to `create batch` waits after the batch exists (a kill
    # between the provider creating a batch and the client recording its id)


class LocalBatchServer:
    def __init__(
        self,
        model: str,
        work: str | Path,
        runner_args: list[str] | None = None,
        upstream: str | None = None,
        faults: Faults | None = None,
        port: int = 0,
        env: dict[str, str] | None = None,
    ):
        self.model, self.work = model, Path(work)
        self.runner_args = list(runner_args or [])
        self.upstream = upstream.rstrip("/") if upstream else None
        self.faults = faults or Faults()
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}  # the runner's environment
        (self.work / "files").mkdir(parents=True, exist_ok=True)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.lock = threading.Lock()
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._threads = [
            threading.Thread(target=self.httpd.serve_forever, daemon=True),
            threading.Thread(target=self._worker, daemon=True),
        ]

    def __enter__(self) -> "LocalBatchServer":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.queue.put(None)
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def request_log(self) -> Path:
        return self.work / "requests.jsonl"

    def requests(self) -> list[dict]:
        """Every logged request: {batch, custom_id} for the runner's, {online, body_sha256} for proxied ones."""
        if not self.request_log.exists():
            return []
        return [json.loads(line) for line in self.request_log.read_text().splitlines() if line.strip()]

    # files and batches
    def add_file(self, data: bytes, filename: str, purpose: str) -> dict:
        with self.lock:
            file_id = f"file-{len(self.files) + 1:06d}"
            (self.work / "files" / file_id).write_bytes(data)
            item = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                    "filename": filename, "purpose": purpose, "status": "processed"}  # fmt: skip
            self.files[file_id] = item
            return item

    def create_batch(self, body: dict) -> dict:
        if body.get("input_file_id") not in self.files:
            raise KeyError(f"no file {body.get('input_file_id')!r}")
        with self.lock:
            batch_id = f"batch-{len(self.batches) + 1:06d}"
            batch = {
                "id": batch_id, "object": "batch", "endpoint": body.get("endpoint", "/v1/chat/completions"),
                "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window", "24h"),
                "status": "validating", "created_at": int(time.time()), "output_file_id": None,
                "error_file_id": None, "errors": None, "metadata": body.get("metadata"),
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
            }  # fmt: skip
            self.batches[batch_id] = batch
        self.queue.put(batch_id)
        return dict(batch)

    def list_batches(self, path: str) -> dict:
        """GET /v1/batches: newest first, `limit` per page, the page after the id `after` (the API's cursor)."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        limit = int(query.get("limit", ["20"])[0])
        with self.lock:
            newest_first = [dict(b) for b in reversed(self.batches.values())]
        if after := query.get("after", [None])[0]:
            ids = [b["id"] for b in newest_first]
            newest_first = newest_first[ids.index(after) + 1 :] if after in ids else []
        page = newest_first[:limit]
        return {
            "object": "list", "data": page, "has_more": len(newest_first) > limit,
            "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None,
        }  # fmt: skip

    def _set(self, batch_id: str, **values) -> None:
        with self.lock:
            self.batches[batch_id].update(values)

    def _worker(self) -> None:
        while (batch_id := self.queue.get()) is not None:
            try:
                self._run(batch_id)
            except Exception as exc:  # the batch fails, the server stays up
                log.exception("local batch server: batch %s failed", batch_id)
                self._set(batch_id, status="failed", errors={"data": [{"code": "runner_failed", "message": str(exc)}]})

    def _run(self, batch_id: str) -> None:
        time.sleep(self.faults.hold_seconds)
        batch = self.batches[batch_id]
        lines = [ln for ln in (self.work / "files" / batch["input_file_id"]).read_text().splitlines() if ln.strip()]
        requests = [json.loads(line) for line in lines]
        ordinal = int(batch_id.rsplit("-", 1)[1])
        expire = ordinal in self.faults.expire_batches
        run = requests[: len(requests) // 2] if expire else requests
        self._set(batch_id, status="in_progress", request_counts={"total": len(requests), "completed": 0, "failed": 0})
        results = self._runner(batch_id, run) if run else []
        by_id = {r["custom_id"]: r for r in results}
        output, errors = [], []
        for request in requests:
            custom_id = request["custom_id"]
            result = by_id.get(custom_id)
            if result is None:
                errors.append(
                    {"id": f"req-{custom_id[:12]}", "custom_id": custom_id, "response": None, "error": EXPIRED}
                )
            elif custom_id in self.faults.fail_ids:  # once: a resubmission of it succeeds
                self.faults.fail_ids.discard(custom_id)
                failure = {"status_code": 500, "request_id": custom_id, "body": {"error": {"message": "injected"}}}
                errors.append({**result, "response": failure, "error": None})
            elif (result.get("response") or {}).get("status_code", 500) < 300 and not result.get("error"):
                output.append(result)
            else:
                errors.append(result)
        self._set(batch_id, status="finalizing")
        files = {}
        for name, rows in (("output_file_id", output), ("error_file_id", errors)):
            if rows:
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                files[name] = self.add_file(data, f"{batch_id}-{name}.jsonl", "batch_output")["id"]
        counts = {"total": len(requests), "completed": len(output), "failed": len(errors)}
        self._set(batch_id, status="expired" if expire else "completed", request_counts=counts, **files)

    def _runner(self, batch_id: str, requests: list[dict]) -> list[dict]:
        """vLLM's batch runner over `requests`, each logged first; its output lines."""
        folder = self.work / batch_id
        folder.mkdir(exist_ok=True)
        (folder / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
        with self.request_log.open("a") as fh:
            for r in requests:
                fh.write(json.dumps({"batch": batch_id, "custom_id": r["custom_id"]}) + "\n")
        # the launcher module, not the `vllm` command: the CPU build's command looks for the `vllm` distribution
        command = [sys.executable, "-m", "vllm.entrypoints.launchers.run_batch", "-i", str(folder / "in.jsonl"),
                   "-o", str(folder / "out.jsonl"), "--model", self.model, *self.runner_args]  # fmt: skip
        with (folder / "runner.log").open("wb") as out:
            out.write((" ".join(command) + "\n").encode())  # the log starts with what ran
            out.flush()
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        if done.returncode != 0:
            tail = (folder / "runner.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"vllm run-batch exited with {done.returncode}: {tail}")
        text = (folder / "out.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def online(self, body: bytes) -> tuple[int, bytes]:
        """A chat completion, sent to the upstream server and logged."""
        if self.upstream is None:
            return 404, json.dumps({"error": {"message": "no upstream server for online requests"}}).encode()
        with self.request_log.open("a") as fh:
            fh.write(json.dumps({"online": True, "body_sha256": hashlib.sha256(body).hexdigest()}) + "\n")
        request = urllib.request.Request(
            f"{self.upstream}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


def _multipart(headers, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body -> field name -> (filename, bytes)."""
    head = f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return out


def _handler(server: LocalBatchServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # quiet: the request log is the record
            pass

        def _send(self, status: int, payload) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self):
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts == ["health"]:
                return self._send(200, {"status": "ok"})
            if parts == ["v1", "batches"]:
                return self._send(200, server.list_batches(self.path))
            if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in server.batches:
                with server.lock:
                    return self._send(200, dict(server.batches[parts[2]]))
            if parts[:2] == ["v1", "files"] and len(parts) >= 3 and parts[2] in server.files:
                if len(parts) == 4 and parts[3] == "content":
                    return self._send(200, (server.work / "files" / parts[2]).read_bytes())
                return self._send(200, server.files[parts[2]])
            return self._send(404, {"error": {"message": f"no such resource: {self.path}"}})

        def do_POST(self):
            parts = self.path.split("?")[0].strip("/").split("/")
            body = self._body()
            try:
                if parts == ["v1", "files"]:
                    fields = _multipart(self.headers, body)
                    filename, data = fields["file"]
                    purpose = fields.get("purpose", (None, b"batch"))[1].decode()
                    return self._send(200, server.add_file(data, filename or "upload.jsonl", purpose))
                if parts == ["v1", "batches"]:
                    created = server.create_batch(json.loads(body))
                    time.sleep(server.faults.create_reply_seconds)
                    return self._send(200, created)
                if parts[:2] == ["v1", "batches"] and len(parts) == 4 and parts[3] == "cancel":
                    server._set(parts[2], status="cancelled")
                    return self._send(200, dict(server.batches[parts[2]]))
                if parts == ["v1", "chat", "completions"]:
                    status, data = server.online(body)
                    return self._send(status, data)
            except (KeyError, ValueError) as exc:
                return self._send(400, {"error": {"message": str(exc)}})
            return self._send(404, {"error": {"message": f"no such endpoint: {self.path}"}})

    return Handler
