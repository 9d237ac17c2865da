"""A fault-injecting HTTP proxy in front of the real OpenAI-compatible test server.

This is the one allowed fake in the judge client tests: a real server cannot be made to answer 500 or 429, or to
hang, on cue. The proxy does only that, by a deterministic schedule keyed on the request's content and attempt
number (not arrival order, which concurrency shuffles); every other attempt is forwarded to the real server and
its real answer passed back. It also counts attempts and requests in flight, and records Authorization headers.
"""

import http.client
import json
import socket
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HANG = "hang"  # hold the request without answering until the proxy stops (the client's timeout fires first)
# an HTTP status to answer with, "429:<seconds>" (429 with that Retry-After), HANG, or None = forward to the server
Fault = int | str | None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def last_user_content(body: dict) -> str:
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def schedule(faults: dict[str, list[Fault]]) -> Callable[[dict, int], Fault]:
    """Attempt k (1-based) of the request whose last user message is `content` gets faults[content][k-1]; attempts
    past the list, and requests not named, are forwarded."""

    def plan(body: dict, attempt: int) -> Fault:
        planned = faults.get(last_user_content(body), [])
        return planned[attempt - 1] if attempt <= len(planned) else None

    return plan


class FaultProxy:
    """`with FaultProxy("http://127.0.0.1:PORT", plan) as proxy:` then point clients at `proxy.url + "/v1"`.

    `attempts[content]` counts requests per last user message; `outcomes` lists (content, fault or "forwarded");
    `max_in_flight` is the most requests the proxy held at once.
    """

    def __init__(self, upstream: str, plan: Callable[[dict, int], Fault] = lambda body, attempt: None):
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname, parsed.port)
        self.plan = plan
        self.attempts: Counter[str] = Counter()
        self.outcomes: list[tuple[str, Fault | str]] = []
        self.authorizations: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()  # let hung handlers go
        self.server.shutdown()
        self.server.server_close()

    def _admit(self, body: dict, authorization: str) -> Fault:
        content = last_user_content(body)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.attempts[content] += 1
            self.authorizations.append(authorization)
            fault = self.plan(body, self.attempts[content])
            self.outcomes.append((content, fault if fault is not None else "forwarded"))
        return fault

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _forward(self, method: str, path: str, body: bytes, headers: dict) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection(*self.upstream, timeout=600)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.getheader("content-type", "application/json"), response.read()
        finally:
            conn.close()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def _reply(self, status: int, content_type: str, data: bytes, extra: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                status, content_type, data = proxy._forward("GET", self.path, b"", {})
                self._reply(status, content_type, data)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                fault = proxy._admit(body, self.headers.get("authorization", ""))
                try:
                    if fault == HANG:
                        proxy._release.wait(600)
                        self.close_connection = True
                        return
                    retry_after = "0"
                    if isinstance(fault, str) and fault.startswith("429:"):  # "429:<seconds>": a Retry-After
                        fault, retry_after = 429, fault[4:]
                    if isinstance(fault, int):
                        message = f"injected {fault} for {last_user_content(body)!r}"
                        if fault == 401:  # what hosted APIs do: echo (part of) the key back
                            message = f"Incorrect API key provided: {self.headers.get('authorization', '')[7:]}"
                        data = json.dumps({"error": {"message": message, "type": "injected", "code": fault}})
                        extra = {"retry-after": retry_after} if fault == 429 else None
                        self._reply(fault, "application/json", data.encode(), extra)
                        return
                    headers = {"content-type": self.headers.get("content-type", "application/json")}
                    status, content_type, data = proxy._forward("POST", self.path, raw, headers)
                    self._reply(status, content_type, data)
                finally:
                    proxy._leave()

        return Handler
