"""The nominator: pods that preemption nominated to a node, per node.

A pod whose preemption evicted victims on node N carries ``status.nominatedNodeName:
N`` until it is bound. Filtering must count such pods against N when it places pods of
equal or lower priority there, otherwise the freed room goes to someone else; the
nominator is the index that makes that cheap (upstream ``nominator.go``).

A nomination comes either from the pod object (``status.nominatedNodeName``, seen by
the informer) or from the scheduler itself (``nominate``) before the API reflects it. A
scheduler nomination survives a pod update that does not mention the node yet, as
upstream's ``UpdateNominatedPod`` does, so a lagging informer cannot drop it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ksched.api.pod import Pod

__all__ = ["NominatedPod", "Nominator"]


@dataclass(slots=True)
class NominatedPod:
    pod: Pod
    node: str
    #: Set by the scheduler (preemption), not (yet) by the pod object.
    by_scheduler: bool


class Nominator:
    """uid → nomination and node → nominated pods, in nomination order."""

    def __init__(self) -> None:
        #: uid → nomination (read-only for callers; test membership before ``delete``).
        self.by_uid: dict[str, NominatedPod] = {}
        self._by_node: dict[str, dict[str, Pod]] = {}
        #: Called with ``(pod, node)`` on every nomination and ``(pod, None)`` when one
        #: ends, e.g. to mirror nominations into the Rust snapshot.
        self.listeners: list[Callable[[Pod, str | None], None]] = []

    def __len__(self) -> int:
        return len(self.by_uid)

    def _set(self, pod: Pod, node: str, by_scheduler: bool) -> None:
        self.delete(pod.uid, notify=False)
        self.by_uid[pod.uid] = NominatedPod(pod, node, by_scheduler)
        self._by_node.setdefault(node, {})[pod.uid] = pod
        for listener in self.listeners:
            listener(pod, node)

    def add(self, pod: Pod) -> None:
        """Track ``pod`` if its object names a nominated node (informer path)."""
        if pod.nominated_node_name and not pod.node_name:
            self._set(pod, pod.nominated_node_name, by_scheduler=False)

    def nominate(self, pod: Pod, node: str) -> None:
        """The scheduler nominated ``pod`` to ``node`` (preemption); ``""`` clears it."""
        if node:
            self._set(pod, node, by_scheduler=True)
        else:
            self.delete(pod.uid)

    def update(self, old: Pod | None, new: Pod) -> None:
        """A new object of a pending pod."""
        current = self.by_uid.get(new.uid)
        if (
            current is not None
            and current.by_scheduler
            and not new.nominated_node_name
            and (old is None or not old.nominated_node_name)
        ):
            # The API has not caught up with our own nomination: keep it.
            self._set(new, current.node, by_scheduler=True)
            return
        self.delete(new.uid)
        self.add(new)

    def delete(self, uid: str, *, notify: bool = True) -> None:
        entry = self.by_uid.pop(uid, None)
        if entry is None:
            return
        pods = self._by_node.get(entry.node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[entry.node]
        if notify:
            for listener in self.listeners:
                listener(entry.pod, None)

    def node_of(self, uid: str) -> str | None:
        entry = self.by_uid.get(uid)
        return entry.node if entry is not None else None

    def pods_for_node(self, node: str) -> list[Pod]:
        """Pods nominated to ``node``, oldest nomination first."""
        return list(self._by_node.get(node, {}).values())

    def nodes(self) -> list[str]:
        return list(self._by_node)
