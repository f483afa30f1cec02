"""``ksched run`` as a child process, for integration tests of leader election, the
HTTPS endpoints and the deployment's RBAC.

:class:`KschedProcess` starts ``python -m ksched run ...`` with its log in a file and a
free loopback port for the endpoints, and offers what the tests need: wait for a log
line, signal or SIGKILL it, and :meth:`KschedProcess.get` an endpoint over HTTPS (the
certificate is self-signed, so it is not verified) anonymously, with a bearer token or
with a client certificate.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["KschedProcess", "free_port", "write_scheduler_config"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_scheduler_config(path: Path, doc: Mapping[str, Any]) -> Path:
    """A ``KubeSchedulerConfiguration`` file (JSON is YAML)."""
    full = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **doc,
    }
    path.write_text(json.dumps(full, indent=2))
    return path


class KschedProcess:
    """One ``ksched run`` child process serving HTTPS on ``port`` (loopback)."""

    def __init__(
        self,
        args: Sequence[str],
        log: Path,
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log = log
        self.port = port if port is not None else free_port()
        self._out = open(log, "wb")  # noqa: SIM115 - closed in stop()
        argv = [
            sys.executable,
            "-m",
            "ksched",
            "run",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            *args,
        ]
        self.proc = subprocess.Popen(
            argv,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for_log(self, needle: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            if self.proc.poll() is not None:
                raise AssertionError(f"ksched exited ({self.proc.returncode}):\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not logged in {timeout}s:\n{self.text()}")
            time.sleep(0.02)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        with contextlib.suppress(OSError):
            self._out.close()

    def get(
        self,
        path: str,
        *,
        token: str | None = None,
        cert: tuple[Path, Path] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, str]:
        """GET ``https://127.0.0.1:<port><path>``; returns ``(status, body)``."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        req = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}", headers=headers)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Until ``/livez`` answers (whatever the status)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"ksched exited ({self.proc.returncode}):\n{self.text()}")
            with contextlib.suppress(OSError):
                self.get("/livez", timeout=2)
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not serving after {timeout}s:\n{self.text()}")
            time.sleep(0.05)
