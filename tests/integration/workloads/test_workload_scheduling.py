"""Workload-aware scheduling against the real kube-apiserver v1.36 with the
scheduling.k8s.io/v1alpha2 API and the scheduler-plugins CRDs: gangs that bind
completely or not at all, compete, time out together, and quotas that lend and reclaim.

Each test runs ``ksched.run.serve`` in-process (``ksched run``'s code path) with the
gates of ``ksched run --feature-gates=GenericWorkload=true,GangScheduling=true``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ksched.client.api import connect
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    FeatureGates,
    KubeSchedulerConfiguration,
    load_config_bytes,
)
from ksched.framework.profile import Profile
from ksched.profiles import build_profiles
from ksched.run import serve
from ksched.scheduler import Scheduler
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.test_client_scheduler import Cluster, eventually

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
GANG = DEFAULT_FEATURE_GATES.with_(generic_workload=True, gang_scheduling=True)
WAIT_MSG = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


def _config(
    body: str = "profiles:\n- schedulerName: default-scheduler\n",
) -> KubeSchedulerConfiguration:
    head = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\nclientConnection: {qps: 2000, burst: 2000}\n"
        "podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 1\n"
    )
    return load_config_bytes((head + body).encode(), gates=GANG)


class Serving:
    """``serve`` with the workload gates in the background for a test."""

    def __init__(
        self,
        cp: ControlPlane,
        cfg: KubeSchedulerConfiguration,
        gates: FeatureGates = GANG,
        profiles: Mapping[str, Profile] | None = None,
    ) -> None:
        self.api = connect(kubeconfig=str(cp.kubeconfig), qps=2000, burst=2000)
        self.cfg = cfg
        self.gates = gates
        self.profiles = profiles
        self.stop = asyncio.Event()
        self.started = asyncio.Event()
        self.sched: Scheduler | None = None

    def _on_started(self, sched: Scheduler) -> None:
        self.sched = sched
        self.started.set()

    async def __aenter__(self) -> Scheduler:
        self.task = asyncio.get_running_loop().create_task(
            serve(
                self.cfg,
                self.api,
                stop=self.stop,
                registry=CollectorRegistry(),
                on_started=self._on_started,
                seed=1,
                gates=self.gates,
                profiles=self.profiles,
            )
        )
        waiter = asyncio.get_running_loop().create_task(self.started.wait())
        await asyncio.wait({self.task, waiter}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        if self.task.done():
            self.task.result()
        assert self.sched is not None, "scheduler did not start within 60s"
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        try:
            await asyncio.wait_for(self.task, 60)
        finally:
            await self.api.close()


# ---- objects -------------------------------------------------------------------------------


async def create(c: Cluster, group_path: str, obj: Obj) -> Obj:
    obj = {**obj, "metadata": {**obj["metadata"], "namespace": c.ns}}
    path = f"{group_path}/namespaces/{c.ns}/{obj['kind'].lower()}s"
    result: Obj = await c.rest.request_json("POST", path, body=obj)
    return result


async def pod_group(c: Cluster, name: str, min_count: int) -> Obj:
    return await create(
        c,
        "/apis/scheduling.k8s.io/v1alpha2",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        },
    )


async def get_pod_group(c: Cluster, name: str) -> Obj:
    result: Obj = await c.rest.request_json(
        "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{c.ns}/podgroups/{name}"
    )
    return result


def member(name: str, group: str, cpu: str, **kwargs: Any) -> Obj:
    obj = make_pod(name, cpu=cpu, memory="100Mi", **kwargs)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


async def notes(c: Cluster, reason: str = "FailedScheduling") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in await c.events():
        if e.get("reason") == reason:
            out.setdefault(e["regarding"]["name"], []).append(e.get("note", ""))
    return out


async def nodes(c: Cluster, count: int, cpu: str = "2", prefix: str = "wn") -> None:
    await c.create_nodes(make_node(f"{prefix}{i}", cpu=cpu) for i in range(count))


# ---- in-tree gangs (scheduling.k8s.io/v1alpha2) ---------------------------------------------


async def test_gang_that_fits_binds_completely(
    workload_plane: ControlPlane, wcluster: Cluster
) -> None:
    c = wcluster
    await nodes(c, 4)
    await pod_group(c, "train", 4)
    async with Serving(workload_plane, _config()):
        await c.create_pods(member(f"w{i}", "train", "1500m") for i in range(4))
        bound = await eventually(lambda: _bound_if(c, 4), what="4 members bound", timeout=60)
        assert len(set(bound.values())) == 4

        async def scheduled_condition() -> Obj | None:
            conds = (await get_pod_group(c, "train")).get("status", {}).get("conditions") or []
            return next((x for x in conds if x["status"] == "True"), None)

        cond = await eventually(scheduled_condition, what="PodGroupScheduled=True")
        assert (cond["type"], cond["reason"]) == ("PodGroupScheduled", "Scheduled")


async def _bound_if(c: Cluster, n: int) -> dict[str, str] | None:
    bound = await c.bound()
    return bound if len(bound) >= n else None


async def test_gang_one_node_short_binds_nothing_then_completely_when_a_node_is_added(
    workload_plane: ControlPlane, wcluster: Cluster
) -> None:
    c = wcluster
    await nodes(c, 3)
    await pod_group(c, "train", 4)
    async with Serving(workload_plane, _config()):
        await c.create_pods(member(f"w{i}", "train", "1500m") for i in range(4))

        async def all_reported() -> dict[str, list[str]] | None:
            n = await notes(c)
            return n if len(n) == 4 else None

        reported = await eventually(all_reported, what="every member reported")
        assert await c.bound() == {}
        failing = [p for p, ns in reported.items() if ns[0].startswith("0/3 nodes")]
        assert len(failing) == 1
        assert reported[failing[0]][0].startswith("0/3 nodes are available: 3 Insufficient cpu.")
        assert all(reported[p][0] == WAIT_MSG for p in reported if p not in failing)
        conds = (await get_pod_group(c, "train"))["status"]["conditions"]
        assert [(x["type"], x["status"], x["reason"]) for x in conds] == [
            ("PodGroupScheduled", "False", "Unschedulable")
        ]
        await c.create_node(make_node("wn3", cpu="2"))
        bound = await eventually(lambda: _bound_if(c, 4), what="the whole gang bound")
        assert len(set(bound.values())) == 4


async def test_two_gangs_compete_for_room_for_one_and_one_binds_completely(
    workload_plane: ControlPlane, wcluster: Cluster
) -> None:
    c = wcluster
    await nodes(c, 4)
    await pod_group(c, "a", 4)
    await pod_group(c, "b", 4)
    async with Serving(workload_plane, _config()):
        await c.create_pods(
            [member(f"a{i}", "a", "1500m") for i in range(4)]
            + [member(f"b{i}", "b", "1500m") for i in range(4)]
        )
        bound = await eventually(lambda: _bound_if(c, 4), what="one gang bound")
        assert len({name[0] for name in bound}) == 1, bound
        # The loser keeps trying every backoff period without ever binding a member.
        await asyncio.sleep(3)
        assert len(await c.bound()) == 4


class _FailingReserve:
    """Rejects one member's Reserve once the group goes to binding (a reservation that
    conflicts after the group's verdict): the other members wait at Permit."""

    name = "FailingReserve"

    def __init__(self, pod: str) -> None:
        self.pod = pod

    def reserve(self, state: Any, pod: Any, node: str) -> Any:
        from ksched.framework.status import Code, Status

        if state.pod_group_cycle is None and pod.name == self.pod:
            return Status(Code.UNSCHEDULABLE, "reservation conflict")
        return None

    def unreserve(self, state: Any, pod: Any, node: str) -> None:
        return None


async def test_gang_times_out_at_permit_and_its_pods_go_back_together(
    workload_plane: ControlPlane, wcluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ksched.plugins.gang_scheduling as gs

    monkeypatch.setattr(gs, "PERMIT_TIMEOUT", 1.0)
    c = wcluster
    await nodes(c, 1, cpu="8")
    await pod_group(c, "t", 3)
    cfg = _config()
    profiles = build_profiles(cfg, gates=GANG)
    prof = profiles["default-scheduler"]
    prof.plugins = (*(prof.plugins or ()), _FailingReserve("t1"))
    async with Serving(workload_plane, cfg, profiles=profiles):
        await c.create_pods(member(f"t{i}", "t", "1") for i in range(3))

        async def timed_out() -> dict[str, list[str]] | None:
            n = await notes(c)
            return n if all(n.get(p) for p in ("t0", "t1", "t2")) else None

        reported = await eventually(timed_out, what="members back in the queue")
        assert await c.bound() == {}
        assert reported["t1"][0] == "0/1 nodes are available: 1 reservation conflict."
        for p in ("t0", "t2"):
            assert reported[p][0] == (
                "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at "
                "plugin GangScheduling."
            )


# ---- Coscheduling (scheduling.x-k8s.io PodGroup CRD) -----------------------------------------

COSCHEDULING = """\
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
"""


async def test_coscheduling_group_binds_completely_or_not_at_all(
    workload_plane: ControlPlane, wcluster: Cluster
) -> None:
    c = wcluster
    await nodes(c, 2)
    await create(
        c,
        "/apis/scheduling.x-k8s.io/v1alpha1",
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "job"},
            "spec": {"minMember": 3},
        },
    )
    label = {"scheduling.x-k8s.io/pod-group": "job"}
    # The members exist before the scheduler starts: its first cycle sees the group whole.
    await c.create_pods(
        make_pod(f"j{i}", cpu="1500m", memory="100Mi", labels=label) for i in range(3)
    )
    async with Serving(workload_plane, _config(COSCHEDULING), gates=DEFAULT_FEATURE_GATES):
        rejection = f"PodGroup {c.ns}/job gets rejected due to Pod "
        optimistic = "0/1 nodes are available: 1 optimistic rejection in PostFilter."

        async def group_rejected() -> dict[str, list[str]] | None:
            n = await notes(c)
            failing = [p for p, ns in n.items() if any(rejection in x for x in ns)]
            others = [p for p, ns in n.items() if optimistic in ns]
            return n if failing and len(set(failing) | set(others)) == 3 else None

        reported = await eventually(group_rejected, what="the group rejected together")
        assert await c.bound() == {}
        failing = next(p for p, ns in reported.items() if any(rejection in x for x in ns))
        note = next(x for x in reported[failing] if rejection in x)
        assert note.startswith("0/2 nodes are available: 2 Insufficient cpu.")
        assert note.endswith(f"{rejection}{failing} is unschedulable even after PostFilter")
        await c.create_node(make_node("wn2", cpu="2"))
        await eventually(lambda: _bound_if(c, 3), what="the whole group bound")


# ---- CapacityScheduling (ElasticQuota CRD) ----------------------------------------------------

CAPACITY = """\
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter:
      enabled:
      - name: CapacityScheduling
    postFilter:
      enabled:
      - name: CapacityScheduling
      disabled:
      - name: "*"
    reserve:
      enabled:
      - name: CapacityScheduling
"""


@pytest.fixture
async def second_namespace(workload_plane: ControlPlane) -> AsyncIterator[str]:
    import uuid

    ns = f"w-{uuid.uuid4().hex[:10]}"
    status, body = workload_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    assert status == 201, body
    yield ns
    with contextlib.suppress(Exception):
        workload_plane.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods",
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        workload_plane.request("DELETE", f"/api/v1/namespaces/{ns}")


async def test_quota_borrowing_and_reclaim_preempt_the_borrower(
    workload_plane: ControlPlane, wcluster: Cluster, second_namespace: str
) -> None:
    a = wcluster
    b = Cluster(a.api, second_namespace)
    await a.create_node(make_node("wq0", cpu="4"))
    for cl in (a, b):
        await create(
            cl,
            "/apis/scheduling.x-k8s.io/v1alpha1",
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "ElasticQuota",
                "metadata": {"name": "quota"},
                "spec": {"min": {"cpu": "2"}, "max": {"cpu": "4"}},
            },
        )
    high, low = f"high-{a.ns}", f"low-{a.ns}"
    for name, value in ((high, 100), (low, 1)):
        await a.rest.request_json(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            body={
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    grace = {"terminationGracePeriodSeconds": 0, "priorityClassName": high}
    async with Serving(workload_plane, _config(CAPACITY), gates=DEFAULT_FEATURE_GATES):
        # a borrows 1 cpu of b's unused min.
        await a.create_pods(
            make_pod(f"a{i}", cpu="1", memory=None, extra_spec=grace) for i in range(3)
        )
        await eventually(lambda: _bound_if(a, 3), what="a's three pods bound")
        # b, within its min, takes the room back from a, even from higher priority pods.
        await b.create_pod(
            make_pod("b0", cpu="2", memory=None, extra_spec={"priorityClassName": low})
        )

        async def b_bound() -> bool:
            return "b0" in await b.bound()

        await eventually(b_bound, what="b0 bound after reclaiming")
        left = await a.pods()
        assert len(left) == 2, sorted(left)
        preempted = [n for n, ns in (await notes(a, "Preempted")).items() if ns]
        assert len(preempted) == 1 and preempted[0] not in left
    for name in (high, low):
        await a.rest.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
