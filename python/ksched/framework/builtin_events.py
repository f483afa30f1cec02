"""Cluster events and queueing hints of the built-in plugins.

Built-in Filter plugins run in Rust, but the queue needs, in Python, the events that can
undo their rejections (``EventsToRegister`` upstream). :func:`events_for` answers for a
plugin name: a plugin module ``ksched.plugins.<snake_case_name>`` that defines
``events_to_register()`` takes precedence (the per-plugin modules own their events), then
then, as upstream does for a plugin without ``EnqueueExtensions``, every event of every
resource. The built-ins' registrations live in their modules under
:mod:`ksched.plugins`.

The hints mirror upstream v1.36 with queueing hints enabled (no preCheck). They receive
parsed :class:`~ksched.api.node.Node` / :class:`~ksched.api.pod.Pod` objects; ``old`` is
None for an add and ``new`` is None for a delete.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any, Final

from ksched.api.pod import Toleration
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

__all__ = [
    "ALL_EVENTS",
    "QUEUE",
    "SKIP",
    "events_for",
    "tolerates",
]

QUEUE: Final = QueueingHint.QUEUE
SKIP: Final = QueueingHint.QUEUE_SKIP

TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"

#: What a plugin without registrations is woken by (upstream ``UnrollWildCardResource``
#: restricted to the resources this scheduler watches).
ALL_EVENTS: Final = (
    ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ALL)),
)


def tolerates(tol: Toleration, key: str, value: str, effect: str) -> bool:
    """Upstream ``Toleration.ToleratesTaint``."""
    if tol.effect and tol.effect != effect:
        return False
    if tol.key and tol.key != key:
        return False
    if tol.operator == "Exists":
        return True
    if tol.operator in ("Equal", ""):
        return tol.value == value
    return False


def _module_name(plugin: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", plugin).lower()


def events_for(plugin: str) -> Sequence[ClusterEventWithHint]:
    """The registrations of built-in ``plugin`` (see the module docstring)."""
    try:
        module: Any = importlib.import_module(f"ksched.plugins.{_module_name(plugin)}")
    except ImportError:
        module = None
    fn = getattr(module, "events_to_register", None) if module is not None else None
    if callable(fn):
        return list(fn())
    return ALL_EVENTS
