"""Shared informers: kinds that plugins read are listed before pods, their changes reach
the queue as ``<Kind>/<Action>`` events, and the embedded cluster serves the generic
object calls (get, replace, patch) with the API's rules."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from ksched.backend.queue.cluster_event import ActionType, ClusterEvent, ClusterEventWithHint
from ksched.backend.queue.cluster_event import QueueingHint as QH
from ksched.backend.shared_informers import kind_of_resource
from ksched.cluster import APIError, Conflict, NotFound
from ksched.framework.builtins import default_plugins
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle
from ksched.framework.profile import default_profile
from ksched.framework.status import Code, Status
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import PROFILE, node_of, wait_for


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": spec,
    }


class NeedsClaim:
    """Rejects a pod until the claim named by its ``claim`` label exists; counts the
    hint calls, which see the raw claim objects."""

    name = "NeedsClaim"

    def __init__(self) -> None:
        self.hint_objects: list[Any] = []
        self.seen_in_handler: list[str] = []

    def setup(self, handle: Handle) -> None:
        self.claims = handle.informer("persistentvolumeclaims")
        # A handler of the plugin's own runs before the queue hears of the change.
        self.claims.add_handler(on_add=lambda obj: self.seen_in_handler.append("add"))

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status | None:
        want = pod.labels.get("claim", "")
        if self.claims.get(pod.namespace, want) is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f'claim "{want}" not found')
        return None

    def _hint(self, pod: Any, old: Any, new: Any) -> QH:
        self.hint_objects.append(new)
        assert self.seen_in_handler, "the plugin's handler runs first"
        wanted = pod.labels.get("claim")
        return QH.QUEUE if new["metadata"]["name"] == wanted else QH.QUEUE_SKIP

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._hint)
        ]


async def test_a_claim_created_later_wakes_exactly_the_pod_that_needs_it() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    c.create("persistentvolumeclaims", claim("early"))
    plugin = NeedsClaim()
    profile = dataclasses.replace(default_profile(), plugins=(*default_plugins(), plugin))
    sched = Scheduler(c, {PROFILE: profile}, seed=1)
    assert "persistentvolumeclaims" in sched.shared_informers
    await sched.start()
    # Listed before the pods: a pod's first attempt sees the claims that exist.
    assert sched.shared_informers.get("persistentvolumeclaims").get("default", "early")
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        for name, wanted in (("a", "early"), ("b", "late"), ("c", "never")):
            c.create("pods", make_pod(name, labels={"claim": wanted}))
        await wait_for(lambda: node_of(c, "a") == "n1")
        await wait_for(lambda: len(sched.queue.infos()) == 2 and sched.stats.unschedulable >= 2)
        c.create("persistentvolumeclaims", claim("late"))
        await wait_for(lambda: node_of(c, "b") == "n1")
        # The hint saw the raw claim, and skipped the pod that waits for another one.
        assert plugin.hint_objects and plugin.hint_objects[-1]["kind"] == "PersistentVolumeClaim"
        assert [i.pod.name for i in sched.queue.infos()] == ["c"]
        assert node_of(c, "c") is None
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_kind_asked_for_after_the_scheduler_is_built_is_refused() -> None:
    # No plugin of the default profile reads ElasticQuotas (CapacityScheduling does).
    plugins = tuple(default_plugins(post_filter=("DefaultPreemption",)))
    profile = dataclasses.replace(default_profile(), plugins=plugins)
    sched = Scheduler(InMemoryCluster(), {PROFILE: profile})
    kind = "elasticquotas.scheduling.x-k8s.io"
    assert kind not in sched.shared_informers
    with pytest.raises(RuntimeError, match="setup"):
        sched.handle.informer(kind)


def test_node_resources_fit_reads_device_classes_without_dynamic_resources() -> None:
    # Upstream's DRA manager exists whatever the profiles enable: NodeResourcesFit
    # leaves extended resources a DeviceClass maps to to DRA (DRAExtendedResource).
    plugins = tuple(default_plugins(post_filter=("DefaultPreemption",)))
    profile = dataclasses.replace(default_profile(), plugins=plugins)
    sched = Scheduler(InMemoryCluster(), {PROFILE: profile})
    assert "deviceclasses" in sched.shared_informers


async def test_embedded_cluster_replaces_and_patches_with_the_apis_rules() -> None:
    c = InMemoryCluster()
    stored = c.create("persistentvolumeclaims", {**claim("data"), "status": {"phase": "Pending"}})
    # A replace keeps the stored status (status is a subresource of PVCs).
    meta = stored["metadata"]
    replaced = await c.update_object(
        kind="persistentvolumeclaims",
        obj={
            **stored,
            "metadata": {**meta, "annotations": {"a": "1"}},
            "status": {"phase": "Bound"},
        },
    )
    assert replaced["metadata"]["annotations"] == {"a": "1"}
    assert replaced["status"] == {"phase": "Pending"}
    # A stale resourceVersion is a conflict.
    with pytest.raises(Conflict):
        await c.update_object(kind="persistentvolumeclaims", obj=stored)
    status = await c.update_object(
        kind="persistentvolumeclaims",
        obj={**replaced, "status": {"phase": "Bound"}},
        subresource="status",
    )
    assert status["status"] == {"phase": "Bound"}
    assert status["metadata"]["annotations"] == {"a": "1"}
    patched = await c.patch_object(
        kind="persistentvolumeclaims",
        namespace="default",
        name="data",
        patch={"metadata": {"annotations": {"a": None, "b": "2"}}},
    )
    assert patched["metadata"]["annotations"] == {"b": "2"}
    assert patched["status"] == {"phase": "Bound"}
    json_patched = await c.patch_object(
        kind="persistentvolumeclaims",
        namespace="default",
        name="data",
        patch=[{"op": "add", "path": "/metadata/labels/tier", "value": "db"}],
        patch_type="json",
    )
    assert json_patched["metadata"]["labels"] == {"app": "data", "tier": "db"}
    with pytest.raises(APIError) as err:
        await c.patch_object(
            kind="persistentvolumeclaims",
            namespace="default",
            name="data",
            patch=[{"op": "replace", "path": "/spec/missing", "value": 1}],
            patch_type="json",
        )
    assert err.value.status == 422 and "PersistentVolumeClaim data" in err.value.message
    with pytest.raises(NotFound):
        await c.get_object(kind="persistentvolumeclaims", namespace="default", name="nope")
    got = await c.get_object(kind="persistentvolumeclaims", namespace="default", name="data")
    assert got["metadata"]["labels"]["tier"] == "db"


def test_pods_and_nodes_are_not_watched_twice() -> None:
    # Every profile registers Pod and Node events (the built-in filters, and plugins
    # without events_to_register are woken by all): they come from the scheduler's own
    # informers, never from a second, shared one.
    sched = Scheduler(InMemoryCluster(), {PROFILE: default_profile()})
    kinds = {inf.kind for inf in sched.shared_informers.all()}
    assert not kinds & {"pods", "nodes", "namespaces", "poddisruptionbudgets"}
    # The volume plugins of the default profile read these.
    assert {"persistentvolumeclaims", "persistentvolumes", "storageclasses"} <= kinds


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("PersistentVolumeClaim", "persistentvolumeclaims"),
        ("resource.k8s.io/ResourceClaim", "resourceclaims"),
        ("storage.k8s.io/CSINode", "csinodes"),
        ("ResourceClaim", None),
        ("Pod", None),
        ("Node", None),
        ("AssignedPod", None),
        ("Namespace", None),
        ("PodDisruptionBudget", None),
    ],
)
def test_kinds_the_scheduler_watches_itself_have_no_shared_informer(
    resource: str, kind: str | None
) -> None:
    assert kind_of_resource(resource) == kind


def test_the_default_profile_watches_pods_and_nodes_once() -> None:
    sched = Scheduler(InMemoryCluster(), {PROFILE: default_profile()})
    watched = [inf.kind for inf in [sched.node_informer, sched.pod_informer, *sched.aux_informers]]
    assert watched.count("pods") == 1 and watched.count("nodes") == 1
