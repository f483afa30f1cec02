"""A pod's binding never overtakes the status patch of its previous failed attempt:
upstream's failure handler patches the status before the pod can be tried again
(SchedulerAsyncAPICalls is off in v1.36), and the apiserver refuses a nominatedNodeName
on a bound pod, so a preemptor's nomination would otherwise be lost."""

from __future__ import annotations

import asyncio
from typing import Any

from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for
from tests.unit.core.test_scheduler_embedded import Running, bound_pods


class SlowStatusCluster(InMemoryCluster):
    """Status patches take ``delay`` seconds; the order of status patches and bindings
    is recorded."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.calls: list[str] = []

    async def patch_pod_status(self, *, namespace: str, name: str, patch: Any) -> None:
        await asyncio.sleep(self.delay)
        self.calls.append(f"status {name}")
        await super().patch_pod_status(namespace=namespace, name=name, patch=patch)

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.calls.append(f"bind {name}")
        await super().bind(namespace=namespace, name=name, uid=uid, node_name=node_name)


async def test_the_binding_waits_for_the_failed_attempts_status_patch() -> None:
    c = SlowStatusCluster(delay=0.5)
    c.create("nodes", make_node("small", cpu="1"))
    async with Running(c, pod_initial_backoff=0.01, pod_max_backoff=0.01):
        c.create("pods", make_pod("p", cpu="2"))
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) >= 1)
        # A node that fits: the pod is retried at once, while its status patch is slow.
        c.create("nodes", make_node("big", cpu="4"))
        await wait_for(lambda: bound_pods(c) == {"p": "big"}, timeout=10)
    assert c.calls.index("status p") < c.calls.index("bind p"), c.calls
