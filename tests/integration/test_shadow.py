"""Shadow mode beside upstream kube-scheduler v1.36.5 on the real apiserver.

kube-scheduler (the test control plane's own build) schedules a basic workload of 1,000
pods on 50 nodes; ksched runs in shadow mode — ``ksched.run.serve`` with the shadow
scheduler, as ``ksched shadow`` composes it — as the ServiceAccount of
deploy/rbac-readonly.yaml. Every binding is judged; at least 95% must be ``same_node`` or
``equal_score``, and every ``different`` carries its explanation (both nodes and the
per-plugin scores that differ). The apiserver's audit log of that identity then shows
reads only (list and watch), and so do the client's request counters.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ksched.client.api import connect
from ksched.config import load_config_bytes
from ksched.readonly import ReadOnlyClusterAPI
from ksched.run import serve
from ksched.scheduler import Scheduler
from ksched.shadow import DIFFERENT, EQUAL_SCORE, RESULTS, SAME_NODE, ShadowScheduler
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.conftest import READONLY_USER
from tests.integration.test_client_scheduler import Cluster, eventually

pytestmark = pytest.mark.integration

NODES = 50
PODS = 1000
#: Reads are all shadow mode may send.
READ_VERBS = {"list", "watch", "get"}

CONFIG = b"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {qps: 2000, burst: 2000}
profiles:
- schedulerName: default-scheduler
"""


@pytest.fixture
async def cluster(control_plane: ControlPlane, namespace: str) -> AsyncIterator[Cluster]:
    api = connect(kubeconfig=str(control_plane.kubeconfig), qps=-1, burst=0)
    c = Cluster(api, namespace)
    try:
        yield c
    finally:
        await c.delete_nodes()
        await api.close()


class Shadow:
    """``serve()`` with the shadow scheduler on the read-only client, as ``ksched
    shadow`` composes it."""

    def __init__(self, kubeconfig: Path) -> None:
        self.cfg = load_config_bytes(CONFIG)
        self.client = connect(kubeconfig=str(kubeconfig), qps=2000, burst=2000)
        self.stop = asyncio.Event()
        self.started = asyncio.Event()
        self.sched: ShadowScheduler | None = None

    def _on_started(self, sched: Scheduler) -> None:
        assert isinstance(sched, ShadowScheduler)
        self.sched = sched
        self.started.set()

    async def __aenter__(self) -> ShadowScheduler:
        self.task = asyncio.get_running_loop().create_task(
            serve(
                self.cfg,
                ReadOnlyClusterAPI(self.client, mode="shadow mode"),
                stop=self.stop,
                on_started=self._on_started,
                make_scheduler=functools.partial(
                    ShadowScheduler, shadowed={"default-scheduler": "default-scheduler"}
                ),
            )
        )
        await asyncio.wait_for(self.started.wait(), 60)
        assert self.sched is not None
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        try:
            await asyncio.wait_for(self.task, 60)
        finally:
            await self.client.close()


async def test_shadow_beside_kube_scheduler(
    control_plane: ControlPlane,
    readonly_kubeconfig: Path,
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tag = uuid.uuid4().hex[:6]
    await cluster.create_nodes(
        make_node(f"shadow-{tag}-{i}", labels={"topology.kubernetes.io/zone": f"z{i % 3}"})
        for i in range(NODES)
    )
    audited_before = len(control_plane.audit_events(READONLY_USER))
    upstream = control_plane.start_kube_scheduler(
        {"clientConnection": {"qps": 2000, "burst": 2000}}
    )
    try:
        with caplog.at_level(logging.WARNING, logger="ksched.shadow"):
            async with Shadow(readonly_kubeconfig) as shadow:
                await cluster.create_pods(make_pod(f"p{i}") for i in range(PODS))

                async def all_bound() -> bool:
                    return len(await cluster.bound()) == PODS

                await eventually(all_bound, timeout=300, interval=1.0, what="kube-scheduler binds")

                async def judged_all() -> bool:
                    return _judged(shadow, cluster.ns)

                await eventually(
                    judged_all,
                    timeout=60,
                    what="shadow judged every binding",
                )
                judged = [d for d in shadow.decisions if d.pod.startswith(f"{cluster.ns}/")]
                counts = shadow.counts()
                methods = dict(shadow.read_only_api.inner.rest.requests_by_method)  # type: ignore[attr-defined]
                refused = dict(shadow.read_only_api.refused)
    finally:
        upstream.stop()

    results = Counter(d.result for d in judged)
    assert len(judged) == PODS, results
    agree = results[SAME_NODE] + results[EQUAL_SCORE]
    assert agree >= 0.95 * PODS, results
    assert set(results) <= set(RESULTS)
    assert sum(counts.values()) >= PODS
    bound = await cluster.bound()
    for d in judged:
        assert d.bound_to == bound[d.pod.split("/", 1)[1]]
        if d.result == DIFFERENT:
            # Explained: both nodes, and why ksched prefers its own.
            assert d.ksched_node and d.detail, d
            line = next(r.message for r in caplog.records if d.pod in r.message)
            assert d.bound_to in line and d.ksched_node in line and d.detail in line
    print(f"\nshadow beside kube-scheduler, {PODS} pods on {NODES} nodes: {dict(results)}")
    for d in judged:
        if d.result == DIFFERENT:
            print(f"  {d.pod}: bound to {d.bound_to}, ksched {d.ksched_node}: {d.detail}")

    # No write at all: the client sent GETs only (lists and watches), nothing was refused,
    # and the apiserver's audit log of this identity has reads only.
    assert set(methods) == {"GET"}, methods
    assert refused == {}
    events = control_plane.audit_events(READONLY_USER)[audited_before:]
    assert events, "the shadow's requests are audited"
    verbs = Counter(e["verb"] for e in events)
    assert set(verbs) <= READ_VERBS, verbs
    assert not any(
        e["objectRef"].get("resource") == "secrets" for e in events if e.get("objectRef")
    )


def _judged(shadow: ShadowScheduler, ns: str) -> bool:
    return sum(1 for d in shadow.decisions if d.pod.startswith(f"{ns}/")) >= PODS
