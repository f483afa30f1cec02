"""``/debug/pprof/``: the Python equivalent of Go's profiling endpoints.

kube-scheduler serves ``net/http/pprof`` when ``enableProfiling`` (``--profiling``) is on,
and turns on Go's block profile with ``enableContentionProfiling``. Go's profiles describe
goroutines and the Go heap, which a Python process does not have, so ksched serves what
answers the same questions about itself, as text (not pprof's protobuf):

* ``profile?seconds=N`` (default 30) — a sampling CPU profile: a thread reads every
  thread's stack (``sys._current_frames``) 100 times a second for N seconds, as Go's
  profiler samples at 100 Hz, and answers the stacks in the "folded" format
  (``outer;inner;leaf count``, one line per distinct stack, the format flame-graph tools
  read). Samples of threads that are waiting (the event loop's ``select``, a lock, a
  sleep) are left out, so the profile shows where CPU goes; a call into the Rust core,
  which releases the GIL, shows as the Python frame that made it. One profile at a time,
  as Go (a second request is ``500``).
* ``block`` and ``mutex`` (only with contention profiling) — the same sampler runs in
  the background at 10 Hz from the first request on and counts the stacks of threads
  blocked on a lock or a condition (Go's block profile counts blocking events since it
  was enabled).
* ``goroutine?debug=1|2`` — every asyncio task with its coroutine stack, and every
  thread with its stack (``debug=2``: one block per task, as Go's full dump).
* ``heap`` and ``allocs`` — live objects by type (count and shallow size) from the
  garbage collector, the largest first.
* ``threadcreate`` — the threads.

``symbol`` (Go symbol lookup) and ``trace`` (Go's execution tracer) have no Python
meaning and are not served (404); ``cmdline`` is not served either, as upstream's
handler chain does not route it.
"""

from __future__ import annotations

import asyncio
import gc
import html
import sys
import threading
import time
import traceback
from collections import Counter
from types import FrameType
from typing import Any

__all__ = ["PROFILES", "ProfileBusy", "Profiler"]

#: Functions a thread is waiting in (its top frame), by (file name suffix, function).
_WAITING: frozenset[tuple[str, str]] = frozenset(
    {
        ("selectors.py", "select"),
        ("threading.py", "wait"),
        ("threading.py", "_wait_for_tstate_lock"),
        ("threading.py", "join"),
        ("queue.py", "get"),
        ("socket.py", "accept"),
    }
)
_BLOCKED: frozenset[tuple[str, str]] = frozenset(
    {
        ("threading.py", "wait"),
        ("threading.py", "_wait_for_tstate_lock"),
        ("threading.py", "acquire"),
        ("queue.py", "get"),
    }
)

#: The profiles the index lists: name → description (Go's index layout).
PROFILES: dict[str, str] = {
    "allocs": "Live objects by type (the garbage collector's view; Python has no "
    "allocation sampling by default).",
    "block": "Stacks of threads blocked on a lock or condition, sampled at 10 Hz since "
    "the first request (needs contention profiling).",
    "goroutine": "Stack traces of every asyncio task and every thread.",
    "heap": "Live objects by type, count and shallow size.",
    "mutex": "Same samples as block (Python locks have no separate holder profile).",
    "profile": "CPU profile: folded stacks sampled at 100 Hz for ?seconds= (default 30).",
    "threadcreate": "The threads of the process.",
}


class ProfileBusy(Exception):
    """A CPU profile is already being taken."""


def _key(frame: FrameType) -> tuple[str, str]:
    code = frame.f_code
    return code.co_filename.rsplit("/", 1)[-1], code.co_name


def _folded(frame: FrameType | None) -> str:
    names = []
    while frame is not None:
        code = frame.f_code
        names.append(f"{code.co_name} ({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        frame = frame.f_back
    return ";".join(reversed(names))


class Profiler:
    """Stack sampling for the profile, block and mutex endpoints."""

    def __init__(self, *, contention: bool = False) -> None:
        self.contention = contention
        self._busy = threading.Lock()
        self._blocked: Counter[str] = Counter()
        self._block_thread: threading.Thread | None = None
        self._stop = threading.Event()

    # ---- CPU --------------------------------------------------------------------

    def cpu_profile(self, seconds: float, hz: int = 100) -> tuple[Counter[str], int]:
        """Sample for ``seconds``; (folded stack → samples, total samples). Blocking:
        run it in a thread. Raises :class:`ProfileBusy` if one is running."""
        if not self._busy.acquire(blocking=False):
            raise ProfileBusy("cpu profiling already in use")
        try:
            me = threading.get_ident()
            stacks: Counter[str] = Counter()
            total = 0
            interval = 1.0 / hz
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                for ident, frame in sys._current_frames().items():
                    if ident == me or _key(frame) in _WAITING:
                        continue
                    stacks[_folded(frame)] += 1
                    total += 1
                time.sleep(interval)
            return stacks, total
        finally:
            self._busy.release()

    # ---- contention -------------------------------------------------------------

    def start_contention(self) -> None:
        if not self.contention or self._block_thread is not None:
            return
        t = threading.Thread(target=self._sample_blocked, name="pprof-block", daemon=True)
        self._block_thread = t
        t.start()

    def stop(self) -> None:
        self._stop.set()

    def _sample_blocked(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(0.1):
            for ident, frame in sys._current_frames().items():
                if ident != me and _key(frame) in _BLOCKED:
                    self._blocked[_folded(frame)] += 1

    def blocked(self) -> Counter[str]:
        self.start_contention()
        return Counter(self._blocked)


# ---- renderers ------------------------------------------------------------------------


def folded_text(stacks: Counter[str]) -> str:
    return "".join(f"{stack} {n}\n" for stack, n in stacks.most_common())


def goroutines(debug: int) -> str:
    """Asyncio tasks and threads with their stacks."""
    out: list[str] = []
    try:
        tasks = list(asyncio.all_tasks())
    except RuntimeError:
        tasks = []
    frames = sys._current_frames()
    threads = {t.ident: t for t in threading.enumerate()}
    out.append(f"goroutine profile: total {len(tasks) + len(frames)}\n")
    if debug >= 2:
        for i, task in enumerate(tasks, 1):
            out.append(f"task {i} [{task.get_name()}]:\n")
            for frame in task.get_stack():
                out.append(_frame_line(frame))
            out.append("\n")
    else:
        counts: Counter[str] = Counter()
        for task in tasks:
            counts["".join(_frame_line(f) for f in task.get_stack()) or "#\t(no frames)\n"] += 1
        for block, n in counts.most_common():
            out.append(f"{n} @ asyncio task\n{block}\n")
    for ident, frame in frames.items():
        t = threads.get(ident)
        name = t.name if t is not None else str(ident)
        out.append(f"thread {ident} [{name}]:\n")
        stack = traceback.extract_stack(frame)
        for fs in stack:
            out.append(f"#\t{fs.name}\t{fs.filename}:{fs.lineno}\n")
        out.append("\n")
    return "".join(out)


def _frame_line(frame: Any) -> str:
    code = frame.f_code
    return f"#\t{code.co_name}\t{code.co_filename}:{frame.f_lineno}\n"


def heap() -> str:
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        counts[name] += 1
        try:
            sizes[name] += sys.getsizeof(obj)
        except TypeError:
            continue
    lines = [f"heap profile: {sum(counts.values())} objects, {sum(sizes.values())} bytes\n"]
    lines.append(
        f"gc: counts {gc.get_count()}, collections {[s['collections'] for s in gc.get_stats()]}\n"
    )
    for name, n in counts.most_common(200):
        lines.append(f"{n}: {sizes[name]} [{name}]\n")
    return "".join(lines)


def threads() -> str:
    ts = threading.enumerate()
    lines = [f"threadcreate profile: total {len(ts)}\n"]
    for t in ts:
        lines.append(f"{t.ident} {t.name} daemon={t.daemon}\n")
    return "".join(lines)


def index(contention: bool) -> str:
    """Go's ``/debug/pprof/`` page, with ksched's profiles."""
    rows = []
    for name, desc in PROFILES.items():
        if name in ("block", "mutex") and not contention:
            continue
        rows.append(
            f"<tr><td><a href='{name}?debug=1'>{html.escape(name)}</a></td>"
            f"<td>{html.escape(desc)}</td></tr>"
        )
    return (
        "<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n/debug/pprof/\n<br>\n"
        "<p>ksched (Python): text profiles; the CPU profile is in folded-stack format</p>\n"
        "<br>\nTypes of profiles available:\n<table>\n<thead><td>Profile</td>"
        "<td>Description</td></thead>\n" + "\n".join(rows) + "\n</table>\n"
        '<a href="goroutine?debug=2">full goroutine stack dump</a>\n<br>\n</body>\n</html>\n'
    )
