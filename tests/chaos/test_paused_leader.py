"""A paused leader must not write once it is resumed.

Three replicas (leaseDuration 4s, renewDeadline 3s, retryPeriod 1s) share a nearly
full cluster: 50 nodes of 4 pod slots, filled with 200 low-priority pods. Each round
the leader is frozen (SIGSTOP: a long GC pause, a frozen VM, a stalled disk), 60
high-priority pods are created, another replica takes the Lease and preempts a filler
for each of them, and the frozen leader is resumed (SIGCONT) 0.1-0.6 s after the
takeover, while the new leader is at work. A resumed ex-leader acting on its
seconds-old cache binds pods into slots the new leader is using and deletes fillers
no placement needs; with the write fence it writes nothing and exits 1, and a fresh
replica takes its place (as its Deployment would).

Checked each round (:func:`tests.chaos.harness.violations`): every pod bound exactly
once, no node over 4 pods (or its cpu, memory) at any revision, no filler deleted but
by a preemption the Lease holder of the moment decided for a high-priority pod that
was then bound, no traceback, no exit but the ex-leader's.
"""

from __future__ import annotations

import random
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
    delete_nodes,
    figure,
    full,
    jitter,
    make_nodes,
    pod_obj,
    preemptions,
    rounds,
    violations,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

NODES, SLOTS, HIGH = 50, 4, 60
TIMING = Timing(lease=4, renew=3, retry=1)


def _exit_allowed(r: Replica, code: int, log: str) -> bool:
    """The only exit the scenario expects: a leader that lost its lease (fenced)."""
    return code == 1 and "leaderelection lost" in log


def _round(
    rnd: int,
    n_rounds: int,
    cp: ControlPlane,
    api: Api,
    replicas: Replicas,
    ns: str,
    nodes: list[dict],
    rng: random.Random,  # type: ignore[type-arg]
) -> list[str]:
    history = History(cp, ns, nodes)
    leases = LeaseLog(cp, ns, "ksched")
    try:
        fillers = [f"filler-{rnd}-{i:03d}" for i in range(NODES * SLOTS)]
        api.create_all(
            f"/api/v1/namespaces/{ns}/pods",
            [pod_obj(n, priority_class=f"{ns}-low") for n in fillers],
        )
        wait_until(lambda: history.bound(fillers) == len(fillers), 120, "fillers bound")
        old = replicas.wait_leader(api)
        replicas.pause(old)
        highs = [f"high-{rnd}-{i:02d}" for i in range(HIGH)]
        api.create_all(
            f"/api/v1/namespaces/{ns}/pods",
            [pod_obj(n, priority_class=f"{ns}-high") for n in highs],
        )
        new = replicas.wait_leader(api, 60, not_=old)
        assert new is not old
        bound_at_takeover = history.bound(highs)
        # Resumed while the new leader is still at work: the sooner, the more a stale
        # leader can do.
        delay = jitter(0.1, 0.6, rng)
        time.sleep(delay)
        replicas.resume(old)
        t_resume = time.monotonic()
        try:
            wait_until(lambda: history.bound(highs) == HIGH, 60, "high-priority pods bound")
        except AssertionError as exc:
            # Upstream's race, not a stale leader's doing: a preemptor whose only victim
            # another preemptor deleted first finds nothing left to delete, stays gated by
            # DefaultPreemption and waits for the next pod deletion or the unschedulable
            # timeout (5 minutes). kube-scheduler does the same; wait for that, no longer.
            queue = replicas.leader_queue(api)
            gated_only = queue.get("gated", 0) > 0 and sum(queue.values()) == queue["gated"]
            if not gated_only:
                raise AssertionError(f"{exc}\n{replicas.diagnose(api)}") from None
            try:
                wait_until(lambda: history.bound(highs) == HIGH, 360, "the unschedulable flush")
            except AssertionError as exc2:
                raise AssertionError(f"{exc2}\n{replicas.diagnose(api)}") from None
        waited = time.monotonic() - t_resume
        # The ex-leader stops: at once with the fence, after renewDeadline without it.
        wait_until(lambda: not old.proc.alive(), 30, "the resumed ex-leader exits")
        time.sleep(1.0)  # late writes, if any, land now
        deleted = sum(1 for p in history.pods.values() if p.deleted_at is not None)
        max_pods = max(history.max_pods.values())
        over = len({n for n, *_ in history.overcommits})
        preempted = preemptions(api, ns, fillers, replicas)
        found = violations(history, fillers + highs, leases=leases, preempted=preempted)
        preemptors = len({p.preemptor_uid for p in preempted.values()})
        log = old.proc.text()
        refused = log.count("fenced: refusing") + log.count(" lapsed: ")
        figure(
            f"paused leader round {rnd + 1}/{n_rounds}: resumed {delay:.1f}s after the "
            f"takeover ({bound_at_takeover}/{HIGH} bound by then); {deleted} fillers deleted "
            f"by {preemptors} preemptors for {HIGH} high-priority pods; most pods on a node "
            f"{max_pods}/{SLOTS}; {over} "
            f"node(s) over-committed; ex-leader exited {old.proc.proc.returncode}, "
            f"{refused} write(s) refused; all bound {waited:.0f}s after the resume; "
            f"{len(found)} violation(s)"
        )
        return [f"round {rnd + 1}: {v}" for v in found]
    finally:
        history.close()
        leases.close()


def test_a_resumed_ex_leader_binds_and_deletes_nothing(
    chaos_plane: ControlPlane, tmp_path: Path
) -> None:
    cp, api = chaos_plane, Api(chaos_plane)
    rng = random.Random(17)
    ns = f"paused-{uuid.uuid4().hex[:6]}"
    api.must("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    api.priority_class(f"{ns}-low", 10)
    api.priority_class(f"{ns}-high", 1000)
    nodes = make_nodes(api, ns, NODES, cpu="64", memory="256Gi", pods=str(SLOTS))
    replicas = Replicas(cp, tmp_path, ns, "ksched", TIMING, 3)
    n_rounds = 5 * rounds() if full() else 1
    failures: list[str] = []
    try:
        replicas.wait_ready()
        for rnd in range(n_rounds):
            failures += _round(rnd, n_rounds, cp, api, replicas, ns, nodes, rng)
            replicas.restart_exited(_exit_allowed)
            api.delete_all_pods(ns)
        failures += replicas.problems()
    finally:
        replicas.stop()
        api.delete_all_pods(ns)
        delete_nodes(api, nodes)
        api.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert not failures, "\n".join(failures[:40])
