"""Volume scheduling against the real kube-apiserver v1.36 and kube-controller-manager's
PV controller: VolumeBinding, VolumeRestrictions, VolumeZone and NodeVolumeLimits end to
end.

The PV controller (``persistentvolume-binder-controller``, started once for this module)
completes the bindings ksched's PreBind starts, as in a real cluster; the
:class:`~ksched.testing.provisioner.TestProvisioner` stands in for a CSI external
provisioner (it creates a PV on the node the scheduler selected). StorageClasses, PVs
and CSINodes are cluster-scoped: each test names its own and deletes them afterwards.
Where a pod stays unschedulable, the upstream kube-scheduler of the same build runs side
by side on an identical pod (its own schedulerName) and its message is the expected one.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ksched.cluster import NotFound
from ksched.config import KubeSchedulerConfiguration, load_config_bytes
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControllerManager, ControlPlane, KubeScheduler
from ksched.testing.provisioner import SELECTED_NODE, TestProvisioner
from tests.integration.test_client_scheduler import Cluster, Running, eventually
from tests.integration.test_client_scheduler import cluster as cluster  # the fixture

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
STORAGE = "/apis/storage.k8s.io/v1"
PROVISIONER = "ksched.test/provisioner"
DRIVER = "ksched.test.csi"
ZONE = "topology.kubernetes.io/zone"
UPSTREAM = "upstream-scheduler"
#: The PostFilter part of upstream's message when DynamicResources' PostFilter fails.
DRA_POST_FILTER = ". not found"
DRA_NO_CLAIMS = "no new claims to deallocate, "


def scheduler_config(bind_timeout: int | None = None) -> KubeSchedulerConfiguration:
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "leaderElection: {leaderElect: false}",
        "clientConnection: {qps: 2000, burst: 2000}",
        "podInitialBackoffSeconds: 1",
        "podMaxBackoffSeconds: 1",
        "profiles:",
        "- schedulerName: default-scheduler",
    ]
    if bind_timeout is not None:
        lines += [
            "  pluginConfig:",
            "  - name: VolumeBinding",
            f"    args: {{bindTimeoutSeconds: {bind_timeout}}}",
        ]
    return load_config_bytes("\n".join(lines).encode())


@pytest.fixture(scope="module")
def pv_controller(control_plane: ControlPlane) -> Iterator[ControllerManager]:
    kcm = control_plane.start_controller_manager(["persistentvolume-binder-controller"])
    try:
        yield kcm
    finally:
        kcm.stop()


@pytest.fixture(scope="module")
def upstream(control_plane: ControlPlane) -> Iterator[KubeScheduler]:
    """kube-scheduler v1.36 serving only ``schedulerName: upstream-scheduler``."""
    sched = control_plane.start_kube_scheduler(
        {
            "podInitialBackoffSeconds": 1,
            "podMaxBackoffSeconds": 1,
            "profiles": [{"schedulerName": UPSTREAM}],
        }
    )
    try:
        yield sched
    finally:
        sched.stop()


class Storage:
    """The test's storage objects: created through the API, deleted afterwards."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.rest = cluster.rest
        self.suffix = uuid.uuid4().hex[:6]
        self._cleanup: list[str] = []

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    async def _post(self, path: str, obj: Obj, delete_path: str | None) -> Obj:
        out: Obj = await self.rest.request_json("POST", path, body=obj)
        if delete_path is not None:
            self._cleanup.append(f"{delete_path}/{obj['metadata']['name']}")
        return out

    async def storage_class(
        self,
        base: str,
        *,
        mode: str = "WaitForFirstConsumer",
        provisioner: str = "kubernetes.io/no-provisioner",
        allowed_topologies: list[Obj] | None = None,
    ) -> str:
        name = self.name(base)
        obj: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
        }
        if allowed_topologies is not None:
            obj["allowedTopologies"] = allowed_topologies
        await self._post(f"{STORAGE}/storageclasses", obj, f"{STORAGE}/storageclasses")
        return name

    async def pv(
        self,
        base: str,
        class_name: str,
        *,
        node: str | None = None,
        claim: str | None = None,
        labels: dict[str, str] | None = None,
        modes: tuple[str, ...] = ("ReadWriteOnce",),
        csi: bool = False,
        capacity: str = "1Gi",
    ) -> str:
        name = self.name(base)
        spec: Obj = {
            "capacity": {"storage": capacity},
            "accessModes": list(modes),
            "storageClassName": class_name,
            "persistentVolumeReclaimPolicy": "Retain",
        }
        if csi:
            spec["csi"] = {"driver": DRIVER, "volumeHandle": name}
        else:
            spec["local"] = {"path": "/mnt/disks/" + name}
        if node is not None or not csi:
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In" if node else "Exists",
                                    **({"values": [node]} if node else {}),
                                }
                            ]
                        }
                    ]
                }
            }
        if claim is not None:
            spec["claimRef"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": self.cluster.ns,
                "name": claim,
            }
        obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec,
        }
        await self._post("/api/v1/persistentvolumes", obj, "/api/v1/persistentvolumes")
        return name

    async def pvc(
        self,
        name: str,
        class_name: str,
        *,
        volume: str | None = None,
        modes: tuple[str, ...] = ("ReadWriteOnce",),
        storage: str = "1Gi",
    ) -> Obj:
        spec: Obj = {
            "accessModes": list(modes),
            "storageClassName": class_name,
            "resources": {"requests": {"storage": storage}},
        }
        if volume is not None:
            spec["volumeName"] = volume
        obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": self.cluster.ns},
            "spec": spec,
        }
        return await self._post(
            f"/api/v1/namespaces/{self.cluster.ns}/persistentvolumeclaims", obj, None
        )

    async def get_pvc(self, name: str) -> Obj:
        out: Obj = await self.rest.request_json(
            "GET", f"/api/v1/namespaces/{self.cluster.ns}/persistentvolumeclaims/{name}"
        )
        return out

    async def get_pv(self, name: str) -> Obj:
        out: Obj = await self.rest.request_json("GET", f"/api/v1/persistentvolumes/{name}")
        return out

    async def bound_claim(self, name: str, pv: str, class_name: str, **kw: Any) -> None:
        """A PVC bound to ``pv`` by the PV controller (phase Bound, bind-completed)."""
        await self.pvc(name, class_name, volume=pv, **kw)

        async def bound() -> bool:
            return (await self.get_pvc(name)).get("status", {}).get("phase") == "Bound"

        await eventually(bound, what=f"PVC {name} bound by the PV controller")

    async def csinode(self, node: str, count: int) -> None:
        obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": node},
            "spec": {
                "drivers": [
                    {"name": DRIVER, "nodeID": node, "allocatable": {"count": count}},
                ]
            },
        }
        await self._post(f"{STORAGE}/csinodes", obj, f"{STORAGE}/csinodes")

    async def csi_driver(self, name: str, *, storage_capacity: bool) -> None:
        obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": name},
            "spec": {"storageCapacity": storage_capacity},
        }
        await self._post(f"{STORAGE}/csidrivers", obj, f"{STORAGE}/csidrivers")

    async def capacity(self, class_name: str, amount: str) -> None:
        """A CSIStorageCapacity of ``amount`` for ``class_name`` on every node."""
        obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": self.name("capacity"), "namespace": self.cluster.ns},
            "storageClassName": class_name,
            "nodeTopology": {},
            "capacity": amount,
        }
        await self._post(f"{STORAGE}/namespaces/{self.cluster.ns}/csistoragecapacities", obj, None)

    async def close(self) -> None:
        for path in reversed(self._cleanup):
            with contextlib.suppress(NotFound):
                await self.rest.request("DELETE", path)


@pytest.fixture
async def storage(cluster: Cluster, pv_controller: ControllerManager) -> AsyncIterator[Storage]:
    s = Storage(cluster)
    try:
        yield s
    finally:
        with contextlib.suppress(NotFound):
            await cluster.rest.request(
                "DELETE", f"/api/v1/namespaces/{cluster.ns}/persistentvolumeclaims"
            )
        await s.close()


def volume_pod(name: str, *claims: str, scheduler: str | None = None, **kw: Any) -> Obj:
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return make_pod(name, scheduler_name=scheduler, extra_spec={"volumes": volumes}, **kw)


async def node_of(cluster: Cluster, name: str) -> str:
    try:
        return str((await cluster.pod(name))["spec"].get("nodeName") or "")
    except NotFound:
        return ""


async def condition(cluster: Cluster, name: str) -> Obj | None:
    conds = (await cluster.pod(name))["status"].get("conditions") or []
    return next(
        (c for c in conds if c.get("type") == "PodScheduled" and c.get("status") == "False"),
        None,
    )


async def unschedulable_like_upstream(cluster: Cluster, name: str) -> str:
    """Wait until pod ``name`` (ksched) and its twin ``<name>-up`` (kube-scheduler) are
    both Unschedulable; their messages must be equal. Returns the message."""
    ours = await eventually(lambda: condition(cluster, name), what=f"{name} Unschedulable")
    theirs = await eventually(
        lambda: condition(cluster, f"{name}-up"), what=f"{name}-up Unschedulable (upstream)"
    )
    assert ours["reason"] == theirs["reason"] == "Unschedulable"
    mine, want = str(ours["message"]), str(theirs["message"])
    # Word for word, DynamicResources' PostFilter part included: "no new claims to
    # deallocate, " before preemption's, or its "not found" error (which stops
    # preemption) when a volume plugin's PreFilter rejected the pod before
    # DynamicResources' PreFilter ran.
    assert mine == want
    return mine


async def twins(cluster: Cluster, name: str, *claims: str, **kw: Any) -> None:
    """Pod ``name`` for ksched and ``<name>-up`` for kube-scheduler, otherwise equal."""
    await cluster.create_pod(volume_pod(name, *claims, **kw))
    await cluster.create_pod(volume_pod(f"{name}-up", *claims, scheduler=UPSTREAM, **kw))


# --------------------------------------------------------------------------- tests


async def test_wait_for_first_consumer_claim_is_provisioned_on_the_selected_node(
    kubeconfig: Any, cluster: Cluster, storage: Storage
) -> None:
    await cluster.create_nodes([make_node("n1"), make_node("n2", cpu="8")])
    sc = await storage.storage_class("wffc", provisioner=PROVISIONER)
    await storage.pvc("data", sc)
    async with (
        Running(str(kubeconfig), scheduler_config()) as sched,
        TestProvisioner(sched.api, cluster.rest, PROVISIONER) as prov,
    ):
        await cluster.create_pod(volume_pod("db", "data"))
        node = await eventually(lambda: node_of(cluster, "db"), what="db bound")
        # The least-allocated n2 wins; the claim was provisioned there first.
        assert node == "n2"
        claim = await storage.get_pvc("data")
        assert claim["metadata"]["annotations"][SELECTED_NODE] == "n2"
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["volumeName"] in prov.created
        pv = await storage.get_pv(claim["spec"]["volumeName"])
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"][0]["values"] == ["n2"]
        storage._cleanup.append(f"/api/v1/persistentvolumes/{pv['metadata']['name']}")


async def test_static_local_pv_puts_the_pod_where_its_volume_is(
    kubeconfig: Any, cluster: Cluster, storage: Storage
) -> None:
    # n1, the emptiest node, has no PV; on n2 the smallest PV that fits is chosen.
    await cluster.create_nodes([make_node("n1", cpu="8"), make_node("n2")])
    sc = await storage.storage_class("local")
    big = await storage.pv("big", sc, node="n2", capacity="10Gi")
    small = await storage.pv("small", sc, node="n2", capacity="5Gi")
    tiny = await storage.pv("tiny", sc, node="n2", capacity="1Gi")
    await storage.pvc("data", sc, storage="2Gi")
    async with Running(str(kubeconfig), scheduler_config()):
        await cluster.create_pod(volume_pod("db", "data"))
        assert await eventually(lambda: node_of(cluster, "db"), what="db bound") == "n2"

        async def bound() -> str:
            return str((await storage.get_pvc("data"))["spec"].get("volumeName") or "")

        assert await eventually(bound, what="data bound") == small
    for unused in (big, tiny):
        assert "claimRef" not in (await storage.get_pv(unused))["spec"]
    assert (await storage.get_pv(small))["spec"]["claimRef"]["name"] == "data"


async def test_missing_claim_is_unschedulable_until_it_is_created(
    kubeconfig: Any, cluster: Cluster, storage: Storage, upstream: KubeScheduler
) -> None:
    await cluster.create_nodes([make_node("n1"), make_node("n2")])
    sc = await storage.storage_class("local")
    pv = await storage.pv("pv", sc, node="n1")
    async with Running(str(kubeconfig), scheduler_config()):
        await twins(cluster, "db", "data")
        message = await unschedulable_like_upstream(cluster, "db")
        # VolumeBinding's PreFilter rejected the pod before DynamicResources' PreFilter
        # ran: its PostFilter finds no state and fails, so preemption does not speak.
        assert message == (
            '0/2 nodes are available: persistentvolumeclaim "data" not found' + DRA_POST_FILTER
        )
        # The PVC Add event moves the pod (VolumeBinding's queueing hint).
        await storage.pvc("data", sc)
        assert await eventually(lambda: node_of(cluster, "db"), what="db bound") == "n1"
    assert (await storage.get_pvc("data"))["spec"]["volumeName"] == pv


async def test_unbound_immediate_claim_is_unschedulable_as_upstream(
    kubeconfig: Any, cluster: Cluster, storage: Storage, upstream: KubeScheduler
) -> None:
    await cluster.create_nodes([make_node("n1")])
    sc = await storage.storage_class("immediate", mode="Immediate")
    await storage.pvc("data", sc)  # no PV: the PV controller leaves it Pending
    async with Running(str(kubeconfig), scheduler_config()):
        await twins(cluster, "db", "data")
        message = await unschedulable_like_upstream(cluster, "db")
        assert message.endswith(
            "pod has unbound immediate PersistentVolumeClaims" + DRA_POST_FILTER
        )


async def test_read_write_once_pod_claim_admits_one_pod(
    kubeconfig: Any, cluster: Cluster, storage: Storage, upstream: KubeScheduler
) -> None:
    await cluster.create_nodes([make_node("n1"), make_node("n2")])
    sc = await storage.storage_class("rwop", mode="Immediate")
    pv = await storage.pv("pv", sc, claim="data", modes=("ReadWriteOncePod",), csi=True)
    await storage.bound_claim("data", pv, sc, modes=("ReadWriteOncePod",))
    async with Running(str(kubeconfig), scheduler_config()):
        await cluster.create_pod(volume_pod("first", "data"))
        await eventually(lambda: node_of(cluster, "first"), what="first bound")
        await twins(cluster, "second", "data")
        message = await unschedulable_like_upstream(cluster, "second")
        assert (
            "2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
            "access mode already in-use by another pod" in message
        )
        # Deleting the first pod frees the claim (the pod Delete event moves the other);
        # upstream's twin goes first, or both schedulers would race for the claim.
        for gone in ("second-up", "first"):
            await cluster.rest.request(
                "DELETE",
                f"/api/v1/namespaces/{cluster.ns}/pods/{gone}",
                json_body={"gracePeriodSeconds": 0},
            )
        await eventually(lambda: node_of(cluster, "second"), what="second bound")


async def test_zone_labelled_pv_keeps_the_pod_in_its_zone(
    kubeconfig: Any, cluster: Cluster, storage: Storage, upstream: KubeScheduler
) -> None:
    await cluster.create_nodes(
        [
            make_node("a1", cpu="8", labels={ZONE: "zone-a"}),
            make_node("b1", labels={ZONE: "zone-b"}),
        ]
    )
    sc = await storage.storage_class("zonal", mode="Immediate")
    pv = await storage.pv("pv", sc, claim="data", csi=True, labels={ZONE: "zone-b"})
    await storage.bound_claim("data", pv, sc)
    pv_c = await storage.pv("pv-c", sc, claim="data-c", csi=True, labels={ZONE: "zone-c"})
    await storage.bound_claim("data-c", pv_c, sc)
    async with Running(str(kubeconfig), scheduler_config()):
        await cluster.create_pod(volume_pod("db", "data"))
        assert await eventually(lambda: node_of(cluster, "db"), what="db bound") == "b1"
        await twins(cluster, "lost", "data-c")
        message = await unschedulable_like_upstream(cluster, "lost")
        assert "node(s) had no available volume zone" in message


async def test_csinode_attach_limit_spreads_then_refuses(
    kubeconfig: Any, cluster: Cluster, storage: Storage, upstream: KubeScheduler
) -> None:
    await cluster.create_nodes([make_node("n1"), make_node("n2")])
    for n in ("n1", "n2"):
        await storage.csinode(n, 1)
    sc = await storage.storage_class("csi", mode="Immediate")
    for i in range(3):
        pv = await storage.pv(f"pv{i}", sc, claim=f"data{i}", csi=True)
        await storage.bound_claim(f"data{i}", pv, sc)
    async with Running(str(kubeconfig), scheduler_config()):
        await cluster.create_pod(volume_pod("p0", "data0"))
        first = await eventually(lambda: node_of(cluster, "p0"), what="p0 bound")
        # The node p0 took has its one attachment used: p1 goes to the other.
        await cluster.create_pod(volume_pod("p1", "data1"))
        second = await eventually(lambda: node_of(cluster, "p1"), what="p1 bound")
        assert {first, second} == {"n1", "n2"}
        await twins(cluster, "p2", "data2")
        message = await unschedulable_like_upstream(cluster, "p2")
        assert "node(s) exceed max volume count" in message


async def test_bind_timeout_sends_the_pod_back_and_it_binds_once_provisioned(
    kubeconfig: Any, cluster: Cluster, storage: Storage
) -> None:
    await cluster.create_nodes([make_node("n1")])
    sc = await storage.storage_class("slow", provisioner=PROVISIONER)
    await storage.pvc("data", sc)
    async with Running(str(kubeconfig), scheduler_config(bind_timeout=2)) as sched:
        await cluster.create_pod(volume_pod("db", "data"))

        async def timed_out() -> Obj | None:
            c = await condition(cluster, "db")
            return c if c is not None and c.get("reason") == "SchedulerError" else None

        cond = await eventually(timed_out, what="db's PreBind timed out")
        assert cond["message"] == (
            'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        )
        assert not await node_of(cluster, "db")
        # The claim keeps the node the scheduler chose, as upstream leaves it.
        claim = await storage.get_pvc("data")
        assert claim["metadata"]["annotations"][SELECTED_NODE] == "n1"
        # Nothing is lost: the pod is still queued, and binds once a provisioner runs.
        uid = (await cluster.pod("db"))["metadata"]["uid"]
        assert sched.queue.where(uid) is not None
        async with TestProvisioner(sched.api, cluster.rest, PROVISIONER) as prov:
            assert await eventually(lambda: node_of(cluster, "db"), what="db bound") == "n1"
            for name in prov.created:
                storage._cleanup.append(f"/api/v1/persistentvolumes/{name}")


async def _bound_pv_elsewhere(storage: Storage) -> None:
    sc = await storage.storage_class("elsewhere", mode="Immediate")
    pv = await storage.pv("pv", sc, claim="data", node="elsewhere")
    await storage.bound_claim("data", pv, sc)


async def _no_matching_pv(storage: Storage) -> None:
    sc = await storage.storage_class("local")
    await storage.pv("pv", sc, node="elsewhere")
    await storage.pvc("data", sc)


async def _not_enough_capacity(storage: Storage) -> None:
    driver = storage.name("capacity.csi")
    await storage.csi_driver(driver, storage_capacity=True)
    sc = await storage.storage_class("tracked", provisioner=driver)
    await storage.capacity(sc, "1Mi")
    await storage.pvc("data", sc, storage="1Gi")


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        pytest.param(
            _bound_pv_elsewhere,
            "2 node(s) didn't match PersistentVolume's node affinity",
            id="bound-pv-node-affinity",
        ),
        pytest.param(
            _no_matching_pv,
            "2 node(s) didn't find available persistent volumes to bind",
            id="no-pv-to-bind",
        ),
        pytest.param(
            _not_enough_capacity,
            "2 node(s) did not have enough free storage",
            id="csi-storage-capacity",
        ),
    ],
)
async def test_volume_binding_filter_reasons_are_upstreams(
    kubeconfig: Any,
    cluster: Cluster,
    storage: Storage,
    upstream: KubeScheduler,
    setup: Any,
    reason: str,
) -> None:
    await cluster.create_nodes([make_node("n1"), make_node("n2")])
    await setup(storage)
    async with Running(str(kubeconfig), scheduler_config()):
        await twins(cluster, "db", "data")
        message = await unschedulable_like_upstream(cluster, "db")
        assert message.startswith(f"0/2 nodes are available: {reason}. {DRA_NO_CLAIMS}preemption: ")
