"""Coscheduling (scheduler-plugins): all-or-nothing scheduling of the pods of a
``scheduling.x-k8s.io/v1alpha1`` PodGroup, pods joining by the
``scheduling.x-k8s.io/pod-group`` label.

Followed: kubernetes-sigs/scheduler-plugins ``pkg/coscheduling`` at master 903da7df
(the release line built on Kubernetes v1.35, the newest; no release targets v1.36),
``CoschedulingArgs`` of ``apis/config/v1`` (``permitWaitingTimeSeconds`` 60,
``podGroupBackoffSeconds`` 0, ``podGroupRejectPercentage`` 10).

Extension points, as upstream:

* **QueueSort** (``Less``): higher priority first, then the earlier of the PodGroup's
  creation (or its last scheduling failure, so a failing group does not block the
  queue's head) or, for a pod without a group, its first enqueue; then
  ``namespace/name``. A group's pods sort together.
* **PreFilter** rejects (UnschedulableAndUnresolvable, no preemption) a pod whose group
  failed within ``podGroupBackoffSeconds``, has fewer than ``minMember`` pods, too many
  of them behind scheduling gates, or ``minResources`` the cluster cannot hold ("resource
  gap: ...", checked at most once per ``permitWaitingTimeSeconds``).
* **PostFilter**: when a member fits nowhere and the group is more than
  ``podGroupRejectPercentage`` short of ``minMember``, the group is rejected: its pods
  waiting at Permit are rejected, it is backed off and its failure time recorded.
* **Permit** counts the group's members that reached Permit (and bound ones seen by the
  informer); a member waits (``scheduleTimeoutSeconds`` of the group, else
  ``permitWaitingTimeSeconds``) until ``minMember`` are there, then all are allowed.
* **Unreserve** of a member (binding failed, Permit timed out) rejects the group's other
  waiting pods and records the failure.

In ksched a group is placed by the pod group cycle (:mod:`ksched.schedule_group`):
when one member is popped, its queued siblings are popped too and the whole group is
placed in one core call, counting each member as it is placed. Deliberate differences
from upstream's Permit path, for the same input:

* members are never held at Permit while the rest of the group is still being tried:
  either enough members fit (``minMember``, counting bound ones) and they are all
  assumed, permitted and bound, or none is, and those that fit go back to the queue
  with "optimistic rejection in PostFilter" (upstream assumes them one cycle at a time,
  holds them at Permit, and rejects them when a later member fails, or lets them wait
  up to ``permitWaitingTimeSeconds`` when the gap is below ``podGroupRejectPercentage``);
* a member that fits nowhere does not reject the others when enough of them fit
  without it (upstream rejects the group if the failing member comes before the
  quorum in queue order);
* inside the cycle, Permit and PostFilter count the members placed so far in the cycle
  as upstream would count the members already waiting at Permit, and Unreserve of the
  cycle's tentative placements has no side effects.

Every member's PreFilter check is group-wide, so the one-call placement runs it once
for the group. The PodGroup's ``status`` (phase, counts) is written by scheduler-plugins'
PodGroup controller, not by the scheduler; ksched does not run that controller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ksched.api.pod import Pod
from ksched.api.workloads import COSCHEDULING_POD_GROUP_LABEL, CoschedulingPodGroup
from ksched.backend.queue.cluster_event import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from ksched.cluster import EVENT_RESOURCES
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import FitError
from ksched.framework.interface import DRY_RUN_KEY, Handle, PostFilterResult
from ksched.framework.status import Code, Status
from ksched.plugins.coscheduling.quantity import GoQuantity, format_resource_list
from ksched.plugins.workload_listers import Lister, coscheduling_pod_groups

if TYPE_CHECKING:
    from ksched.backend.queue import QueuedPodInfo
    from ksched.framework.runtime import Framework
    from ksched.schedule_group import GroupResult, MemberResult

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PERMIT_WAITING_TIME_SECONDS",
    "DEFAULT_POD_GROUP_BACKOFF_SECONDS",
    "DEFAULT_POD_GROUP_REJECT_PERCENTAGE",
    "NAME",
    "Coscheduling",
]

NAME: Final = "Coscheduling"
KIND: Final = "podgroups.scheduling.x-k8s.io"
#: The cluster-event resource of the PodGroup CRD (``podgroups.v1alpha1.<group>``).
POD_GROUP_EVENTS: Final = EVENT_RESOURCES[KIND]
DEFAULT_PERMIT_WAITING_TIME_SECONDS: Final = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS: Final = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE: Final = 10
#: ``util.DefaultWaitTime``.
DEFAULT_WAIT_TIME: Final = 60.0
#: How long a PodGroup that passed the minResources check skips it (go-cache's
#: default expiration of ``permittedPG`` is overridden by the schedule timeout).
OPTIMISTIC_REJECTION: Final = "optimistic rejection in PostFilter"
UNRESERVE_REJECTION: Final = "rejection in Unreserve"


def group_label(pod: Pod) -> str:
    """``util.GetPodGroupLabel``."""
    return pod.labels.get(COSCHEDULING_POD_GROUP_LABEL, "")


def full_name(pod: Pod) -> str:
    """``util.GetPodGroupFullName``: ``namespace/name``, "" for a pod in no group."""
    name = group_label(pod)
    return f"{pod.namespace}/{name}" if name else ""


def _raw_label(obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = labels.get(COSCHEDULING_POD_GROUP_LABEL) if isinstance(labels, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return (str(meta.get("namespace") or ""), name, f"{meta.get('namespace')}/{meta.get('name')}")


def _is_terminal(obj: Mapping[str, Any]) -> bool:
    phase = (obj.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed")


class _Expiring:
    """go-cache: keys that expire ``ttl`` seconds after they were added."""

    def __init__(self, clock: Any) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}

    def add(self, key: str, ttl: float) -> None:
        self._until[key] = self._clock() + ttl

    def has(self, key: str) -> bool:
        until = self._until.get(key)
        if until is None:
            return False
        if self._clock() >= until:
            del self._until[key]
            return False
        return True

    def delete(self, key: str) -> None:
        self._until.pop(key, None)


class Coscheduling:
    """QueueSort, PreFilter, PostFilter, Permit and Reserve of scheduler-plugins'
    Coscheduling, with the pod group driver that places a group in one call."""

    name = NAME

    def __init__(
        self,
        *,
        permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS,
        pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS,
        pod_group_reject_percentage: int = DEFAULT_POD_GROUP_REJECT_PERCENTAGE,
        clock: Any = time.monotonic,
        wall_clock: Any = time.time,
    ) -> None:
        errs = []
        if permit_waiting_time_seconds < 0:
            errs.append(
                f"permitWaitingTimeSeconds: Invalid value: {permit_waiting_time_seconds}: "
                "must be greater than 0"
            )
        if pod_group_backoff_seconds < 0:
            errs.append(
                f"podGroupBackoffSeconds: Invalid value: {pod_group_backoff_seconds}: "
                "must be greater than 0"
            )
        if not 0 <= pod_group_reject_percentage <= 100:
            errs.append(
                f"podGroupRejectPercentage: Invalid value: {pod_group_reject_percentage}: "
                "must be between 0 and 100"
            )
        if errs:
            raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        self.schedule_timeout = float(permit_waiting_time_seconds)
        self.pg_backoff = float(pod_group_backoff_seconds) if pod_group_backoff_seconds else None
        self.reject_threshold = pod_group_reject_percentage / 100.0
        self._clock = clock
        self._wall = wall_clock
        self._permitted = _Expiring(clock)
        self._backed_off = _Expiring(clock)
        #: fullname → wall time of the group's last scheduling failure.
        self._last_failed: dict[str, float] = {}
        #: fullname → names of the pods assumed or bound (``assignedPodsByPG``).
        self._assigned: dict[str, set[str]] = {}
        #: fullname → pod key → raw pod, for every pod of the group the informer holds.
        self._pods: dict[str, dict[str, Mapping[str, Any]]] = {}
        self._handle: Handle | None = None
        self._groups: Lister[CoschedulingPodGroup] | None = None
        #: Monotonic minus wall clock, to compare enqueue times with creation times.
        self._offset = 0.0

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> Coscheduling:
        """From ``CoschedulingArgs`` in JSON shape (defaults applied, then validated as
        ``ValidateCoschedulingArgs``)."""
        args = args or {}

        def num(key: str, default: int) -> int:
            value = args.get(key)
            return default if value is None else int(value)

        return cls(
            permit_waiting_time_seconds=num(
                "permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_TIME_SECONDS
            ),
            pod_group_backoff_seconds=num(
                "podGroupBackoffSeconds", DEFAULT_POD_GROUP_BACKOFF_SECONDS
            ),
            pod_group_reject_percentage=num(
                "podGroupRejectPercentage", DEFAULT_POD_GROUP_REJECT_PERCENTAGE
            ),
        )

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        self._groups = coscheduling_pod_groups(handle.informer(KIND))
        self._offset = self._clock() - self._wall()
        handle.add_pod_handler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted
        )

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError("Coscheduling is not set up with a scheduler handle")
        return self._handle

    # ---- the pod group manager (core.PodGroupManager) ----------------------------------

    def get_pod_group(self, pod: Pod) -> tuple[str, CoschedulingPodGroup | None]:
        """``GetPodGroup``: the group's full name and object (None when not found)."""
        name = group_label(pod)
        if not name:
            return "", None
        assert self._groups is not None
        return f"{pod.namespace}/{name}", self._groups.get(pod.namespace, name)

    def assigned_count(self, fullname: str) -> int:
        return len(self._assigned.get(fullname, ()))

    def group_pods(self, fullname: str) -> list[Mapping[str, Any]]:
        """The pods of the group the informer holds (``podLister.List(selector)``)."""
        return list(self._pods.get(fullname, {}).values())

    def _pod_added(self, obj: Mapping[str, Any]) -> None:
        found = _raw_label(obj)
        if found is None:
            return
        ns, name, key = found
        fullname = f"{ns}/{name}"
        if _is_terminal(obj):
            return
        self._pods.setdefault(fullname, {})[key] = obj
        if (obj.get("spec") or {}).get("nodeName"):
            # AddPodFactory: a pod seen bound counts as assigned.
            pod_name = str((obj.get("metadata") or {}).get("name") or "")
            self._assigned.setdefault(fullname, set()).add(pod_name)

    def _pod_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        found = _raw_label(new)
        gone = _raw_label(old)
        if gone is not None and (found is None or found != gone):
            self._pods.get(f"{gone[0]}/{gone[1]}", {}).pop(gone[2], None)
        if found is None:
            return
        ns, name, key = found
        if _is_terminal(new):
            self._pods.get(f"{ns}/{name}", {}).pop(key, None)
            return
        self._pods.setdefault(f"{ns}/{name}", {})[key] = new

    def _pod_deleted(self, obj: Mapping[str, Any]) -> None:
        found = _raw_label(obj)
        if found is None:
            return
        ns, name, key = found
        fullname = f"{ns}/{name}"
        pods = self._pods.get(fullname)
        if pods is not None:
            pods.pop(key, None)
            if not pods:
                del self._pods[fullname]
        if (obj.get("spec") or {}).get("nodeName"):
            # DeleteFunc: a bound pod's deletion unreserves it.
            pod_name = str((obj.get("metadata") or {}).get("name") or "")
            self._forget_assigned(fullname, pod_name)

    def _forget_assigned(self, fullname: str, pod_name: str) -> None:
        assigned = self._assigned.get(fullname)
        if assigned is not None:
            assigned.discard(pod_name)
            if not assigned:
                del self._assigned[fullname]

    def creation_timestamp(self, pod: Pod, ts: float) -> float:
        """``GetCreationTimestamp`` on the monotonic clock: the group's last failure or
        creation, else ``ts`` (the pod's first enqueue)."""
        name = group_label(pod)
        if not name:
            return ts
        fullname = f"{pod.namespace}/{name}"
        failed = self._last_failed.get(fullname)
        if failed is not None:
            return failed + self._offset
        assert self._groups is not None
        group = self._groups.get(pod.namespace, name)
        if group is None:
            return ts
        return group.creation_timestamp + self._offset

    def mark_failure(self, fullname: str) -> None:
        self._last_failed[fullname] = self._wall()

    def pre_filter_error(self, pod: Pod) -> str | None:
        """``PodGroupManager.PreFilter``: why the pod cannot proceed, or None."""
        fullname, group = self.get_pod_group(pod)
        if group is None:
            return None
        if self._backed_off.has(fullname):
            return f"podGroup {fullname} failed recently"
        pods = self.group_pods(fullname)
        gap = group.min_member - len(pods)
        if gap > 0:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods "
                f"number: {len(pods)}, minMember of group: {group.min_member}"
            )
        for p in pods:
            if (p.get("spec") or {}).get("schedulingGates"):
                gap += 1
            if gap > 0:
                return (
                    f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same "
                    "PodGroup"
                )
        if group.min_resources is None or self._permitted.has(fullname):
            return None
        gap_text = self._resource_gap(group, fullname)
        if gap_text is not None:
            return gap_text
        self._permitted.add(fullname, self.schedule_timeout)
        return None

    def _resource_gap(self, group: CoschedulingPodGroup, fullname: str) -> str | None:
        """``CheckClusterResource`` over every node, the group's own pods removed."""
        raw = self._raw_min_resources(group)
        request = {k: GoQuantity.parse(v) for k, v in raw.items()}
        request["pods"] = GoQuantity.new(group.min_member, "DecimalSI")
        h = self.handle
        snapshot = h.snapshot
        for node in snapshot.node_names():
            info = h.node_info(node)
            if info.node is None:
                continue
            own = [cp for cp in h.pods_on_node(node) if full_name(cp.pod) == fullname]
            left = self._node_left(node, info.node.allocatable, own)
            for name in list(request):
                q = request[name]
                q.sub(left.get(name, GoQuantity()))
                if q.sign() <= 0:
                    del request[name]
            if not request:
                return None
        return f"resource gap: {format_resource_list(request)}"

    def _raw_min_resources(self, group: CoschedulingPodGroup) -> dict[str, str]:
        assert self._groups is not None
        obj = self._groups.informer.get(group.namespace, group.name) or {}
        spec = obj.get("spec") or {}
        raw = spec.get("minResources") or {}
        return {str(k): str(v) for k, v in raw.items()}

    def _node_left(
        self, node: str, allocatable: Mapping[str, int], own: list[Any]
    ) -> dict[str, GoQuantity]:
        """``getNodeResource`` as ``util.ResourceList``: what the node has left once the
        group's own pods are taken off."""
        snapshot = self.handle.snapshot
        pods_on = sum(1 for _ in self.handle.pods_on_node(node)) - len(own)

        def requested(r: str) -> int:
            total: int = snapshot.requested(node, r) or 0
            return total - sum(int(cp.pod.requests.get(r, 0)) for cp in own)

        out = {
            "cpu": GoQuantity.new_milli(allocatable.get("cpu", 0) - requested("cpu"), "DecimalSI"),
            "memory": GoQuantity.new(
                allocatable.get("memory", 0) - requested("memory"), "BinarySI"
            ),
            "pods": GoQuantity.new(allocatable.get("pods", 0) - pods_on, "BinarySI"),
            "ephemeral-storage": GoQuantity.new(
                allocatable.get("ephemeral-storage", 0) - requested("ephemeral-storage"),
                "BinarySI",
            ),
        }
        for r, amount in allocatable.items():
            if r in out:
                continue
            fmt = "BinarySI" if r.startswith("hugepages-") else "DecimalSI"
            out[r] = GoQuantity.new(amount - requested(r), fmt)
        return out

    # ---- QueueSort -----------------------------------------------------------------------

    def sort_key(self, info: QueuedPodInfo) -> tuple[int, float, str]:
        ts = info.initial_attempt_timestamp
        if ts is None:
            ts = info.timestamp
        return (-info.pod.priority, self.creation_timestamp(info.pod, ts), info.pod.key)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # ---- events ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP_EVENTS, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    # ---- PreFilter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[None, Status | None]:
        err = self.pre_filter_error(pod)
        if err is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err)
        return None, None

    # ---- PostFilter ---------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        fullname, group = self.get_pod_group(pod)
        if group is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, "can not find pod group")
        assigned = self._assigned_with_cycle(state, fullname)
        if assigned >= group.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        gap = (group.min_member - assigned) / group.min_member
        if gap <= self.reject_threshold:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if not state.get(DRY_RUN_KEY):  # ksched explain, shadow mode: act on nothing
            self._reject_waiting(pod.namespace, group.name, OPTIMISTIC_REJECTION)
            if self.pg_backoff is not None and len(self.group_pods(fullname)) >= group.min_member:
                self._backed_off.add(fullname, self.pg_backoff)
            self._permitted.delete(fullname)
            self.mark_failure(fullname)
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {fullname} gets rejected due to Pod {pod.name} is unschedulable even "
            "after PostFilter",
        )

    def _assigned_with_cycle(self, state: CycleState, fullname: str) -> int:
        names = set(self._assigned.get(fullname, ()))
        cycle = state.pod_group_cycle
        if cycle is not None:
            names.update(p.name for p in cycle.placed_pods if full_name(p) == fullname)
        return len(names)

    def _reject_waiting(self, namespace: str, name: str, message: str) -> None:
        for wp in self.handle.iterate_waiting_pods():
            p = wp.pod
            if p.namespace == namespace and group_label(p) == name:
                wp.reject(NAME, message)

    # ---- Permit -------------------------------------------------------------------------

    def _wait_time(self, group: CoschedulingPodGroup | None) -> float:
        """``util.GetWaitTimeDuration``."""
        if group is not None and group.schedule_timeout_seconds is not None:
            return float(group.schedule_timeout_seconds)
        if self.schedule_timeout:
            return self.schedule_timeout
        return DEFAULT_WAIT_TIME

    def permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status | None, float]:
        fullname, group = self.get_pod_group(pod)
        if not fullname:
            return None, 0.0
        if group is None:
            return Status(Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        if state.pod_group_cycle is not None:
            # In the cycle: the members placed so far stand for those waiting at Permit.
            count = self._assigned_with_cycle(state, fullname)
            if count >= group.min_member:
                return None, 0.0
            return Status(Code.WAIT), self._wait_time(group)
        assigned = self._assigned.setdefault(fullname, set())
        assigned.add(pod.name)
        if len(assigned) >= group.min_member:
            self._last_failed.pop(fullname, None)
            for wp in self.handle.iterate_waiting_pods():
                if full_name(wp.pod) == fullname:
                    wp.allow(NAME)
            return None, 0.0
        if len(assigned) == 1:
            self._activate_siblings(pod, fullname)
        return Status(Code.WAIT), self._wait_time(group)

    def _activate_siblings(self, pod: Pod, fullname: str) -> None:
        """``ActivateSiblings``: the group's other pods go to activeQ."""
        uids = [
            str((p.get("metadata") or {}).get("uid") or "")
            for p in self.group_pods(fullname)
            if (p.get("metadata") or {}).get("uid") != pod.uid
        ]
        if uids:
            self.handle.activate(uids)

    # ---- Reserve ------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        if state.pod_group_cycle is not None:
            return  # a tentative placement of the pod group cycle is being reverted
        fullname, group = self.get_pod_group(pod)
        if group is None:
            return
        self._forget_assigned(fullname, pod.name)
        self._reject_waiting(pod.namespace, group.name, UNRESERVE_REJECTION)
        self._permitted.delete(fullname)
        self.mark_failure(fullname)

    # ---- the pod group driver ------------------------------------------------------------

    def group_driver(self, pod: Pod) -> CoschedulingGroup | None:
        fullname = full_name(pod)
        if not fullname:
            return None
        return CoschedulingGroup(self, pod, fullname)


class CoschedulingGroup:
    """The pod group cycle's driver for a Coscheduling PodGroup."""

    plugin_names = frozenset({NAME})
    cycle_key = None

    def __init__(self, plugin: Coscheduling, pod: Pod, fullname: str) -> None:
        self._plugin = plugin
        self._pod = pod
        self.key = fullname

    def member_uids(self) -> list[str] | Status:
        out = []
        for p in self._plugin.group_pods(self.key):
            if (p.get("spec") or {}).get("nodeName"):
                continue
            uid = (p.get("metadata") or {}).get("uid")
            if isinstance(uid, str):
                out.append(uid)
        return out

    def order(self, infos: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        return sorted(infos, key=self._plugin.sort_key)

    def need(self, fw: Framework) -> int | None:
        _, group = self._plugin.get_pod_group(self._pod)
        if group is None:
            return None  # Permit: "PodGroup not found", member by member
        if not any(p.name == NAME for p in fw.points.permit):
            return 1
        return max(1, group.min_member - self._plugin.assigned_count(self.key))

    def wait_message(self) -> tuple[str, ...]:
        return ()

    def group_pre_filter(self, fw: Framework, first: QueuedPodInfo) -> Status | None:
        if not any(p.name == NAME for p in fw.points.pre_filter):
            return None
        err = self._plugin.pre_filter_error(first.pod)
        return None if err is None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err)

    def placed_but_rejected(self, member: MemberResult) -> Status:
        fit = FitError(1, {OPTIMISTIC_REJECTION: 1}, unschedulable_plugins=frozenset((NAME,)))
        return Status(Code.UNSCHEDULABLE, fit.message, plugin=NAME, error=fit)

    def finish(self, fw: Framework, result: GroupResult, start: float) -> None:
        if result.status is not None and result.status.is_rejected():
            log.debug("pod group %s could not be scheduled", self.key)
