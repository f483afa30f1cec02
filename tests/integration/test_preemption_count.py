"""How many pods preemption deletes on a full cluster, against the real kube-apiserver,
with and without a leader change, for ksched and for upstream kube-scheduler v1.36.5.

The shape of the chaos suite's paused-leader scenario (tests/chaos/test_paused_leader.py):
``NODES`` nodes of ``SLOTS`` pod slots, filled with low-priority pods, then
``HIGH`` high-priority pods that each need one slot. Every filler is equally cheap, so
exactly ``HIGH`` victims are needed. The pods select this test's nodes by label (the
session's other nodes are no candidates) and carry a scheduler name of the test's own,
so nothing else in the session schedules or preempts them.

With a leader change the first replica is frozen (SIGSTOP) before the high-priority pods
are created and killed once the second replica holds the Lease: the second one meets all
of them at once, from the informer, and preempts for them while the apiserver's watch
trails its own writes (its nominations and deletions). Without one the leader meets them
nearly as fast, as 8 threads create them. ksched used to decide those preemptions faster
than the apiserver answered (it patched a failed pod's status in the background, where
kube-scheduler's failure handler waits for it): the preemptors after the first on a
node took a second victim there, and the first ones, retried while that victim was
still listed, preempted again (62-71 fillers deleted for 60 pods in 6 of 7 runs, where
kube-scheduler deletes 60-62). The bound is what kube-scheduler does here (see
``UPSTREAM_RACE``), and :func:`test_deletes_no_more_fillers_than_needed` holds upstream's
own binary to it in the same scenarios.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ksched.testing.controlplane import ControlPlane, KubeScheduler
from ksched.testing.ksched_process import KschedProcess, write_scheduler_config
from tests.chaos.harness import Api, wait_until

pytestmark = pytest.mark.integration

NODES, SLOTS, HIGH = 50, 4, 60
#: At most this many deletions over what the placements need. Upstream's own race
#: (kube-scheduler v1.36.5) reached 62 here: with a leader change 60 twice, 61 four times,
#: 62 once in 7 runs; with one leader 61 five times, 62 once in 6. ksched's one-leader case
#: gave 60-63 in 10 quiet runs (median 61, 63 once), so the bound is upstream's largest
#: seen plus one; the behaviour this test was written against deleted 62-71 (6 of 7 runs).
UPSTREAM_RACE = 3

Obj = dict[str, Any]


@dataclass
class Replica:
    """One scheduler process (ksched or kube-scheduler) competing for the Lease."""

    pid: int
    alive: Callable[[], bool]
    stop: Callable[[], None]
    log: Path


def _config(cp: ControlPlane, ns: str, scheduler_name: str) -> Obj:
    return {
        "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": 200, "burst": 200},
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "profiles": [{"schedulerName": scheduler_name}],
        "leaderElection": {
            "leaderElect": True,
            "leaseDuration": "4s",
            "renewDeadline": "3s",
            "retryPeriod": "1s",
            "resourceNamespace": ns,
            "resourceName": "sched",
        },
    }


def _start_ksched(cp: ControlPlane, workdir: Path, ns: str, name: str, i: int) -> Replica:
    cfg = write_scheduler_config(workdir / f"ksched-{i}.json", _config(cp, ns, name))
    log = workdir / f"ksched-{i}.log"
    proc = KschedProcess([f"--config={cfg}", f"--client-ca-file={cp.ca_file}", "-v", "2"], log)
    return Replica(proc.pid, proc.alive, proc.stop, log)


def _start_upstream(cp: ControlPlane, workdir: Path, ns: str, name: str, i: int) -> Replica:
    cfg = _config(cp, ns, name)
    sched: KubeScheduler = cp.start_kube_scheduler(cfg, args=["--v=2"], wait=False)
    return Replica(sched.pid, sched.alive, lambda: sched.stop(kill=True), sched.log_path)


def _pod(name: str, cls: str, run: str, scheduler: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "priorityClassName": cls,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"preempt-count": run},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
                }
            ],
        },
    }


@pytest.fixture
def scenario(control_plane: ControlPlane) -> Iterator[tuple[Api, str, str]]:
    """A namespace, its two PriorityClasses and ``NODES`` nodes labelled for this run;
    all removed afterwards."""
    api = Api(control_plane)
    run = uuid.uuid4().hex[:8]
    ns = f"preempt-{run}"
    api.must("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    api.priority_class(f"{ns}-low", 10)
    api.priority_class(f"{ns}-high", 1000)
    nodes = [f"{ns}-{i:03d}" for i in range(NODES)]
    capacity = {"cpu": "64", "memory": "256Gi", "pods": str(SLOTS)}
    api.create_all(
        "/api/v1/nodes",
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": n,
                    "labels": {"kubernetes.io/hostname": n, "preempt-count": run},
                },
                "status": {
                    "capacity": capacity,
                    "allocatable": dict(capacity),
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            for n in nodes
        ],
    )
    try:
        yield api, ns, run
    finally:
        with contextlib.suppress(AssertionError):
            api.delete_all_pods(ns)
        for n in nodes:
            api.request("DELETE", f"/api/v1/nodes/{n}")
        for cls in ("low", "high"):
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{ns}-{cls}")
        api.request("DELETE", f"/api/v1/namespaces/{ns}")


def _bound(api: Api, ns: str, prefix: str) -> int:
    return sum(
        1
        for p in api.pods(ns)
        if p["metadata"]["name"].startswith(prefix) and (p.get("spec") or {}).get("nodeName")
    )


def deleted_fillers(
    cp: ControlPlane,
    api: Api,
    ns: str,
    run: str,
    workdir: Path,
    start: Callable[[ControlPlane, Path, str, str, int], Replica],
    *,
    leader_change: bool,
) -> int:
    """Fill the nodes, (freeze the leader,) create the high-priority pods, wait until
    they are all bound and return how many fillers were deleted."""
    name = f"sched-{run}"
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/sched"
    replicas: list[Replica] = []
    try:
        first = start(cp, workdir, ns, name, 0)
        replicas.append(first)
        wait_until(lambda: bool(api.lease_holder(ns, "sched")), 60, "the first replica leads")
        holder = api.lease_holder(ns, "sched")
        if leader_change:
            replicas.append(start(cp, workdir, ns, name, 1))
        fillers = [f"filler-{i:03d}" for i in range(NODES * SLOTS)]
        api.create_all(
            f"/api/v1/namespaces/{ns}/pods", [_pod(f, f"{ns}-low", run, name) for f in fillers]
        )
        wait_until(lambda: _bound(api, ns, "filler-") == len(fillers), 120, "fillers bound")
        if leader_change:
            time.sleep(2)  # the standby has listed the fillers
            os.kill(first.pid, signal.SIGSTOP)
        highs = [f"high-{i:03d}" for i in range(HIGH)]
        api.create_all(
            f"/api/v1/namespaces/{ns}/pods", [_pod(h, f"{ns}-high", run, name) for h in highs]
        )
        if leader_change:
            wait_until(
                lambda: api.lease_holder(ns, "sched") not in ("", holder),
                60,
                "the standby takes the Lease",
                poll=0.02,
            )
            os.kill(first.pid, signal.SIGKILL)
        wait_until(lambda: _bound(api, ns, "high-") == HIGH, 120, "high-priority pods bound")
        time.sleep(1.0)  # deletions in flight land
        doc = api.must("GET", lease)
        assert doc["spec"]["holderIdentity"] != holder or not leader_change
        left = sum(1 for p in api.pods(ns) if p["metadata"]["name"].startswith("filler-"))
        return len(fillers) - left
    finally:
        for r in replicas:
            with contextlib.suppress(Exception):
                if r.alive():
                    os.kill(r.pid, signal.SIGCONT)
            r.stop()
            if r.log.parent != workdir and r.log.exists():
                shutil.copy(r.log, workdir / r.log.name)  # kept with the test's files


@pytest.mark.parametrize("leader_change", [False, True], ids=["one-leader", "leader-change"])
@pytest.mark.parametrize(
    ("who", "start"),
    [("ksched", _start_ksched), ("kube-scheduler", _start_upstream)],
    ids=["ksched", "upstream"],
)
def test_deletes_no_more_fillers_than_needed(
    control_plane: ControlPlane,
    scenario: tuple[Api, str, str],
    tmp_path: Path,
    who: str,
    start: Callable[[ControlPlane, Path, str, str, int], Replica],
    leader_change: bool,
) -> None:
    """ksched, and kube-scheduler itself (which sets the bound), in the same scenarios."""
    api, ns, run = scenario
    n = deleted_fillers(control_plane, api, ns, run, tmp_path, start, leader_change=leader_change)
    print(f"{who} {'leader-change' if leader_change else 'one-leader'}: {n} deleted")
    assert HIGH <= n <= HIGH + UPSTREAM_RACE, f"{n} fillers deleted for {HIGH} pods"
