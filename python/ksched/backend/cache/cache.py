"""The scheduler cache: the one owner of the Rust node snapshot.

Informer events (nodes, and pods that are bound to a node) and the scheduler's own
decisions (assume, forget) all go through here; the cache turns them into incremental
snapshot updates, so a scheduling cycle always sees one consistent snapshot without any
copy. Assumed pods are accounted on their node from the moment the scheduler picks it;
the informer's event for the bound pod confirms them, and a failed binding forgets them.

Like upstream's cache, it tolerates informer events in any order: a pod may arrive
before its node, and a node may be deleted while pods are still accounted on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ksched import logs
from ksched._core import CompiledPod, Snapshot
from ksched.api.declared_features import try_map
from ksched.api.errors import InvalidObjectError
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.cache.podgroups import PodGroupStates
from ksched.backend.compile import compile_bound_pod

log = logging.getLogger(__name__)
_V2 = logs.get_logger(__name__).v(2)

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_LABEL_BETA = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: dict[str, str]) -> str:
    """component-helpers ``GetZoneKey``: ``region:\\x00:zone``, or "" without either."""
    zone = labels.get(ZONE_LABEL) or labels.get(ZONE_LABEL_BETA) or ""
    region = labels.get(REGION_LABEL) or labels.get(REGION_LABEL_BETA) or ""
    if not zone and not region:
        return ""
    return region + ":\x00:" + zone


def _node_tree_log(message: str, node: Node) -> None:
    """Upstream's node tree logs a node joining or leaving it (V(2))."""
    if _V2.enabled:
        _V2.info(message, node=logs.kref("", node.name), zone=zone_key(node.labels))


@dataclass(slots=True)
class _CachedPod:
    pod: Pod
    compiled: CompiledPod
    node_name: str
    assumed: bool


class Cache:
    """Nodes and the pods accounted on them."""

    def __init__(self, *, seed: int | None = None, pod_groups: bool = False) -> None:
        self.snapshot = Snapshot(seed)
        #: The state of every scheduling.k8s.io PodGroup (tracked with the
        #: GenericWorkload gate on, ``pod_groups``).
        self.pod_groups = PodGroupStates(enabled=pod_groups)
        self.nodes: dict[str, Node] = {}
        self._pods: dict[str, _CachedPod] = {}
        #: node → uid → pod: the pods accounted on each node (preemption's victims).
        self._by_node: dict[str, dict[str, _CachedPod]] = {}
        #: node → a number that changes whenever the node or its pods do (node_generation).
        self._generations: dict[str, int] = {}

    # ---- nodes -------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        """Add or replace a node. Raises :class:`InvalidObjectError` (the node is left
        as it was) when the Rust snapshot refuses one of its fields."""
        try:
            self.snapshot.upsert_node(
                node.name,
                node.allocatable,
                node.labels,
                [(t.key, t.value, t.effect) for t in node.taints],
                node.unschedulable,
                [(list(names), size) for names, size in node.images],
                list(try_map(node.declared_features)),
            )
        except ValueError as exc:
            text = str(exc).removeprefix(f"Node {node.name}: ")
            field, _, message = text.partition(": ")
            raise InvalidObjectError("Node", node.name, field, message) from None
        old = self.nodes.get(node.name)
        if old is None:
            _node_tree_log("Added node to NodeTree", node)
        elif zone_key(old.labels) != zone_key(node.labels):
            _node_tree_log("Removed node from NodeTree", old)
            _node_tree_log("Added node to NodeTree", node)
        self.nodes[node.name] = node
        self.touch(node.name)

    def remove_node(self, name: str) -> None:
        old = self.nodes.pop(name, None)
        if old is not None:
            _node_tree_log("Removed node from NodeTree", old)
        self.snapshot.remove_node(name)
        self.touch(name)

    def touch(self, node: str) -> None:
        """Mark ``node`` changed (also called when the pods nominated to it change)."""
        gens = self._generations
        gens[node] = gens.get(node, 0) + 1

    def node_generation(self, node: str) -> int:
        """Changes whenever ``node``, the set of pods accounted on it or one of those
        pods changes, or :meth:`touch` is called (lets per-node results be reused while
        it stays the same)."""
        return self._generations.get(node, 0)

    def node_generations(self) -> Mapping[str, int]:
        """:meth:`node_generation` of every node that has one (read-only view)."""
        return self._generations

    # ---- pods --------------------------------------------------------------------

    def add_pod(self, pod: Pod, compiled: CompiledPod | None = None) -> InvalidObjectError | None:
        """A bound pod seen through the informer (added or updated).

        Confirms a pod this scheduler assumed on the same node; re-accounts a pod that
        changed or moved. A pod whose terms cannot be compiled is accounted by its
        requests, ports, labels and images (:func:`compile_bound_pod`); the error is
        returned for the caller to report.
        """
        cached = self._pods.get(pod.uid)
        groups = self.pod_groups
        if groups.enabled and pod.scheduling_group:
            if cached is not None:
                groups.remove_member(cached.pod)
            groups.add_member(pod)
        if cached is not None and cached.assumed and cached.node_name == pod.node_name:
            self.snapshot.confirm(pod.uid, pod.node_name)
            cached.assumed = False
            cached.pod = pod
            self.touch(pod.node_name)
            return None
        if (
            cached is not None
            and cached.node_name == pod.node_name
            and cached.pod.requests == pod.requests
            and cached.pod.labels == pod.labels
            and cached.pod.affinity == pod.affinity
            and cached.pod.host_ports == pod.host_ports
            and (cached.pod.deletion_timestamp is None) == (pod.deletion_timestamp is None)
        ):
            cached.pod = pod
            self.touch(pod.node_name)
            return None
        error = None
        if compiled is None:
            compiled, error = compile_bound_pod(pod)
        self.snapshot.add_pod(compiled, pod.node_name)
        if cached is not None:
            self._unindex(cached)
        self._index(_CachedPod(pod, compiled, pod.node_name, assumed=False))
        return error

    def confirm_assumed(self, uid: str, node_name: str) -> bool:
        """The API server bound a pod this scheduler assumed on ``node_name``: confirm it
        without re-parsing the object (the assumed pod's spec is the bound pod's).
        Returns False when the pod is not assumed there (the caller then parses)."""
        cached = self._pods.get(uid)
        if cached is None or not cached.assumed or cached.node_name != node_name:
            return False
        self.snapshot.confirm(uid, node_name)
        cached.assumed = False
        self.touch(node_name)
        if self.pod_groups.enabled and cached.pod.scheduling_group:
            bound = dataclasses.replace(cached.pod, node_name=node_name)
            self.pod_groups.remove_member(cached.pod)
            self.pod_groups.add_member(bound)
            cached.pod = bound
        return True

    def remove_pod(self, uid: str) -> bool:
        cached = self._pods.pop(uid, None)
        if cached is None:
            return False
        self._unindex(cached)
        self.snapshot.remove_pod(uid)
        self.pod_groups.remove_member(cached.pod)
        return True

    def assume(self, pod: Pod, compiled: CompiledPod, node_name: str) -> None:
        """Account ``pod`` on ``node_name`` before the binding is confirmed. The kernel
        requests of the attempt (claims, PVs...) are not kept."""
        if compiled.has_requests:
            compiled = compiled.without_requests()
        self.snapshot.assume(compiled, node_name)
        self._index(_CachedPod(pod, compiled, node_name, assumed=True))
        self.pod_groups.assume(pod)

    def forget(self, uid: str) -> None:
        """Undo :meth:`assume` after a failed binding."""
        cached = self._pods.get(uid)
        if cached is not None and cached.assumed:
            del self._pods[uid]
            self._unindex(cached)
            self.snapshot.remove_pod(uid)
            self.pod_groups.forget(cached.pod)

    def forget_all_assumed(self) -> int:
        """Forget every assumed pod (this replica stopped leading: its decisions that
        are not bound yet will not be). Returns how many there were."""
        assumed = [uid for uid, c in self._pods.items() if c.assumed]
        for uid in assumed:
            self.forget(uid)
        return len(assumed)

    def _index(self, cached: _CachedPod) -> None:
        uid = cached.pod.uid
        self._pods[uid] = cached
        node = cached.node_name
        on_node = self._by_node.get(node)
        if on_node is None:
            on_node = self._by_node[node] = {}
        on_node[uid] = cached
        gens = self._generations
        gens[node] = gens.get(node, 0) + 1

    def _unindex(self, cached: _CachedPod) -> None:
        node = cached.node_name
        on_node = self._by_node.get(node)
        if on_node is not None:
            on_node.pop(cached.pod.uid, None)
            if not on_node:
                del self._by_node[node]
        gens = self._generations
        gens[node] = gens.get(node, 0) + 1

    @contextlib.contextmanager
    def without(self, uids: Iterable[str]) -> Iterator[None]:
        """The cache (and snapshot) as if these pods were not accounted, for the body of
        the ``with``; they are accounted again, exactly as before, at its end. Shadow
        mode judges a decision on the view the other scheduler had (:mod:`ksched.shadow`)."""
        taken = [self._pods[u] for u in dict.fromkeys(uids) if u in self._pods]
        for cached in taken:
            del self._pods[cached.pod.uid]
            self._unindex(cached)
            self.snapshot.remove_pod(cached.pod.uid)
        try:
            yield
        finally:
            for cached in taken:
                if cached.assumed:
                    self.snapshot.assume(cached.compiled, cached.node_name)
                else:
                    self.snapshot.add_pod(cached.compiled, cached.node_name)
                self._index(cached)

    def pods_on_node(self, node: str) -> Collection[_CachedPod]:
        """The pods accounted on ``node`` (bound or assumed), each with its compiled
        form: what preemption picks victims from."""
        on_node = self._by_node.get(node)
        return on_node.values() if on_node is not None else ()

    def is_assumed(self, uid: str) -> bool:
        cached = self._pods.get(uid)
        return cached is not None and cached.assumed

    def has_pod(self, uid: str) -> bool:
        return uid in self._pods

    @property
    def num_pods(self) -> int:
        return len(self._pods)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    def num_assumed(self) -> int:
        return sum(1 for c in self._pods.values() if c.assumed)
