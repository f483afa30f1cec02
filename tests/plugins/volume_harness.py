"""A cluster with storage objects, run through the volume plugins' Python halves and the
Rust kernels, the way the scheduler runs them.

Upstream's volume tests build a plugin over fake listers and call PreFilter, then Filter
on each node. Here a :class:`VolumeCluster` holds the nodes and pods (the builders of
:mod:`tests.plugins.harness`) and the API objects (PVCs, PVs, StorageClasses, CSINodes,
CSIDrivers, CSIStorageCapacities, VolumeAttachments, as the API serves them);
:func:`run` builds the plugins' Python halves (``kernel_plugin_halves``) over a fake
handle whose informers hold those objects (their handlers fire as the scheduler's would
when the objects are listed, which feeds the snapshot's storage columns), runs each
plugin's Kernel PreFilter for the incoming pod, attaches the requests and asks the
snapshot for every node's Filter outcome and scores. The result reports, per plugin,
upstream's PreFilter status (``None`` for success, ``"Skip"``, or ``(code, message)``)
and, per node, the Filter status (``None`` or ``(code, reason, ...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched._core import CompiledPod, Profile, Snapshot
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.builtins import kernel_plugin_halves
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import NodeInfo
from tests.plugins.harness import to_api

Obj = dict[str, Any]

#: Kind of each object list of a VolumeCluster.
KINDS = (
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
    "csidrivers",
    "csistoragecapacities",
    "volumeattachments",
)


class FakeInformer:
    """A shared informer over a dict: ``add`` and ``delete`` run the handlers as the real
    informer's events do."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.store: dict[str, Obj] = {}
        self._adds: list[Callable[[Obj], None]] = []
        self._updates: list[Callable[[Obj, Obj], None]] = []
        self._deletes: list[Callable[[Obj], None]] = []

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.store.get(f"{namespace}/{name}" if namespace else name)

    def add_handler(
        self,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        if on_add:
            self._adds.append(on_add)
        if on_update:
            self._updates.append(on_update)
        if on_delete:
            self._deletes.append(on_delete)

    @staticmethod
    def key(obj: Obj) -> str:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        return f"{ns}/{meta['name']}" if ns else str(meta["name"])

    def add(self, obj: Obj) -> None:
        key = self.key(obj)
        old = self.store.get(key)
        self.store[key] = obj
        if old is None:
            for fn in self._adds:
                fn(obj)
        else:
            for fn in self._updates:
                fn(old, obj)

    def delete(self, obj: Obj) -> None:
        old = self.store.pop(self.key(obj), None)
        if old is not None:
            for fn in self._deletes:
                fn(old)


class FakeAPI:
    """``update_object`` as the API server answers it: the object with a new
    resourceVersion (or the error set for its name), recorded in ``updates``."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Obj]] = []
        self.fail: dict[str, Exception] = {}
        self._rv = 1000

    async def update_object(self, *, kind: str, obj: Obj, subresource: str = "") -> Obj:
        name = obj["metadata"]["name"]
        if name in self.fail:
            raise self.fail[name]
        self._rv += 1
        stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
        self.updates.append((kind, stored))
        return stored


class FakeHandle:
    """The handle members the volume plugins use."""

    def __init__(self, snapshot: Snapshot, nodes: Mapping[str, Node], pods: Mapping[str, Obj]):
        self._snapshot = snapshot
        self.nodes = dict(nodes)
        self.pods = dict(pods)
        self.informers: dict[str, FakeInformer] = {}
        self._shared: dict[str, object] = {}
        self.api = FakeAPI()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def informer(self, kind: str) -> FakeInformer:
        inf = self.informers.get(kind)
        if inf is None:
            inf = self.informers[kind] = FakeInformer(kind)
        return inf

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self._shared:
            self._shared[key] = factory()
        return self._shared[key]

    def node_info(self, name: str) -> NodeInfo:
        return NodeInfo(name, self.nodes.get(name), self._snapshot)

    def get_pod(self, namespace: str, name: str) -> Obj | None:
        return self.pods.get(f"{namespace}/{name}")


@dataclass
class VolumeCluster:
    """Nodes and bound pods (:mod:`tests.plugins.harness` dicts) and API objects."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    objects: dict[str, list[Obj]] = field(default_factory=dict)

    def add(self, kind: str, *objs: Obj) -> VolumeCluster:
        self.objects.setdefault(kind, []).extend(objs)
        return self


@dataclass
class Outcome:
    """PreFilter verdicts by plugin, Filter statuses and total scores by node."""

    pre_filter: dict[str, Any]
    nodes: dict[str, tuple[str, ...] | None]
    totals: dict[str, int]
    scores: dict[str, dict[str, int]]
    compiled: CompiledPod
    snapshot: Snapshot
    plugins: dict[str, Any]
    state: CycleState
    handle: FakeHandle


def _node_obj(n: Obj) -> Obj:
    return {
        "metadata": {"name": n["name"], "labels": n["labels"]},
        "spec": {},
        "status": {"allocatable": {k: str(v) for k, v in n["allocatable"].items()}},
    }


def build(c: VolumeCluster, plugins: Iterable[str]) -> tuple[FakeHandle, dict[str, Any]]:
    """The snapshot, handle and set-up plugin halves for cluster ``c``."""
    snap = Snapshot(0)
    nodes: dict[str, Node] = {}
    for n in c.nodes:
        snap.upsert_node(n["name"], n["allocatable"], n["labels"], n["taints"], n["unschedulable"])
        nodes[n["name"]] = Node.from_dict(_node_obj(n))
    pods = {}
    for p in c.pods:
        obj = to_api(p)
        pods[f"{p['namespace']}/{p['name']}"] = obj
        snap.add_pod(compile_pod(Pod.from_dict(obj)), p["node"])
    handle = FakeHandle(snap, nodes, pods)
    halves = {p.name: p for p in kernel_plugin_halves(list(plugins))}
    for p in halves.values():
        p.setup(handle)
    for kind in KINDS:
        inf = handle.informer(kind)
        for obj in c.objects.get(kind, ()):
            inf.add(obj)
    return handle, halves


def run(
    c: VolumeCluster,
    incoming: Obj,
    filters: Sequence[str],
    scores: Sequence[tuple[str, int]] = (),
    args: Mapping[str, Obj] | None = None,
) -> Outcome:
    """Every node's Filter outcome for ``incoming`` with the volume plugins ``filters``."""
    handle, halves = build(c, [f for f in filters])
    profile = Profile(list(filters), list(scores), dict(args or {}))
    pod = Pod.from_dict(to_api(incoming))
    state = CycleState()
    verdicts: dict[str, Any] = {}
    requests = []
    for name in filters:
        plugin = halves.get(name)
        if plugin is None:
            continue
        if not plugin.applies_to(pod):
            verdicts[name] = "Skip"
            continue
        req = plugin.kernel_pre_filter(state, pod)
        if req is None:
            verdicts[name] = "Skip"
            continue
        requests.append(req)
        reject = getattr(req, "reject", None)
        verdicts[name] = reject
    compiled = compile_pod(pod)
    if requests:
        compiled = compiled.with_requests(requests)
    active = set(handle.snapshot.active_filters(compiled, profile))
    for name in filters:
        if verdicts.get(name) is None and name in halves and name not in active:
            verdicts[name] = "Skip"
    rows = handle.snapshot.explain(compiled, profile)
    nodes: dict[str, tuple[str, ...] | None] = {}
    totals: dict[str, int] = {}
    per_plugin: dict[str, dict[str, int]] = {}
    for row in rows:
        st = row["status"]
        nodes[row["node"]] = None if st is None else (st["code"], *st["reasons"])
        if st is None:
            totals[row["node"]] = row["total"]
            for plugin, s in row["scores"].items():
                per_plugin.setdefault(plugin, {})[row["node"]] = s["normalized"]
    return Outcome(
        verdicts, nodes, totals, per_plugin, compiled, handle.snapshot, halves, state, handle
    )


# --- object builders ------------------------------------------------------------------


def pvc(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    storage: str | None = None,
    class_name: str | None = None,
    volume: str = "",
    annotations: Mapping[str, str] | None = None,
    phase: str | None = None,
    deleting: bool = False,
    selector: Obj | None = None,
    owner: Obj | None = None,
    rv: str = "1",
) -> Obj:
    spec: Obj = {"accessModes": list(modes)}
    if storage is not None:
        spec["resources"] = {"requests": {"storage": storage}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "resourceVersion": rv,
        "annotations": dict(annotations or {}),
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner is not None:
        meta["ownerReferences"] = [owner]
    obj: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def pv(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    capacity: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    class_name: str = "",
    claim: tuple[str, str] | tuple[str, str, str] | None = None,
    phase: str | None = None,
    affinity: Obj | None = None,
    source: Obj | None = None,
    annotations: Mapping[str, str] | None = None,
    rv: str = "1",
) -> Obj:
    """A PV; ``claim`` is ``(namespace, name[, uid])`` of its claimRef, ``affinity`` its
    ``nodeAffinity.required``, ``source`` the volume source (default: none)."""
    spec: Obj = {"accessModes": list(modes), **(source or {})}
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if class_name:
        spec["storageClassName"] = class_name
    if claim is not None:
        ref: Obj = {"kind": "PersistentVolumeClaim", "namespace": claim[0], "name": claim[1]}
        if len(claim) == 3:
            ref["uid"] = claim[2]
        spec["claimRef"] = ref
    if affinity is not None:
        spec["nodeAffinity"] = {"required": affinity}
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "resourceVersion": rv,
        },
        "spec": spec,
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def storage_class(
    name: str,
    *,
    mode: str | None = "Immediate",
    provisioner: str = "kubernetes.io/no-provisioner",
    allowed_topologies: list[Obj] | None = None,
) -> Obj:
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        obj["volumeBindingMode"] = mode
    if allowed_topologies is not None:
        obj["allowedTopologies"] = allowed_topologies
    return obj


def csi_node(node: str, drivers: Mapping[str, int | None], migrated: Sequence[str] = ()) -> Obj:
    """A CSINode; ``drivers`` maps driver names to their ``allocatable.count`` (None: unset)."""
    meta: Obj = {"name": node}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(migrated)}
    specs = []
    for d, count in drivers.items():
        e: Obj = {"name": d, "nodeID": node}
        if count is not None:
            e["allocatable"] = {"count": count}
        specs.append(e)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta,
        "spec": {"drivers": specs},
    }


def csi_driver(name: str, *, storage_capacity: bool | None = None) -> Obj:
    spec: Obj = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": spec,
    }


def csi_capacity(
    name: str,
    class_name: str,
    capacity: str | None,
    *,
    max_volume_size: str | None = None,
    topology: Obj | None = None,
    namespace: str = "default",
) -> Obj:
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": class_name,
    }
    if capacity is not None:
        obj["capacity"] = capacity
    if max_volume_size is not None:
        obj["maximumVolumeSize"] = max_volume_size
    if topology is not None:
        obj["nodeTopology"] = topology
    return obj


def volume_attachment(name: str, node: str, attacher: str, pv_name: str | None) -> Obj:
    source: Obj = {} if pv_name is None else {"persistentVolumeName": pv_name}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": source},
    }


def pvc_volume(claim: str, name: str | None = None) -> Obj:
    return {"name": name or f"vol-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def volume_pod(
    name: str = "p",
    *volumes: Obj,
    namespace: str = "default",
    node: str | None = None,
    uid: str | None = None,
) -> Obj:
    """A harness pod with these ``spec.volumes``."""
    from tests.plugins.harness import pod

    p = pod(name, namespace=namespace, node=node, uid=uid)
    if volumes:
        p["spec"]["volumes"] = list(volumes)
    return p


def csi_pv_source(driver: str, handle: str) -> Obj:
    return {"csi": {"driver": driver, "volumeHandle": handle}}


def hostname_affinity(*nodes: str, key: str = "kubernetes.io/hostname") -> Obj:
    """``nodeAffinity.required`` admitting nodes whose ``key`` label is one of ``nodes``."""
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(nodes)}]}
        ]
    }
