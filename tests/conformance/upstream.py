"""Run cases through upstream's code: the ``ksched-conformance`` Go program.

The program (``tests/conformance/harness``, built by ``hack/build-control-plane.sh`` into
the control-plane binary directory) reads cases as JSON lines on stdin and writes one
result line per case, in order. :class:`Upstream` keeps one process for a whole run: a
thread feeds it the cases while the caller reads the results, so the Go side and
ksched's side of a run proceed in parallel. A case the program cannot run (an object
the API server would refuse, a bad configuration) comes back with ``error`` set.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ksched.testing.controlplane import ensure_binaries

BINARY = "ksched-conformance"

Obj = dict[str, Any]


def binary() -> Path:
    """The harness binary: ``$KSCHED_CONFORMANCE_BIN``, else the control-plane binary
    directory (built on demand, see :func:`ksched.testing.controlplane.ensure_binaries`)."""
    if preset := os.environ.get("KSCHED_CONFORMANCE_BIN"):
        return Path(preset)
    return ensure_binaries() / BINARY


class Upstream:
    """One ``ksched-conformance`` process; :meth:`run` streams cases through it."""

    def __init__(self, path: Path | None = None, *, verbosity: int | None = None) -> None:
        self.path = path or binary()
        args = [str(self.path)]
        if verbosity is not None:
            args.append(f"-v={verbosity}")
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if verbosity is not None else subprocess.DEVNULL,
        )

    def run(self, cases: Iterable[Obj]) -> Iterator[tuple[Obj, Obj]]:
        """``(case, result)`` for every case, in order; the cases are written by a
        thread while results are read."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        sent: list[Obj] = []
        lock = threading.Condition()
        done = False
        error: list[BaseException] = []

        def feed() -> None:
            nonlocal done
            assert proc.stdin is not None
            try:
                for case in cases:
                    line = json.dumps(case, separators=(",", ":")).encode() + b"\n"
                    with lock:
                        sent.append(case)
                        lock.notify_all()
                    proc.stdin.write(line)
                    proc.stdin.flush()
            except BaseException as exc:  # surfaced to the reader
                error.append(exc)
            finally:
                with lock:
                    done = True
                    lock.notify_all()

        writer = threading.Thread(target=feed, name="conformance-feed", daemon=True)
        writer.start()
        i = 0
        while True:
            with lock:
                while i >= len(sent) and not done:
                    lock.wait()
                if i >= len(sent):
                    break
                case = sent[i]
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{BINARY} exited with {proc.wait()} before answering")
            yield case, json.loads(line)
            i += 1
        writer.join()
        if error:
            raise error[0]

    def one(self, case: Obj) -> Obj:
        """The result of one case."""
        return next(r for _, r in self.run([case]))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
