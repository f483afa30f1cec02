"""Updates of a pending pod reach the queue as upstream's ``updatePodInSchedulingQueue``
delivers them: everything but a resync (same resourceVersion), reported as the specific
``Pod/Update*`` events it is or a generic ``UnschedulablePod/Update``.

Checked against kube-scheduler v1.36.5's own queue by ``tests/conformance/queue.py``;
these cases pin the behaviours that differential test found or confirmed:

* a pod InterPodAffinity rejected stays in unschedulablePods on the echo of the
  scheduler's own ``PodScheduled=False`` write (the generic Update matches no
  registration of InterPodAffinity: ``Add|UpdatePodLabel|Delete``), and is requeued once
  by an update of its own labels (its hint answers Queue for the pod itself);
* a plugin registering ``Pod/All`` without a hint (what a plugin without
  EnqueueExtensions gets) is woken by that echo: one more attempt, as upstream;
* a bound pod's conditions-only update reaches a plugin that registered Pod/Update.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ksched.backend.queue.cluster_event import POD, ActionType, ClusterEvent, ClusterEventWithHint
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_pod

Obj = dict[str, Any]
PROFILE = "default-scheduler"


class Harness:
    """A Scheduler (not started) whose pod informer the test drives."""

    def __init__(self, extra: list[tuple[str, ClusterEventWithHint]] | None = None) -> None:
        self.sched = Scheduler(InMemoryCluster(), {PROFILE: default_profile()}, seed=1)
        self.now = 0.0
        self.sched.queue.clock = lambda: self.now
        if extra:
            # A registration of a plugin the default profile lacks, as if it were there.
            regs = self.sched.queue._hints_by_profile
            assert regs is not None and self.sched.queue._registered_events is not None
            regs[PROFILE].extend(extra)
            self.sched.queue._registered_events.extend(r.event for _, r in extra)
        self.pod = make_pod("p", cpu="1", labels={"app": "a"})
        self.pod["metadata"].update(resourceVersion="1", uid="uid-p")
        self.uid = "uid-p"

    def add_and_fail(self, *plugins: str) -> None:
        self.sched.pod_informer._on_add(self.pod)
        q = self.sched.queue
        info = q.pop_specific(self.uid)
        assert info is not None
        q.add_unschedulable(info, plugins)
        assert self.where() == "unschedulable"

    def update(self, change: str) -> None:
        new: Obj = copy.deepcopy(self.pod)
        meta, status = new["metadata"], new.setdefault("status", {})
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        if change == "scheduled-false":
            status["conditions"] = [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            ]
        elif change == "labels":
            meta["labels"] = {"app": "b"}
        elif change == "resync":
            new = copy.deepcopy(self.pod)
            new["metadata"]["labels"] = {"app": "c"}  # cannot happen; proves the drop
        self.sched.pod_informer._on_update(self.pod, new)
        self.pod = new

    def where(self) -> str | None:
        return self.sched.queue.where(self.uid)


def test_inter_pod_affinity_pod_stays_unschedulable_on_its_own_status_echo() -> None:
    h = Harness()
    h.add_and_fail("InterPodAffinity")
    h.update("scheduled-false")
    assert h.where() == "unschedulable"


def test_inter_pod_affinity_pod_is_requeued_once_by_its_own_label_update() -> None:
    h = Harness()
    h.add_and_fail("InterPodAffinity")
    h.update("labels")
    assert h.where() == "backoff"  # Queue from an Unschedulable plugin, still backing off


def test_taint_toleration_pod_stays_unschedulable_on_its_own_status_echo() -> None:
    h = Harness()
    h.add_and_fail("TaintToleration")
    h.update("scheduled-false")
    assert h.where() == "unschedulable"


@pytest.mark.parametrize(("change", "moved"), [("scheduled-false", True), ("resync", False)])
def test_a_pod_all_registration_is_woken_by_the_status_echo(change: str, moved: bool) -> None:
    """Upstream drops only a resync; any other update of the pod is a generic
    UnschedulablePod/Update, which a Pod/All registration without a hint matches."""
    h = Harness([("Custom", ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)))])
    h.add_and_fail("Custom")
    h.update(change)
    assert h.where() == ("backoff" if moved else "unschedulable")


def test_a_bound_pods_condition_update_reaches_a_pod_update_registration() -> None:
    """The kubelet's condition updates are a generic AssignedPod/Update upstream."""
    seen: list[str] = []

    def hint(pod: Any, old: Any, new: Any) -> Any:
        seen.append(new.name)
        from ksched.backend.queue.cluster_event import QueueingHint

        return QueueingHint.QUEUE_SKIP

    h = Harness([("Custom", ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), hint))])
    h.add_and_fail("Custom")
    bound = make_pod("b", cpu="1", node_name="n1")
    bound["metadata"].update(resourceVersion="5", uid="uid-b")
    bound["status"]["phase"] = "Running"
    h.sched.pod_informer._on_add(bound)
    ready = copy.deepcopy(bound)
    ready["metadata"]["resourceVersion"] = "6"
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    h.sched.pod_informer._on_update(bound, ready)
    assert seen == ["b"]
    assert h.where() == "unschedulable"


@pytest.mark.parametrize(("scheduler", "moved"), [("default-scheduler", True), ("other", False)])
def test_a_deleted_nominated_pod_frees_its_node_only_for_our_own_pods(
    scheduler: str, moved: bool
) -> None:
    """Upstream deletePodFromSchedulingQueue (the AssignedPod/Delete of a nominated pod)
    runs only for pods of the scheduler's profiles."""
    h = Harness()
    h.add_and_fail("NodeResourcesFit")
    other = make_pod("n", cpu="1", scheduler_name=scheduler)
    other["metadata"].update(resourceVersion="7", uid="uid-n")
    other["status"]["nominatedNodeName"] = "n1"
    h.sched.pod_informer._on_delete(other)
    assert h.where() == ("backoff" if moved else "unschedulable")
