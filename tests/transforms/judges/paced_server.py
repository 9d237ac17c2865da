"""A real OpenAI-compatible HTTP server on 127.0.0.1 whose only behaviour is its pace: each chat completion takes
`seconds`, either strictly one at a time (`serial=True`: a lock, as `transformers serve` on a CPU) or all at once
(a server with room for every request).

It stands in for a served model where the timing is the point of the test: `transformers serve` on the default model
is too slow and its timing too variable on a shared 2-core machine to show, within a unit test's seconds, what a
concurrency setting does to it. Like a real serial server, it finishes a request whose client gave up (timed out):
the work is done, only the answer is lost. It counts requests and the most in flight at once; the requests numbered
in `refuse` (0-based, in arrival order) get an immediate 503, as an overloaded server answers.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class PacedServer:
    """`with PacedServer(0.1, serial=True) as server:` then point clients at `server.url + "/v1"`."""

    def __init__(self, seconds: float, serial: bool, reply: str = "Yes", refuse: range = range(0)):
        self.seconds, self.serial, self.reply, self.refuse = seconds, serial, reply, refuse
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._count = threading.Lock()
        self._busy = threading.Lock()  # held while a serial server works on one request
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "PacedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _work(self) -> bool:
        """Serve one request at the server's pace; False for a refused one."""
        with self._count:
            number = self.requests
            self.requests += 1
            if number in self.refuse:
                return False
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.serial:
                with self._busy:
                    time.sleep(self.seconds)
            else:
                time.sleep(self.seconds)
        finally:
            with self._count:
                self.in_flight -= 1
        return True

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # /v1/models, /health
                self._send(200, {"object": "list", "data": []})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if server._work():
                    self._send(200, completion(body.get("model", ""), server.reply))
                else:
                    self._send(503, {"error": {"message": "overloaded", "type": "server_error"}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up on this request: its answer is lost, the work was done
                    self.close_connection = True

        return Handler


def completion(model: str, text: str) -> dict:
    """An OpenAI chat.completion object with one choice."""
    return {
        "id": "chatcmpl-paced",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
    }
