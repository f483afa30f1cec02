"""SIGKILL the leader again and again while pods keep arriving.

Three replicas (leaseDuration 4s, renewDeadline 3s, retryPeriod 1s) on 100 nodes;
pods are created at a steady rate for the whole run, and every 1-3 s of leadership the
leader is SIGKILLed and a fresh replica started in its place (as its Deployment would).
``make chaos``: 15 kills during 5,000 pods per round; ``make test``: 3 kills during 600.

Measured per kill: the takeover (SIGKILL → another replica holds the Lease) and the
failover (SIGKILL → the first binding after the takeover). Checked at the end: every
pod bound exactly once, no node over its allocatable at any revision, no pod deleted,
no traceback, no exit but the kills.
"""

from __future__ import annotations

import random
import statistics
import threading
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
    rounds,
    violations,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

TIMING = Timing(lease=4, renew=3, retry=1)
NODES = 100


def _never(r: Replica, code: int, log: str) -> bool:
    return False


class Creator:
    """Creates ``names`` at ``rate`` pods per second in a thread."""

    def __init__(self, api: Api, namespace: str, names: list[str], rate: float) -> None:
        self.api, self.namespace, self.names, self.rate = api, namespace, names, rate
        self.created = 0
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        batch = max(1, int(self.rate / 10))
        for i in range(0, len(self.names), batch):
            chunk = self.names[i : i + batch]
            try:
                self.api.create_all(
                    f"/api/v1/namespaces/{self.namespace}/pods", [pod_obj(n) for n in chunk], 4
                )
            except AssertionError as exc:
                self.errors.append(str(exc))
            self.created += len(chunk)
            ahead = t0 + self.created / self.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def _loop(
    rnd: int,
    cp: ControlPlane,
    api: Api,
    replicas: Replicas,
    ns: str,
    nodes: list[dict],  # type: ignore[type-arg]
    kills: int,
    pods: int,
    rng: random.Random,
) -> list[str]:
    history = History(cp, ns, nodes)
    leases = LeaseLog(cp, ns, "ksched")
    names = [f"p-{rnd}-{i:05d}" for i in range(pods)]
    takeovers: list[float] = []
    failovers: list[float] = []
    t_start = time.monotonic()
    creator = Creator(api, ns, names, rate=pods / (kills * 6.5))
    try:
        for _ in range(kills):
            leader = replicas.wait_leader(api, 60)
            time.sleep(jitter(1.0, 3.0, rng))
            if not leader.proc.alive():
                continue
            replicas.kill(leader)
            t_kill = time.monotonic()
            replicas.replace(leader)
            replicas.wait_leader(api, 60, not_=leader)
            t_takeover = time.monotonic()
            takeovers.append(t_takeover - t_kill)
            try:
                wait_until(
                    lambda: history.first_binding_after(t_takeover) is not None,  # noqa: B023
                    60,
                    "a binding by the new leader",
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{replicas.diagnose(api)}") from None
            first = history.first_binding_after(t_takeover)
            assert first is not None
            failovers.append(first - t_kill)
        creator.join(600)
        try:
            wait_until(lambda: history.bound(names) == pods, 180, f"all {pods} pods bound")
        except AssertionError as exc:
            raise AssertionError(
                f"{exc} ({history.bound(names)} bound, pending {history.pending()[:10]})\n"
                f"{replicas.diagnose(api)}"
            ) from None
        time.sleep(1.0)
        found = violations(history, names, leases=leases, preempted={})
        elapsed = time.monotonic() - t_start

        def mmm(xs: list[float]) -> str:
            return f"{min(xs):.1f}/{statistics.median(xs):.1f}/{max(xs):.1f}s"

        figure(
            f"leader SIGKILL loop round {rnd + 1}: {len(takeovers)} kills during {pods} pods in "
            f"{elapsed:.0f}s; takeover min/median/max {mmm(takeovers)}; failover (SIGKILL → "
            f"first binding by the new leader) {mmm(failovers)}; {len(found)} violation(s)"
        )
        return [f"round {rnd + 1}: {v}" for v in found + creator.errors]
    finally:
        history.close()
        leases.close()


def test_leader_sigkill_loop_loses_no_pod_and_binds_each_once(
    chaos_plane: ControlPlane, tmp_path: Path
) -> None:
    cp, api = chaos_plane, Api(chaos_plane)
    rng = random.Random(15)
    ns = f"kill-{uuid.uuid4().hex[:6]}"
    api.must("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    nodes = make_nodes(api, ns, NODES, cpu="64", memory="256Gi", pods="110")
    replicas = Replicas(cp, tmp_path, ns, "ksched", TIMING, 3)
    kills, pods = (15, 5000) if full() else (3, 600)
    failures: list[str] = []
    try:
        replicas.wait_ready()
        for rnd in range(rounds() if full() else 1):
            failures += _loop(rnd, cp, api, replicas, ns, nodes, kills, pods, rng)
            replicas.restart_exited(_never)
            api.delete_all_pods(ns, timeout=180)
        failures += replicas.problems()
    finally:
        replicas.stop()
        api.delete_all_pods(ns, timeout=180)
        delete_nodes(api, nodes)
        api.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert not failures, "\n".join(failures[:40])
