"""GangScheduling (PreEnqueue, Permit): all-or-nothing scheduling of the pods of a
``scheduling.k8s.io/v1alpha2`` PodGroup with a ``gang`` policy (upstream
``framework/plugins/gangscheduling``).

* **PreEnqueue** keeps a member out of the active queue until its PodGroup exists
  ("waiting for pods's pod group ... to appear in scheduling queue") and the group has
  at least ``minCount`` pods the scheduler knows of ("waiting for minCount pods from a
  gang to appear in scheduling queue"), both UnschedulableAndUnresolvable. A new pod of
  the group or the PodGroup's creation wakes the members (queueing hints).
* **Permit** lets a member through once ``minCount`` members are scheduled (assumed or
  bound) and then allows every member waiting at Permit; before that the member waits
  (at most 5 minutes) and the group's unscheduled members are activated. In a pod group
  cycle (``CycleState.pod_group_cycle``) it counts the members the cycle placed so far,
  otherwise the cache's live state. Deliberate difference: in a pod group cycle it does
  not release members still waiting from an earlier cycle (upstream does, and they bind
  even if the cycle's own members then fail, leaving a partial gang); the member whose
  real Permit completes the quorum releases them.

The group itself is placed by the scheduler's pod group cycle
(:mod:`ksched.schedule_group`), which pops every member at once and places them in one
core call; this plugin's Permit decides in that cycle whether enough of them fit.
"""

from __future__ import annotations

from typing import Any, Final

from ksched.api.pod import Pod
from ksched.backend.cache.podgroups import PodGroupState, PodGroupStates
from ksched.backend.queue.cluster_event import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle
from ksched.framework.status import Code, Status
from ksched.plugins.workload_listers import Lister, pod_groups

__all__ = [
    "ERR_WAITING_MIN_COUNT",
    "MSG_WAITING_SCHEDULED",
    "NAME",
    "PERMIT_TIMEOUT",
    "POD_GROUP",
    "GangScheduling",
    "matching_scheduling_group",
]

NAME: Final = "GangScheduling"
#: ``fwk.PodGroup``: the cluster-event resource of scheduling.k8s.io PodGroups.
POD_GROUP: Final = "scheduling.k8s.io/PodGroup"
#: ``permitTimeoutDuration``.
PERMIT_TIMEOUT: Final = 5 * 60.0
ERR_WAITING_MIN_COUNT: Final = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAITING_SCHEDULED: Final = "waiting for minCount pods from a gang to be scheduled"


def err_no_pod_group(name: str) -> str:
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


def not_found(name: str) -> str:
    """The lister's NotFound error text."""
    return f'podgroup.scheduling.k8s.io "{name}" not found'


def matching_scheduling_group(a: Pod, b: Pod) -> bool:
    """``helper.MatchingSchedulingGroup``: same namespace, same PodGroup."""
    return (
        a.namespace == b.namespace
        and bool(a.scheduling_group)
        and (a.scheduling_group == b.scheduling_group)
    )


class GangScheduling:
    """PreEnqueue and Permit of the in-tree gang scheduling."""

    name = NAME

    def __init__(self) -> None:
        self._handle: Handle | None = None
        self._pod_groups: Lister[Any] | None = None
        self._states: PodGroupStates | None = None

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        self._pod_groups = pod_groups(handle.informer("podgroups"))
        self._states = handle.pod_group_states

    @property
    def lister(self) -> Lister[Any]:
        if self._pod_groups is None:
            raise RuntimeError("GangScheduling is not set up with a scheduler handle")
        return self._pod_groups

    # ---- events ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new pod may be the one that completes the gang (schedulingGroup is
            # immutable: no Pod/Update).
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD), self._after_pod_added),
            # PodGroups are immutable: no PodGroup/Update.
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP, ActionType.ADD), self._after_pod_group_added
            ),
        ]

    @staticmethod
    def _after_pod_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Pod) or not matching_scheduling_group(pod, new):
            return SKIP
        return QUEUE

    @staticmethod
    def _after_pod_group_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        meta = (new or {}).get("metadata") or {}
        if (
            not pod.scheduling_group
            or pod.namespace != meta.get("namespace")
            or pod.scheduling_group != meta.get("name")
        ):
            return SKIP
        return QUEUE

    # ---- PreEnqueue --------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        name = pod.scheduling_group
        if not name:
            return None
        group = self.lister.get(pod.namespace, name)
        if group is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err_no_pod_group(name))
        if group.min_count is None:
            return None  # only gang policies gate
        assert self._states is not None
        state = self._states.get(pod.namespace, name)
        if state is None:
            return Status(Code.ERROR, self._states.error(pod.namespace, name))
        if state.all_count < group.min_count:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_WAITING_MIN_COUNT)
        return None

    # ---- Permit ------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status | None, float]:
        name = pod.scheduling_group
        if not name:
            return None, 0.0
        group = self.lister.get(pod.namespace, name)
        if group is None:
            return (
                Status(
                    Code.ERROR,
                    f"failed to get podGroup {pod.namespace}/{name}: {not_found(name)}",
                ),
                0.0,
            )
        if group.min_count is None:
            return None, 0.0
        cycle = state.pod_group_cycle
        group_state: PodGroupState | None
        if cycle is not None:
            group_state = cycle.state(pod.namespace, name)
            error = cycle.error(pod.namespace, name)
        else:
            assert self._states is not None
            group_state = self._states.get(pod.namespace, name)
            error = self._states.error(pod.namespace, name)
        if group_state is None:
            return Status(Code.ERROR, error), 0.0
        h = self._handle
        assert h is not None
        if group_state.scheduled_count < group.min_count:
            # Members waiting for this one may be activated.
            h.activate(p.uid for p in group_state.unscheduled_pods())
            return Status(Code.WAIT, MSG_WAITING_SCHEDULED), PERMIT_TIMEOUT
        if cycle is not None:
            # Deliberate difference: inside a pod group cycle the quorum is tentative
            # (the cycle's own members are not bound yet), so members waiting from an
            # earlier cycle are not released here; the real Permit of the member that
            # completes the quorum releases them (upstream releases them at once, and
            # they bind even when this cycle's members then fail).
            return None, 0.0
        for uid in list(group_state.assumed):
            waiting = h.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0
