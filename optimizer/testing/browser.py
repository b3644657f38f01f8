"""A headless Chromium driven over the DevTools protocol on a pipe: no driver, no package beyond the browser.

`chromium --remote-debugging-pipe` reads protocol messages on its fd 3 and writes them on fd 4, each a
JSON object ended by a NUL byte. That is all a review walk needs: open a page, wait until a script says
it has rendered, read values from it, take a screenshot. The browser is the distribution's package
(`apt-get install chromium`); `find_chromium` says where it is, or None.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome")


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    return next((path for name in NAMES if (path := shutil.which(name))), None)


class Chromium:
    """One headless browser with one page. Use as a context manager; it is stopped on exit."""

    def __init__(self, executable: str, *, width: int = 1500, height: int = 1100) -> None:
        self.executable = executable
        self.size = (width, height)
        self._next_id = 0
        self._buffer = b""

    def __enter__(self) -> Chromium:
        self._profile = tempfile.TemporaryDirectory(prefix="acon-chromium-")
        to_browser, self._send_fd = os.pipe()
        self._recv_fd, from_browser = os.pipe()

        def protocol_fds() -> None:  # in the child: the browser expects its input on fd 3, its output on fd 4
            inbound, outbound = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10), fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)
            os.dup2(inbound, 3)
            os.dup2(outbound, 4)

        command = [
            self.executable,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--no-sandbox",  # root in a container: the setuid sandbox cannot start there
            f"--window-size={self.size[0]},{self.size[1]}",
            f"--user-data-dir={self._profile.name}",
            "about:blank",
        ]
        try:
            # fds 3 and 4 are kept through exec (the parent's own, if any, are replaced in the child only).
            self.process = subprocess.Popen(
                command, pass_fds=(3, 4), preexec_fn=protocol_fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        finally:
            os.close(to_browser)
            os.close(from_browser)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        target = page["targetId"] if page else self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.process.poll() is None:
                self._send({"id": self._take_id(), "method": "Browser.close"})
                self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(10)
        finally:
            os.close(self._send_fd)
            os.close(self._recv_fd)
            self._profile.cleanup()

    # Protocol -----------------------------------------------------------------------------------------

    def call(self, method: str, *, session: bool = False, timeout_s: float = 30.0, **params: Any) -> dict:
        message: dict[str, Any] = {"id": self._take_id(), "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") != message["id"]:
                continue  # an event, or the reply to an earlier call that timed out
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error'].get('message')}")
            return reply.get("result", {})

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._recv_fd], [], [], left)
            if ready:
                chunk = os.read(self._recv_fd, 1 << 20)
                if not chunk:
                    raise BrowserError("the browser closed its protocol pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    # Pages ----------------------------------------------------------------------------------------------

    def open(self, url: str) -> None:
        result = self.call("Page.navigate", session=True, url=url)
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails'].get('text')}: {expression[:200]}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout_s: float = 60.0, what: str = "") -> Any:
        """Poll `expression` until it is truthy; returns its value. While the page loads it may throw."""
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (error) {{ return null; }} }})()"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(guarded)
            if value:
                return value
            time.sleep(0.25)
        raise BrowserError(f"timed out after {timeout_s:.0f}s waiting for {what or expression[:200]}")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
