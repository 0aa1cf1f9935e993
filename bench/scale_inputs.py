"""Inputs and probes of `bench/downstream_scale.py`: large cards files built from real ones, and
the load time of an HTML page in headless Chromium (DevTools protocol over a pipe, no extra
package).

A large file is the Wan 2.1 14B cards (`reports/record/cards_wan14b_every_op_480x832.json`,
written by `reports/regenerate.sh` from fixtures/record_h200_wan14b: 253 real H200 cards, 392
kernels, with coverage and the program's own times) copied C times: copy c renames every
stage `S` to `S.cNNN` (its group ids and coverage rows follow), so each copy is a stage of its
own, as a folder of loose reports gives. The `variant` 1 file (the candidate of a diff)
changes a few numbers deterministically: every 7th card is 12 % slower (its kernels' `dur_us`
and the card's sums), every 23rd is left out (removed), so a diff has work to report.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "reports" / "record" / "cards_wan14b_every_op_480x832.json"


def base_doc() -> dict[str, Any]:
    """The real cards document every large file is copied from."""
    doc: dict[str, Any] = json.loads(BASE.read_text(encoding="utf-8"))
    return doc


def kernels_of(doc: dict[str, Any]) -> int:
    """Kernels in a cards document."""
    return sum(len(card.get("kernels") or []) for card in doc["cards"])


def _renamed(card: dict[str, Any], copy: int) -> dict[str, Any]:
    """A deep copy of `card` in stage `S.cNNN`, its group id renamed along."""
    out: dict[str, Any] = json.loads(json.dumps(card))
    stage = f"{card['stage']}.c{copy:03d}"
    out["stage"] = stage
    group = str(card["group"])
    prefix = f"{card['stage']}:"
    out["group"] = stage + ":" + group[len(prefix) :] if group.startswith(prefix) else group
    for kernel in out.get("kernels") or []:
        if kernel.get("nvtx_range") == group:
            kernel["nvtx_range"] = out["group"]
    return out


def _slower(card: dict[str, Any], factor: float) -> None:
    """Every kernel of `card` and its sums `factor` times slower, in place."""
    for kernel in card.get("kernels") or []:
        metrics = kernel.get("metrics") or {}
        if isinstance(metrics.get("dur_us"), (int, float)):
            metrics["dur_us"] = round(metrics["dur_us"] * factor, 3)
    if isinstance(card.get("summed_kernel_us"), (int, float)):
        card["summed_kernel_us"] = round(card["summed_kernel_us"] * factor, 3)


def build(doc: dict[str, Any], copies: int, variant: int) -> str:
    """The text of a cards file of `copies` renamed copies of `doc`'s cards (one card per line,
    as `classify` writes them); variant 1 is the diff's candidate (see the module text)."""
    cards: list[str] = []
    coverage: list[dict[str, Any]] = []
    index = 0
    for copy in range(copies):
        for card in doc["cards"]:
            index += 1
            if variant and index % 23 == 0:
                continue
            out = _renamed(card, copy)
            if variant and index % 7 == 0:
                _slower(out, 1.12)
            cards.append("    " + json.dumps(out, ensure_ascii=False, separators=(",", ":")))
        for row in doc.get("coverage") or []:
            coverage.append({**row, "stage": f"{row['stage']}.c{copy:03d}"})
    head = {k: v for k, v in doc.items() if k not in ("cards", "coverage", "by_stage", "summary")}
    head.update(summary={}, by_stage={}, coverage=coverage)
    parts = [f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in head.items()]
    parts.append('  "cards": [\n' + ",\n".join(cards) + "\n  ]")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def find_chromium() -> str | None:
    """A Chromium (or Chrome) binary on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _Pipe:
    """Chromium's DevTools protocol over --remote-debugging-pipe (NUL-separated JSON)."""

    def __init__(self, browser: str, profile: Path) -> None:
        """Start a headless browser whose protocol pipe is fds 3 (to it) and 4 (from it)."""
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        argv += [f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]

        def fds() -> None:  # in the child: the pipe's ends moved to fds 3 and 4
            ours, theirs = os.dup(to_r), os.dup(from_w)
            os.dup2(ours, 3)
            os.dup2(theirs, 4)

        self.proc = subprocess.Popen(  # pass_fds keeps 3 and 4 open past close_fds
            argv,
            pass_fds=(3, 4),
            preexec_fn=fds,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its renderer and helpers are stopped with it
        )
        os.close(to_r)
        os.close(from_w)
        self.buffer = b""
        self.next_id = 0

    def send(self, method: str, session: str | None = None, **params: Any) -> int:
        """Send one command; its id."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_w, json.dumps(message).encode() + b"\0")
        return self.next_id

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message from the browser (TimeoutError past `deadline`)."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise TimeoutError("Chromium closed its pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its result (events meanwhile are dropped)."""
        wanted = self.send(method, session, **params)
        deadline = time.monotonic() + 300
        while True:
            message = self.receive(deadline)
            if message.get("id") == wanted:
                result: dict[str, Any] = message.get("result", {})
                return result

    def close(self) -> None:
        """Stop the browser and every process it started (they write into the profile)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)


PROBE = (
    "JSON.stringify({nav: performance.getEntriesByType('navigation')[0].toJSON(),"
    " ready: document.body && document.body.dataset.ready || null,"
    " nodes: document.getElementsByTagName('*').length})"
)


def page_load(browser: str, page: Path) -> dict[str, Any]:
    """Open `page` in a fresh headless Chromium and return the wall seconds from navigation to
    the load event, the page's own DOMContentLoaded and load figures (Navigation Timing, ms),
    whether its script reached its end (`data-ready`) and its element count."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        pipe = _Pipe(browser, Path(profile))
        try:
            target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)
            sid = session["sessionId"]
            pipe.call("Page.enable", sid)
            start = time.monotonic()
            pipe.send("Page.navigate", sid, url=page.as_uri())
            deadline = start + 300
            while pipe.receive(deadline).get("method") != "Page.loadEventFired":
                pass
            wall = time.monotonic() - start
            value = pipe.call("Runtime.evaluate", sid, expression=PROBE, returnByValue=True)
            seen = json.loads(value["result"]["value"])
        finally:
            pipe.close()
    nav = seen["nav"]
    return {
        "load_wall_s": wall,
        "dom_content_loaded_ms": nav["domContentLoadedEventEnd"],
        "load_event_ms": nav["loadEventEnd"],
        "ready": seen["ready"] == "1",
        "elements": seen["nodes"],
    }
