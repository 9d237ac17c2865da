"""A headless Chromium driven through chromedriver's W3C WebDriver HTTP API, with the standard library only.

No client library and nothing fetched at run time: the browser and its driver are the system's (Debian: `apt-get
install chromium chromium-driver`, which `make dev` runs as root), found on PATH. Missing ones fail the test with
the command that installs them; a test that needs a browser must not skip silently.
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = (
    "the viewer's browser test needs Chromium and its WebDriver: run `make dev` as root, or "
    "`apt-get install -y chromium chromium-driver` (Debian/Ubuntu), or put chromium and chromedriver on PATH"
)
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference


def find_tools() -> tuple[str, str]:
    """(chromedriver, browser) on PATH; fails (not skips) naming how to install them."""
    driver = shutil.which("chromedriver")
    browser = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if not driver or not browser:
        missing = [name for name, path in (("chromedriver", driver), ("chromium", browser)) if not path]
        pytest.fail(f"{' and '.join(missing)} not found: {INSTALL}", pytrace=False)
    return driver, browser


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One WebDriver session: open a file, find elements, type, click, run a script, take a screenshot."""

    def __init__(self, port: int, session: str):
        self.base = f"http://127.0.0.1:{port}/session/{session}"

    def call(self, method: str, path: str, body: dict | None = None) -> Any:
        return request(method, self.base + path, body)

    def open(self, path: Path) -> None:
        self.call("POST", "/url", {"url": path.resolve().as_uri()})

    def find(self, css: str) -> str:
        return self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def type(self, css: str, text: str) -> None:
        """Real key events into the element (focus, keydown/keypress/input/keyup per character)."""
        self.call("POST", f"/element/{self.find(css)}/value", {"text": text})

    def click(self, css: str) -> None:
        self.call("POST", f"/element/{self.find(css)}/click", {})

    def script(self, code: str, *args: Any) -> Any:
        return self.call("POST", "/execute/sync", {"script": code, "args": list(args)})

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("GET", "/screenshot")))
        return path


def request(method: str, url: str, body: dict | None = None, timeout: float = 60) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return json.loads(response.read())["value"]
    except urllib.error.HTTPError as exc:  # WebDriver errors come as JSON bodies with a message
        raise AssertionError(f"WebDriver {method} {url}: {exc.read().decode(errors='replace')[:2000]}") from None


@contextmanager
def headless_chromium(width: int = 1280, height: int = 1600):
    """A Browser on a fresh chromedriver and headless Chromium (own profile, no sandbox: tests may run as root)."""
    driver, browser = find_tools()
    port = free_port()
    with tempfile.TemporaryDirectory() as profile:
        process = subprocess.Popen(
            [driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ}
        )
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    request("GET", f"http://127.0.0.1:{port}/status", timeout=2)
                    break
                except (urllib.error.URLError, ConnectionError):
                    if time.monotonic() > deadline or process.poll() is not None:
                        pytest.fail(f"chromedriver did not start ({driver}); {INSTALL}", pytrace=False)
                    time.sleep(0.05)
            args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
            options = {
                "binary": browser,
                "args": [*args, f"--user-data-dir={profile}", f"--window-size={width},{height}"],
            }
            capabilities = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
            session = request("POST", f"http://127.0.0.1:{port}/session", capabilities)["sessionId"]
            try:
                yield Browser(port, session)
            finally:
                request("DELETE", f"http://127.0.0.1:{port}/session/{session}")
        finally:
            process.terminate()
            process.wait(timeout=10)
