"""NodeResourcesBalancedAllocation (Score only): rewards the change in balance of the
node's resource usage fractions the pod makes (v1.36, kubernetes#135573). Default weight 1;
``NodeResourcesBalancedAllocationArgs.resources`` (cpu:1, memory:1 by default).

Kernel in ``rust/plugins/balanced_allocation.rs``. A Score-only plugin rejects nothing,
so it registers no events.
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import ClusterEventWithHint

NAME = "NodeResourcesBalancedAllocation"
DEFAULT_WEIGHT = 1


def events_to_register() -> list[ClusterEventWithHint]:
    return []
