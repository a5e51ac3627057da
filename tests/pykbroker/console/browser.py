"""Headless Chromium driven over the Chrome DevTools Protocol, for the console's browser tests.

Chromium runs with ``--remote-debugging-pipe``: it reads commands from its fd 3 and writes answers and
events to its fd 4, each a JSON message ended by a NUL byte, so no WebSocket client is needed. The page
is one target attached in flat mode (commands carry its ``sessionId``). Tests act as a person would
through the page's own DOM (fill an input, click a button) with ``Runtime.evaluate``, wait on conditions
with deadlines, and keep full-page screenshots.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

# JavaScript helpers the tests call: fill an input as typing would (input + change events), click.
HELPERS = """
window.__fill = (id, value) => { const e = document.getElementById(id); e.value = value;
  e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); };
window.__click = (id) => document.getElementById(id).click();
window.__text = (id) => document.getElementById(id).textContent;
window.confirm = () => true;
"""


class BrowserError(AssertionError):
    pass


class Browser:
    """One headless Chromium with one page; ``close()`` (or ``with``) ends the process."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()

        def fds_3_and_4() -> None:  # in the child: its command pipe as fd 3, its answer pipe as fd 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--remote-debugging-pipe", "--no-first-run", "--disable-extensions", "--disable-background-networking",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False,
            preexec_fn=fds_3_and_4)
        os.close(to_child_r)
        os.close(from_child_w)
        self._out = os.fdopen(to_child_w, "wb", buffering=0)
        self._in = os.fdopen(from_child_r, "rb", buffering=0)
        self._answers: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.width, self.height = width, height
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": HELPERS}, session=True)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self._in.read(65536)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                message, buf = buf.split(b"\0", 1)
                data = json.loads(message)
                if "id" in data:
                    with self._lock:
                        q = self._answers.get(data["id"])
                    if q is not None:
                        q.put(data)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
             timeout: float = 60) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            mid = self._next_id
            q: queue.Queue = queue.Queue()
            self._answers[mid] = q
        message: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode() + b"\0")
        try:
            answer = q.get(timeout=timeout)
        except queue.Empty:
            raise BrowserError(f"Chromium did not answer {method} within {timeout}s") from None
        finally:
            with self._lock:
                self._answers.pop(mid, None)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def eval(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait("document.readyState === 'complete' && !!window.__fill")

    def wait(self, expression: str, timeout: float = 30) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except BrowserError:
                value = None  # e.g. between two documents
            if value:
                return value
            time.sleep(0.1)
        where = self.eval("[location.hash, document.body.dataset.view, document.getElementById('status')?.textContent]")
        raise BrowserError(f"still false after {timeout}s: {expression} (page {where[0]!r}, view {where[1]!r}, "
                           f"status bar {where[2]!r})")

    def fill(self, element_id: str, value: str) -> None:
        self.eval(f"__fill({json.dumps(element_id)}, {json.dumps(value)})")

    def click(self, element_id: str) -> None:
        self.eval(f"__click({json.dumps(element_id)})")

    def text(self, element_id: str) -> str:
        return str(self.eval(f"__text({json.dumps(element_id)})"))

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (not only the window) at ``path``."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": max(size["width"], self.width), "height": min(size["height"], 4000), "scale": 1}},
            session=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for f in (self._out, self._in):
            try:
                f.close()
            except OSError:
                pass

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
