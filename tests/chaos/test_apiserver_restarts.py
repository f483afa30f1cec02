"""SIGKILL the apiserver while bindings are in flight, and compact etcd under the
informers; every pending pod must still be bound, without new pods to wake it.

Two timings, on 100 nodes: two replicas with the defaults (leaseDuration 15s,
renewDeadline 10s, retryPeriod 2s: the leader keeps its Lease across a restart), and
three with the chaos timings (4s/3s/1s, as the report had them) and the apiserver down
at least 4 s: the leader cannot renew within renewDeadline, exits 1 and is restarted,
and a hot standby whose informers just relisted takes over. Each run has three
phases; in each a batch of pods is created and, while the leader binds it, the
apiserver is SIGKILLed and started again:

1. restart; 2. restart again (the report to check: after the second restart of a run,
hundreds of pending pods waited 120 s and were bound only once new pods arrived);
3. etcd compaction (the v3 JSON gateway's ``/v3/kv/compaction``) at a revision the
   informers have not reached, then the restart: every informer's watch gets 410 Gone
   and relists.

The whole batch is created before the kill and the leader binds at kube-scheduler's
default 50 QPS, so hundreds of pods are pending, their bindings in flight, when the
apiserver dies. After the restart no pod is created until the batch is fully bound
(new pods' bindings would wake pods that a relist forgot): a pod left pending is a lost
wake-up, and the test fails with the queue sizes of the leader. The
drain time (restart done → last pod bound) is printed. ``make chaos ROUNDS=N`` runs the
three phases N times with 1,000 pods a batch; ``make test`` once with 300.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from ksched.testing.controlplane import ControlPlane
from tests.chaos.harness import (
    Api,
    History,
    LeaseLog,
    Replica,
    Replicas,
    Timing,
    compact_etcd,
    delete_nodes,
    figure,
    full,
    make_nodes,
    pod_obj,
    rounds,
    violations,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

NODES = 100
SETUPS = [
    # (timing, replicas, the apiserver stays down at least this long)
    pytest.param(Timing(lease=15, renew=10, retry=2), 2, 0.0, id="leader-keeps-its-lease"),
    pytest.param(Timing(lease=4, renew=3, retry=1), 3, 4.0, id="leader-loses-its-lease"),
]
PHASES = ("restart", "second restart", "compaction + restart")


def _lost_lease(r: Replica, code: int, log: str) -> bool:
    """A leader that could not renew while the apiserver was down exits 1, as upstream."""
    return code == 1 and "leaderelection lost" in log


def _phase(
    label: str,
    names: list[str],
    cp: ControlPlane,
    api: Api,
    ns: str,
    replicas: Replicas,
    history: History,
    down_for: float,
) -> str:
    leader = replicas.wait_leader(api, 90)
    # The whole batch exists before the kill, and the leader binds at most 50 pods/s
    # (kube-scheduler's default QPS), so hundreds are pending with bindings in flight.
    api.create_all(f"/api/v1/namespaces/{ns}/pods", [pod_obj(n) for n in names])
    in_flight = len(names) - history.bound(names)
    if label.startswith("compaction"):
        # A write no informer watches moves etcd past every informer's resourceVersion,
        # so the compaction removes the versions their watches resume from.
        api.must(
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            {"metadata": {"generateName": "bump-"}, "data": {}},
        )
        compact_etcd(cp)
    t_down = time.monotonic()
    cp.stop_apiserver(kill=True)
    time.sleep(max(0.0, down_for - (time.monotonic() - t_down)))
    cp.start_apiserver()
    downtime = time.monotonic() - t_down
    t_up = time.monotonic()
    try:
        wait_until(lambda: history.bound(names) == len(names), 90, f"{label}: batch bound")
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}: {len(history.pending())} pending, e.g. {history.pending()[:5]} — "
            f"a lost wake-up?\n{replicas.diagnose(api)}"
        ) from None
    drain = time.monotonic() - t_up
    relists = sum(r.proc.text().count("is gone; relisting") for r in replicas.replicas)
    return (
        f"{label}: {in_flight}/{len(names)} pods not yet bound at the SIGKILL, apiserver "
        f"down {downtime:.1f}s, all bound {drain:.1f}s after it was back "
        f"(leader {'kept' if leader.proc.alive() else 'lost'} its lease; informer relists "
        f"so far {relists})"
    )


@pytest.mark.parametrize(("timing", "count", "down_for"), SETUPS)
def test_apiserver_restarts_and_compaction_leave_no_pod_pending(
    chaos_plane: ControlPlane, tmp_path: Path, timing: Timing, count: int, down_for: float
) -> None:
    cp, api = chaos_plane, Api(chaos_plane)
    ns = f"apis-{uuid.uuid4().hex[:6]}"
    api.must("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    nodes = make_nodes(api, ns, NODES, cpu="64", memory="256Gi", pods="110")
    replicas = Replicas(cp, tmp_path, ns, "ksched", timing, count, qps=50)
    batch = 1000 if full() else 300
    failures: list[str] = []
    try:
        replicas.wait_ready()
        for rnd in range(rounds() if full() else 1):
            history = History(cp, ns, nodes)
            leases = LeaseLog(cp, ns, "ksched")
            created: list[str] = []
            try:
                for i, label in enumerate(PHASES):
                    names = [f"p-{rnd}-{i}-{j:04d}" for j in range(batch)]
                    created += names
                    line = _phase(label, names, cp, api, ns, replicas, history, down_for)
                    figure(f"apiserver ({timing.lease:g}s lease) run {rnd + 1}, {line}")
                    replicas.restart_exited(_lost_lease)
                time.sleep(1.0)
                found = violations(history, created, leases=leases, preempted={})
                figure(
                    f"apiserver ({timing.lease:g}s lease) run {rnd + 1}: {len(created)} pods, "
                    f"{len(found)} violation(s)"
                )
                failures += [f"run {rnd + 1}: {v}" for v in found]
            finally:
                history.close()
                leases.close()
            api.delete_all_pods(ns, timeout=180)
        failures += replicas.problems()
    finally:
        replicas.stop()
        api.delete_all_pods(ns, timeout=180)
        delete_nodes(api, nodes)
        api.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert not failures, "\n".join(failures[:40])
