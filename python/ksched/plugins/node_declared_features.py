"""NodeDeclaredFeatures: a pod that needs node features fits only nodes declaring them.

v1.36's default profile enables it (last of the multiPoint plugins) while the
NodeDeclaredFeatures gate is on (beta, on by default). The pieces, as upstream splits
them:

* what a pod needs: :func:`ksched.api.declared_features.infer_for_pod_scheduling` on its
  spec (``Pod.required_features``, computed once per pod object and carried in its
  compiled form);
* what a node declares: ``status.declaredFeatures`` mapped onto the registry
  (:func:`~ksched.api.declared_features.try_map`), a bitset column of the Rust snapshot;
* PreFilter (Skip when the pod needs nothing) and Filter (every needed feature
  declared, else UnschedulableAndUnresolvable :data:`ERR_REASON_UNSATISFIED`) in
  ``rust/plugins/node_declared_features.rs``, at the plugin's place in the profile's
  Filter order (after DynamicResources in the default profile);
* here: the name, the reason and the events with their queueing hints.

With the gate off the plugin may still be named in a profile and does nothing, as
upstream's (its PreFilter skips, its Filter passes, it registers no events):
``ksched.profiles.build_profiles`` leaves it out of the kernels, and node updates that
only change ``declaredFeatures`` are no cluster event (upstream extracts
``UpdateNodeDeclaredFeature`` only with the gate on).

Events (upstream ``EventsToRegister``): Node ``Add | UpdateNodeDeclaredFeature``, queued
unless an update left the declared list as it was (``slices.Equal``: absent and empty
are equal); Pod ``Update``, queued only for the pod itself when its required features
changed. Upstream's hint compares the features inferred from the old and the new spec
of the update event (not the queued pod's); scheduling reads only immutable fields
(``restartPolicyRules``, ``hostNetwork``, ``hostUsers``), so in a real cluster this hint
skips, as upstream's does.
"""

from __future__ import annotations

from typing import Final

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

__all__ = ["ERR_REASON_UNSATISFIED", "NAME", "events_to_register"]

NAME: Final = "NodeDeclaredFeatures"
#: ``errReasonUnsatisfiedRequirements``.
ERR_REASON_UNSATISFIED: Final = "node(s) didn't match Pod's required features"


def after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
    """``isSchedulableAfterNodeChange``."""
    if old is not None and old.declared_features == new.declared_features:
        return SKIP
    return QUEUE


def after_pod_update(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
    """``isSchedulableAfterPodUpdate``."""
    if new.uid != pod.uid:
        return SKIP
    if old is not None and old.required_features == new.required_features:
        return SKIP
    return QUEUE


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
            after_node_change,
        ),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), after_pod_update),
    ]
