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
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ksched._core import CompiledPod, Snapshot
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _CachedPod:
    pod: Pod
    compiled: CompiledPod
    node_name: str
    assumed: bool


class Cache:
    """Nodes and the pods accounted on them."""

    def __init__(self, *, seed: int | None = None) -> None:
        self.snapshot = Snapshot(seed)
        self.nodes: dict[str, Node] = {}
        self._pods: dict[str, _CachedPod] = {}
        #: node → uid → pod: the pods accounted on each node (preemption's victims).
        self._by_node: dict[str, dict[str, _CachedPod]] = {}
        #: node → a number that changes whenever the node or its pods do (node_generation).
        self._generations: dict[str, int] = {}

    # ---- nodes -------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        self.snapshot.upsert_node(
            node.name,
            node.allocatable,
            node.labels,
            [(t.key, t.value, t.effect) for t in node.taints],
            node.unschedulable,
            [(list(names), size) for names, size in node.images],
        )
        self.nodes[node.name] = node
        self.touch(node.name)

    def remove_node(self, name: str) -> None:
        self.nodes.pop(name, None)
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

    def add_pod(self, pod: Pod, compiled: CompiledPod | None = None) -> None:
        """A bound pod seen through the informer (added or updated).

        Confirms a pod this scheduler assumed on the same node; re-accounts a pod that
        changed or moved.
        """
        cached = self._pods.get(pod.uid)
        if cached is not None and cached.assumed and cached.node_name == pod.node_name:
            self.snapshot.confirm(pod.uid, pod.node_name)
            cached.assumed = False
            cached.pod = pod
            self.touch(pod.node_name)
            return
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
            return
        if compiled is None:
            compiled = compile_pod(pod)
        self.snapshot.add_pod(compiled, pod.node_name)
        if cached is not None:
            self._unindex(cached)
        self._index(_CachedPod(pod, compiled, pod.node_name, assumed=False))

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
        return True

    def remove_pod(self, uid: str) -> bool:
        cached = self._pods.pop(uid, None)
        if cached is None:
            return False
        self._unindex(cached)
        self.snapshot.remove_pod(uid)
        return True

    def assume(self, pod: Pod, compiled: CompiledPod, node_name: str) -> None:
        """Account ``pod`` on ``node_name`` before the binding is confirmed."""
        self.snapshot.assume(compiled, node_name)
        self._index(_CachedPod(pod, compiled, node_name, assumed=True))

    def forget(self, uid: str) -> None:
        """Undo :meth:`assume` after a failed binding."""
        cached = self._pods.get(uid)
        if cached is not None and cached.assumed:
            del self._pods[uid]
            self._unindex(cached)
            self.snapshot.remove_pod(uid)

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
