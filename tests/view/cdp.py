"""Headless Chromium driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages ending in NUL on fds 3 and 4), so
a test can click an element as a person would, with no extra package."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path

from audit_html.test_chromium import CHROMIUM

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Generous bounds on a wait, so a broken page fails the test instead of hanging it.
WAIT = 30.0


class Browser:
    """One Chromium with one page (`tab`); use as a context manager."""

    def __init__(self, profile: Path):
        to_chrome, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome = os.pipe()
        # Out of the way of 3 and 4 first, so the child's dup2 cannot clobber one with the other.
        keep = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome, from_chrome)]
        os.close(to_chrome)
        os.close(from_chrome)

        def fds() -> None:
            os.dup2(keep[0], 3)
            os.dup2(keep[1], 4)

        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4, *keep),
            preexec_fn=fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in keep:
            os.close(fd)
        self._buf = b""
        self._next = 0
        self._events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait(timeout=WAIT)
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def _read(self) -> dict:
        deadline = time.monotonic() + WAIT
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._from_chrome], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._from_chrome, 1 << 16) if ready else b""
            if not chunk:
                raise AssertionError("Chromium stopped answering")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                assert "error" not in reply, reply["error"]
                return reply["result"]
            self._events.append(reply)

    def _wait_for(self, method: str) -> None:
        while True:
            found = next((e for e in self._events if e.get("method") == method), None)
            if found is not None:
                self._events.remove(found)
                return
            self._events.append(self._read())

    def load(self, url: str) -> None:
        self._events.clear()
        self.call("Page.navigate", session=True, url=url)
        self._wait_for("Page.loadEventFired")
        self.ready()

    def navigated(self) -> None:
        """Wait for the navigation the last action started, and the page's script."""
        self._wait_for("Page.loadEventFired")
        self.ready()

    def js(self, expression: str):
        """The value of `expression` in the page (a test's own script, not the page's)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def ready(self) -> None:
        """Wait until the viewer's script has finished with the page (it sets
        `data-ready` on the body, in an export after reading the rows)."""
        deadline = time.monotonic() + WAIT
        while self.js("document.body && document.body.getAttribute('data-ready')") != "1":
            assert time.monotonic() < deadline, "the page's script never finished"
            time.sleep(0.05)

    def click(self, selector: str, index: int = 0, navigates: bool = True) -> None:
        """A left click in the middle of the `index`th element matching `selector`."""
        box = self.js(
            f"(() => {{ const e = document.querySelectorAll({json.dumps(selector)})[{index}]; e.scrollIntoView(); "
            "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        self._events.clear()
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1], button="left", clickCount=1
            )
        if navigates:
            self.navigated()
