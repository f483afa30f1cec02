"""Shared helpers: API objects shaped like the API server's, parsed the scheduler's way;
a scheduler running on the embedded cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.framework.extender import Extender
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

PROFILE = "default-scheduler"


def parsed_pod(name: str, *, uid: str | None = None, **kwargs: Any) -> Pod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = uid or f"uid-{name}"
    obj["metadata"]["resourceVersion"] = "1"
    return Pod.from_dict(obj)


def parsed_node(name: str, **kwargs: Any) -> Node:
    return Node.from_dict(make_node(name, **kwargs))


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll until ``cond()`` holds; a generous deadline, never a timing assertion."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.002)


def node_of(c: InMemoryCluster, name: str, namespace: str = "default") -> str | None:
    """The node pod ``namespace/name`` is bound to (None: unbound or gone)."""
    pod = c.get("pods", f"{namespace}/{name}")
    return None if pod is None else pod["spec"].get("nodeName")


class RunningWithExtenders:
    """The default profile scheduling on ``cluster`` with these extenders, loop running."""

    def __init__(self, cluster: InMemoryCluster, *extenders: Extender) -> None:
        self.sched = Scheduler(cluster, {PROFILE: default_profile()}, seed=1, extenders=extenders)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
