"""``ksched run`` as a process against the real apiserver: it schedules, it stops on
SIGTERM after finishing the bindings it started, a second signal ends it at once, and
``--leader-elect=false`` runs without a lease (leader election itself:
test_leader_election.py; the HTTPS endpoints, off here: test_endpoints.py)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.integration

Obj = dict[str, Any]


def write_config(
    path: Path, kubeconfig: Path | None, *, qps: float, burst: int, **extra: Any
) -> Path:
    doc: Obj = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": qps, "burst": burst},
        **extra,
    }
    if kubeconfig is not None:
        doc["clientConnection"]["kubeconfig"] = str(kubeconfig)
    path.write_text(yaml.safe_dump(doc))
    return path


class KschedProcess:
    """``python -m ksched run ...`` with its log in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ksched", "run", "--secure-port=0", *args],
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for_log(self, needle: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            if self.proc.poll() is not None:
                raise AssertionError(f"ksched exited ({self.proc.returncode}):\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not logged in {timeout}s:\n{self.text()}")
            time.sleep(0.05)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._out.close()


@pytest.fixture
def ksched(tmp_path: Path) -> Iterator[Callable[..., KschedProcess]]:
    started: list[KschedProcess] = []

    def start(*args: str) -> KschedProcess:
        p = KschedProcess(list(args), tmp_path / f"ksched-{len(started)}.log")
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


@pytest.fixture
def node(control_plane: ControlPlane) -> Iterator[str]:
    name = f"run-{uuid.uuid4().hex[:6]}"
    control_plane.create_node(make_node(name, cpu="8", memory="32Gi"))
    yield name
    control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def create_pods(cp: ControlPlane, namespace: str, names: list[str]) -> None:
    for name in names:
        obj = make_pod(name, namespace=namespace)
        obj.pop("status")
        status, body = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", obj)
        assert status == 201, body


def bound(cp: ControlPlane, namespace: str) -> dict[str, str]:
    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200, body
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in body["items"]
        if p["spec"].get("nodeName")
    }


def wait_until(
    cond: Callable[[], bool], proc: KschedProcess, timeout: float = 30.0, what: str = ""
) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout}s: {what}; ksched log:\n{proc.text()}")
        time.sleep(0.1)


def test_run_schedules_and_the_first_sigterm_finishes_bindings_in_flight(
    control_plane: ControlPlane,
    namespace: str,
    node: str,
    tmp_path: Path,
    ksched: Callable[..., KschedProcess],
) -> None:
    # 4 requests per second: the 12 bindings are still in flight when SIGTERM arrives.
    cfg = write_config(tmp_path / "cfg.yaml", control_plane.kubeconfig, qps=4, burst=1)
    proc = ksched("--config", str(cfg), "--leader-elect=false", "-v", "2")
    proc.wait_for_log("Caches are synced")
    create_pods(control_plane, namespace, [f"p{i:02d}" for i in range(12)])
    wait_until(lambda: len(bound(control_plane, namespace)) >= 1, proc, what="first binding")
    proc.signal(signal.SIGTERM)
    proc.wait_for_log('signal="SIGTERM"')
    create_pods(control_plane, namespace, ["late"])  # after SIGTERM: not taken
    assert proc.wait(60) == 0, proc.text()
    got = bound(control_plane, namespace)
    assert set(got) == {f"p{i:02d}" for i in range(12)}, proc.text()
    assert set(got.values()) == {node}
    log = proc.text()
    in_flight = re.search(r"bindingsInFlight=(\d+)", log)
    assert in_flight is not None and int(in_flight.group(1)) > 0, log
    assert '"Stopped" boundPods=12' in log, log


def test_a_second_signal_exits_at_once(
    control_plane: ControlPlane,
    namespace: str,
    node: str,
    tmp_path: Path,
    ksched: Callable[..., KschedProcess],
) -> None:
    cfg = write_config(tmp_path / "cfg.yaml", control_plane.kubeconfig, qps=1, burst=1)
    proc = ksched("--config", str(cfg), "--leader-elect=false", "-v", "2")
    # At one request per second the informers' initial lists alone take a second per
    # watched kind (about twenty with the volume and DynamicResources plugins), more
    # on a loaded machine.
    proc.wait_for_log("Caches are synced", timeout=120)
    create_pods(control_plane, namespace, [f"p{i:02d}" for i in range(20)])
    wait_until(lambda: len(bound(control_plane, namespace)) >= 1, proc, what="first binding")
    proc.signal(signal.SIGTERM)
    proc.wait_for_log('signal="SIGTERM"')
    t0 = time.monotonic()
    proc.signal(signal.SIGINT)
    assert proc.wait(10) == 1, proc.text()
    assert time.monotonic() - t0 < 5
    assert "again: exiting now" in proc.text()
    assert len(bound(control_plane, namespace)) < 20  # it did not wait for the bindings


def test_leader_elect_false_runs_without_a_lease(
    control_plane: ControlPlane, tmp_path: Path, ksched: Callable[..., KschedProcess]
) -> None:
    # leaderElect defaults to true in v1 configs; the flag overrides the file.
    cfg = write_config(tmp_path / "cfg.yaml", control_plane.kubeconfig, qps=50, burst=100)
    proc = ksched("--config", str(cfg), "--leader-elect=false", "-v", "2")
    proc.wait_for_log('"Scheduling"')
    assert "Attempting to acquire leader lease..." not in proc.text()
    status, leases = control_plane.request(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    )
    assert status == 200
    assert "kube-scheduler" not in {item["metadata"]["name"] for item in leases["items"]}
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0, proc.text()


def test_write_config_to_applies_the_flags_and_exits(
    tmp_path: Path, ksched: Callable[..., KschedProcess]
) -> None:
    # As upstream: next to --config, the deprecated --kubeconfig is ignored and the
    # leader election flags apply.
    cfg = write_config(tmp_path / "cfg.yaml", None, qps=20, burst=40)
    out = tmp_path / "effective.yaml"
    proc = ksched(
        "--config", str(cfg), "--kubeconfig", "/etc/k.conf", "--leader-elect=false",
        "--write-config-to", str(out),
    )  # fmt: skip
    assert proc.wait(30) == 0, proc.text()
    doc = yaml.safe_load(out.read_text())
    assert doc["clientConnection"]["kubeconfig"] == ""
    assert doc["clientConnection"]["qps"] == 20
    assert doc["leaderElection"]["leaderElect"] is False
    assert doc["profiles"][0]["schedulerName"] == "default-scheduler"
    json.dumps(doc)  # plain data


def test_a_bad_kubeconfig_is_a_clear_error(
    tmp_path: Path, ksched: Callable[..., KschedProcess]
) -> None:
    cfg = write_config(tmp_path / "cfg.yaml", tmp_path / "missing.kubeconfig", qps=5, burst=10)
    proc = ksched("--config", str(cfg), "--leader-elect=false")
    assert proc.wait(30) == 1
    assert '"command failed"' in proc.text()
    assert "missing.kubeconfig" in proc.text()
