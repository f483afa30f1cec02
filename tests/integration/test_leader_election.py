"""Leader election of ``ksched run`` replicas against the real apiserver.

Two replicas compete for one Lease with short timings (leaseDuration 2s, renewDeadline
1.5s, retryPeriod 0.25s). Proven here:

* only the leader binds; SIGKILL of the leader in the middle of 2,000 pods: the standby
  acquires the Lease about ``leaseDuration + retryPeriod`` later and binds the rest;
  every pod is bound exactly once (a watch sees one binding per pod and no re-binding)
  and none is lost;
* SIGTERM of the leader releases the Lease after its bindings drain, so the standby
  takes over at its next retry instead of waiting out the lease;
* a leader whose Lease is taken from it stops and exits 1 within renewDeadline;
* with ``delayCacheUntilActive`` a standby neither lists nor is ready until it leads.

Bounds: client-go waits ``retryPeriod * (1 + 1.2 rand)`` between attempts, so a standby
notices the last renewal up to 2.2 retry periods late and acquires up to 2.2 retry
periods after the lease expired in its own clock; the assertions use those worst
cases and the measured values are printed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ksched.leaderelection import parse_micro_time
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from ksched.testing.ksched_process import KschedProcess, write_scheduler_config

pytestmark = pytest.mark.integration

Obj = dict[str, Any]

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.25
#: Worst case of one jittered client-go retry wait.
JITTERED_RETRY = RETRY_PERIOD * 2.2


def le_config(namespace: str, name: str, **over: Any) -> Obj:
    return {
        "leaderElect": True,
        "leaseDuration": f"{over.get('lease', LEASE_DURATION)}s",
        "renewDeadline": f"{RENEW_DEADLINE}s",
        "retryPeriod": f"{RETRY_PERIOD}s",
        "resourceNamespace": namespace,
        "resourceName": name,
    }


@pytest.fixture
def replicas(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Callable[..., KschedProcess]]:
    started: list[KschedProcess] = []

    def start(config: Obj, *extra: str) -> KschedProcess:
        n = len(started)
        doc = json.loads(json.dumps(config))
        doc.setdefault("clientConnection", {}).setdefault(
            "kubeconfig", str(control_plane.kubeconfig)
        )
        cfg = write_scheduler_config(tmp_path / f"cfg-{n}.json", doc)
        p = KschedProcess(
            [
                f"--config={cfg}",
                f"--client-ca-file={control_plane.ca_file}",
                "-v",
                "2",
                *extra,
            ],
            tmp_path / f"ksched-{n}.log",
        )
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


@pytest.fixture
def nodes(control_plane: ControlPlane) -> Iterator[list[str]]:
    names = [f"le-{uuid.uuid4().hex[:6]}-{i}" for i in range(20)]
    for name in names:
        control_plane.create_node(make_node(name, cpu="64", memory="256Gi", pods="110"))
    yield names
    for name in names:
        control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def lease(cp: ControlPlane, namespace: str, name: str) -> Obj | None:
    status, body = cp.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
    )
    return body if status == 200 else None


def holder(cp: ControlPlane, namespace: str, name: str) -> str:
    obj = lease(cp, namespace, name)
    return str((obj or {}).get("spec", {}).get("holderIdentity") or "")


def identity_of(p: KschedProcess) -> str:
    p.wait_for_log('"Leading" identity="', 30)
    line = next(ln for ln in p.text().splitlines() if '"Leading" identity="' in ln)
    return line.split('"Leading" identity="', 1)[1].split('"', 1)[0]


def wait_until(cond: Callable[[], bool], timeout: float, what: str, poll: float = 0.02) -> float:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not reached in {timeout}s: {what}")
        time.sleep(poll)
    return time.monotonic()


def create_pods(cp: ControlPlane, namespace: str, count: int) -> None:
    def one(i: int) -> None:
        obj = make_pod(f"p{i:04d}", namespace=namespace)
        obj.pop("status")
        status, body = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", obj)
        assert status == 201, body

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


class BindingWatch:
    """Watches the namespace's pods and records every change of ``spec.nodeName``
    (reconnecting from the last resourceVersion seen when the stream ends)."""

    def __init__(self, cp: ControlPlane, namespace: str) -> None:
        status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
        assert status == 200
        self.rv = body["metadata"]["resourceVersion"]
        self.node: dict[str, str] = {}
        #: pod → the node names it was seen bound to, in order (one entry = bound once).
        self.bindings: dict[str, list[str]] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._cp = cp
        self._namespace = namespace
        self._closed = False
        self._conn: http.client.HTTPSConnection | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            try:
                self._stream()
            except Exception as exc:
                self.errors.append(repr(exc))
                time.sleep(0.05)

    def _stream(self) -> None:
        self._conn = conn = http.client.HTTPSConnection(
            "127.0.0.1", self._cp.port, context=self._cp.ssl_context(), timeout=60
        )
        path = (
            f"/api/v1/namespaces/{self._namespace}/pods?watch=1&resourceVersion={self.rv}"
            "&allowWatchBookmarks=true&timeoutSeconds=120"
        )
        conn.request("GET", path, headers={"Accept": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"watch answered {resp.status}")
        for line in resp:
            if not line.strip():
                continue
            ev = json.loads(line)
            obj = ev["object"]
            if ev["type"] == "ERROR":
                raise RuntimeError(f"watch error: {obj}")
            self.rv = obj["metadata"]["resourceVersion"]
            if ev["type"] == "BOOKMARK":
                continue
            name = obj["metadata"]["name"]
            node = obj["spec"].get("nodeName") or ""
            with self._lock:
                if node and self.node.get(name, "") != node:
                    self.bindings.setdefault(name, []).append(node)
                self.node[name] = node

    def bound(self) -> int:
        with self._lock:
            return sum(1 for v in self.node.values() if v)

    def close(self) -> None:
        self._closed = True
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)


def scheduled_count(p: KschedProcess, cp: ControlPlane) -> float:
    """Bindings ``p`` made, from its /metrics (read as the admin, by client cert)."""
    status, text = p.get("/metrics", cert=(cp.client_cert_file, cp.client_key_file))
    assert status == 200, text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def candidate_identity(p: KschedProcess) -> str:
    p.wait_for_log("Attempting to acquire leader lease...", 30)
    line = next(ln for ln in p.text().splitlines() if '"Leader election candidate"' in ln)
    return line.split('identity="', 1)[1].split('"', 1)[0]


def test_sigkill_of_the_leader_mid_run_loses_no_pod_and_binds_each_once(
    control_plane: ControlPlane,
    namespace: str,
    nodes: list[str],
    replicas: Callable[..., KschedProcess],
) -> None:
    cp, name = control_plane, f"ksched-{uuid.uuid4().hex[:6]}"
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    # The Lease starts held by someone else, so the 2,000 pods reach both replicas'
    # queues before either leads; the test then releases it as client-go would.
    status, held = cp.request(
        "POST",
        path,
        {
            "metadata": {"name": name},
            "spec": {"holderIdentity": "placeholder", "leaseDurationSeconds": 3600},
        },
    )
    assert status == 201, held
    config = {
        "clientConnection": {"qps": 300, "burst": 300},
        "leaderElection": le_config(namespace, name),
    }
    procs = [replicas(config), replicas(config)]
    ids = [candidate_identity(p) for p in procs]
    for p in procs:
        p.wait_for_log("Caches are synced", 30)  # hot standbys: informers run
    watch = BindingWatch(cp, namespace)
    try:
        t0 = time.monotonic()
        create_pods(cp, namespace, 2000)
        print(f"\n2000 pods created in {time.monotonic() - t0:.1f}s")
        assert watch.bound() == 0
        held["spec"].update(holderIdentity="", leaseDurationSeconds=1)
        status, body = cp.request("PUT", f"{path}/{name}", held)
        assert status == 200, body
        wait_until(lambda: holder(cp, namespace, name) in ids, 5, "a replica leads")
        leader_i = ids.index(holder(cp, namespace, name))
        leader, standby = procs[leader_i], procs[1 - leader_i]
        wait_until(lambda: watch.bound() >= 400, 60, f"400 bound ({watch.errors})")
        assert scheduled_count(standby, cp) == 0  # only the leader binds
        assert '"Leading"' not in standby.text()
        leader.kill()
        t_kill = time.monotonic()
        bound_at_kill = watch.bound()
        # The dead leader's last renewal (the record cannot change until a standby
        # acquires, and none may before leaseDuration has passed since it saw it).
        before = lease(cp, namespace, name)
        assert before is not None and before["spec"]["holderIdentity"] == ids[leader_i]
        last_renew = parse_micro_time(before["spec"]["renewTime"])
        assert last_renew is not None
        t_acquired = wait_until(
            lambda: holder(cp, namespace, name) == ids[1 - leader_i], 30, "standby takes over"
        )
        takeover = t_acquired - t_kill
        try:
            wait_until(lambda: watch.bound() >= 2000, 60, "all 2000 pods bound", poll=0.1)
        except AssertionError:
            text = standby.get("/metrics", cert=(cp.client_cert_file, cp.client_key_file))[1]
            lines = [
                ln
                for ln in text.splitlines()
                if "pending_pods" in ln or "attempts_total" in ln or "cache_size" in ln
            ]
            raise AssertionError(
                f"watch errors {watch.errors}; bound {watch.bound()}, killed at {bound_at_kill}; "
                + "\n".join(lines)
            ) from None
        time.sleep(0.5)  # late duplicate bindings, if any, would show up now
    finally:
        watch.close()
    by_standby = scheduled_count(standby, cp)
    print(
        f"leader killed at {bound_at_kill} pods bound; standby acquired after {takeover:.2f}s "
        f"(leaseDuration {LEASE_DURATION}s + retryPeriod {RETRY_PERIOD}s) and bound "
        f"{by_standby:.0f}"
    )
    assert bound_at_kill < 2000
    # The standby saw the last renewal at most one jittered retry late, and acquires at
    # its first retry after leaseDuration from then; never before leaseDuration has
    # passed since the last renewal (the Lease's own timestamps, written by the two
    # replicas on this machine's clock: exact whatever the load).
    assert takeover <= LEASE_DURATION + 2 * JITTERED_RETRY + 0.3, takeover
    after = lease(cp, namespace, name)
    assert after is not None
    acquired = parse_micro_time(after["spec"]["acquireTime"])
    assert acquired is not None
    acquired_after = (acquired - last_renew).total_seconds()
    assert acquired_after >= LEASE_DURATION - 0.01, (acquired_after, takeover)

    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200
    pods = body["items"]
    assert len(pods) == 2000
    assert all(p["spec"].get("nodeName") for p in pods), "a pod was lost"
    twice = {k: v for k, v in watch.bindings.items() if len(v) != 1}
    assert not twice, f"pods bound more than once: {list(twice.items())[:5]}"
    assert len(watch.bindings) == 2000
    assert after["spec"]["leaseTransitions"] == 2  # placeholder -> leader -> standby
    assert after["spec"]["holderIdentity"] == ids[1 - leader_i]
    # The survivor bound what was left (bindings the dead leader sent just before the
    # kill may have landed after it was counted).
    assert 0 < by_standby <= 2000 - bound_at_kill
    assert standby.alive()


def test_graceful_shutdown_releases_the_lease_and_the_standby_takes_over_within_a_retry(
    control_plane: ControlPlane,
    namespace: str,
    nodes: list[str],
    replicas: Callable[..., KschedProcess],
) -> None:
    cp, name = control_plane, f"ksched-{uuid.uuid4().hex[:6]}"
    # A long lease: without the release the standby would wait 15s.
    config = {"leaderElection": le_config(namespace, name, lease=15)}
    a = replicas(config)
    a_id = identity_of(a)
    b = replicas(config)
    b.wait_for_log("Attempting to acquire leader lease...", 30)
    a.signal(signal.SIGTERM)
    assert a.wait(30) == 0, a.text()
    assert '"Released lease"' in a.text()
    t_exit = time.monotonic()
    wait_until(lambda: holder(cp, namespace, name) not in ("", a_id), 10, "standby takes over")
    waited = time.monotonic() - t_exit
    obj = lease(cp, namespace, name)
    assert obj is not None
    spec = obj["spec"]
    assert spec["holderIdentity"] == identity_of(b)
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 15
    print(f"\nstandby acquired {waited:.2f}s after the leader exited (lease 15s)")
    assert waited <= JITTERED_RETRY + 0.3, waited
    # Pods created now are bound by the new leader.
    obj = make_pod("after", namespace=namespace)
    obj.pop("status")
    assert cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", obj)[0] == 201
    wait_until(
        lambda: bool(
            cp.request("GET", f"/api/v1/namespaces/{namespace}/pods/after")[1]["spec"].get(
                "nodeName"
            )
        ),
        20,
        "new leader binds",
    )


def test_a_lone_leader_releases_as_client_go_does(
    control_plane: ControlPlane, namespace: str, replicas: Callable[..., KschedProcess]
) -> None:
    cp, name = control_plane, f"ksched-{uuid.uuid4().hex[:6]}"
    a = replicas({"leaderElection": le_config(namespace, name)})
    a_id = identity_of(a)
    held = lease(cp, namespace, name)
    assert held is not None
    acquire = parse_micro_time(held["spec"]["acquireTime"])
    time.sleep(3 * RETRY_PERIOD)
    renewed = lease(cp, namespace, name)
    assert renewed is not None
    assert renewed["spec"]["holderIdentity"] == a_id
    assert parse_micro_time(renewed["spec"]["acquireTime"]) == acquire
    assert renewed["spec"]["renewTime"] > held["spec"]["renewTime"]
    assert renewed["spec"]["leaseDurationSeconds"] == int(LEASE_DURATION)
    a.signal(signal.SIGTERM)
    assert a.wait(30) == 0, a.text()
    released = lease(cp, namespace, name)
    assert released is not None
    assert released["spec"]["holderIdentity"] == ""
    assert released["spec"]["leaseDurationSeconds"] == 1
    assert released["spec"]["leaseTransitions"] == 0


def test_a_leader_that_loses_its_lease_stops_and_exits_non_zero(
    control_plane: ControlPlane, namespace: str, replicas: Callable[..., KschedProcess]
) -> None:
    cp, name = control_plane, f"ksched-{uuid.uuid4().hex[:6]}"
    a = replicas({"leaderElection": le_config(namespace, name)})
    identity_of(a)
    obj = lease(cp, namespace, name)
    assert obj is not None
    obj["spec"]["holderIdentity"] = "intruder"
    obj["spec"]["leaseDurationSeconds"] = 60
    status, body = cp.request(
        "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", obj
    )
    assert status == 200, body
    t0 = time.monotonic()
    assert a.wait(30) == 1, a.text()
    assert time.monotonic() - t0 <= RENEW_DEADLINE + 2 * JITTERED_RETRY + 1.0
    assert "leaderelection lost" in a.text()
    assert holder(cp, namespace, name) == "intruder"  # not released: it is not ours


def test_delay_cache_until_active_keeps_a_standby_cold_and_unready(
    control_plane: ControlPlane, namespace: str, replicas: Callable[..., KschedProcess]
) -> None:
    name = f"ksched-{uuid.uuid4().hex[:6]}"
    config = {"leaderElection": le_config(namespace, name), "delayCacheUntilActive": True}
    a = replicas(config)
    identity_of(a)
    a.wait_for_log("Caches are synced", 30)
    b = replicas(config)
    b.wait_for_log("Attempting to acquire leader lease...", 30)
    b.wait_serving()
    status, text = b.get("/readyz?verbose")
    assert status == 500, text
    assert "[-]sched-handler-sync failed: reason withheld" in text
    assert "[+]leaderElection ok" in text
    assert b.get("/healthz")[0] == 200  # a standby is healthy
    assert "Caches are synced" not in b.text()
    assert a.get("/readyz")[0] == 200
    a.signal(signal.SIGTERM)
    assert a.wait(30) == 0
    b.wait_for_log("Caches are synced", 10)
    wait_until(lambda: b.get("/readyz")[0] == 200, 10, "new leader ready")
