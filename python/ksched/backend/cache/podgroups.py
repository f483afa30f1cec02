"""The runtime state of every pod group (upstream ``backend/cache/podgroupstate.go``).

With the ``GenericWorkload`` gate on, the cache tracks, for every
``scheduling.k8s.io/v1alpha2`` PodGroup its pods name (``spec.schedulingGroup``), which
of those pods the scheduler knows, which are unscheduled, assumed (placed, binding in
flight) or assigned (bound). GangScheduling's PreEnqueue reads how many pods the group
has, its Permit how many are scheduled, and the pod group cycle which members to pop
together. The bookkeeping follows upstream's hooks:

* an unscheduled pod added, updated or deleted through the informer (``add_member``,
  ``update_member``, ``remove_member``);
* the cache assuming, forgetting, adding (a bound pod) or removing a pod.

A group's entry disappears with its last pod. During a pod group cycle the cycle works
on a :meth:`PodGroupState.copy` (upstream's snapshot of the state) so that members it
places tentatively never show in the live state.
"""

from __future__ import annotations

from ksched.api.pod import Pod

__all__ = ["PodGroupState", "PodGroupStates", "group_key"]


def group_key(pod: Pod) -> tuple[str, str] | None:
    """``(namespace, podGroupName)`` of a pod that names a PodGroup."""
    if not pod.scheduling_group:
        return None
    return (pod.namespace, pod.scheduling_group)


class PodGroupState:
    """The pods of one pod group, by scheduling state."""

    __slots__ = ("all", "assigned", "assumed", "unscheduled")

    def __init__(self) -> None:
        #: uid → pod, every pod of the group the scheduler knows.
        self.all: dict[str, Pod] = {}
        self.unscheduled: set[str] = set()
        #: uid → the assumed pod (placed, not yet bound).
        self.assumed: dict[str, Pod] = {}
        self.assigned: set[str] = set()

    def add_pod(self, pod: Pod) -> None:
        self.all[pod.uid] = pod
        if pod.node_name:
            self.assigned.add(pod.uid)
        else:
            self.unscheduled.add(pod.uid)

    def update_pod(self, old: Pod, new: Pod) -> None:
        self.all[new.uid] = new
        if not old.node_name and new.node_name:
            self.assigned.add(new.uid)
            self.unscheduled.discard(new.uid)
            self.assumed.pop(new.uid, None)

    def delete_pod(self, uid: str) -> None:
        self.all.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)

    def assume_pod(self, pod: Pod) -> None:
        stored = self.all.get(pod.uid)
        if stored is None:
            return  # the pod left the cluster meanwhile
        if stored.node_name:
            self.assigned.add(pod.uid)
        else:
            self.assumed[pod.uid] = pod
        self.unscheduled.discard(pod.uid)

    def forget_pod(self, uid: str) -> None:
        pod = self.all.get(uid)
        if pod is None:
            return
        self.assumed.pop(uid, None)
        if pod.node_name:
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    @property
    def all_count(self) -> int:
        return len(self.all)

    @property
    def scheduled_count(self) -> int:
        """Assumed or assigned pods."""
        return len(self.assumed) + len(self.assigned)

    def scheduled_pods(self) -> list[Pod]:
        return [self.all[u] for u in self.assigned if u in self.all] + list(self.assumed.values())

    def unscheduled_pods(self) -> list[Pod]:
        return [self.all[u] for u in self.unscheduled if u in self.all]

    def copy(self) -> PodGroupState:
        out = PodGroupState()
        out.all = dict(self.all)
        out.unscheduled = set(self.unscheduled)
        out.assumed = dict(self.assumed)
        out.assigned = set(self.assigned)
        return out


class PodGroupStates:
    """``(namespace, name)`` → :class:`PodGroupState`; a no-op unless ``enabled``
    (upstream only tracks members with the GenericWorkload gate on)."""

    def __init__(self, *, enabled: bool = False) -> None:
        self.enabled = enabled
        self._groups: dict[tuple[str, str], PodGroupState] = {}

    def get(self, namespace: str, name: str) -> PodGroupState | None:
        return self._groups.get((namespace, name))

    def error(self, namespace: str, name: str) -> str:
        """Upstream's error when a group has no state."""
        return f"pod group state not found for pod group {namespace}/{name}"

    def __len__(self) -> int:
        return len(self._groups)

    def _key(self, pod: Pod) -> tuple[str, str] | None:
        if not self.enabled or not pod.scheduling_group:
            return None
        return (pod.namespace, pod.scheduling_group)

    def add_member(self, pod: Pod) -> None:
        """An unscheduled pod was added (or a bound pod the cache did not assume)."""
        key = self._key(pod)
        if key is None:
            return
        state = self._groups.get(key)
        if state is None:
            state = self._groups[key] = PodGroupState()
        state.add_pod(pod)

    def update_member(self, old: Pod, new: Pod) -> None:
        key = self._key(new)
        if key is None:
            return
        state = self._groups.get(key)
        if state is not None:
            state.update_pod(old, new)

    def remove_member(self, pod: Pod) -> None:
        key = self._key(pod)
        if key is None:
            return
        state = self._groups.get(key)
        if state is None:
            return
        state.delete_pod(pod.uid)
        if not state.all:
            del self._groups[key]

    def assume(self, pod: Pod) -> None:
        key = self._key(pod)
        if key is None:
            return
        state = self._groups.get(key)
        if state is None:
            state = self._groups[key] = PodGroupState()
            state.all[pod.uid] = pod
        state.assume_pod(pod)

    def forget(self, pod: Pod) -> None:
        key = self._key(pod)
        if key is None:
            return
        state = self._groups.get(key)
        if state is not None:
            state.forget_pod(pod.uid)
