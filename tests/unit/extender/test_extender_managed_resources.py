"""managedResources[].ignoredByScheduler, as upstream's buildExtenders applies it: the
resource joins NodeResourcesFit's ignoredResources in every profile, so a pod requesting
it passes the built-in filters and the extender, which manages it, decides."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ksched import simulate
from ksched.framework.extender import HTTPExtender
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import node_of, wait_for
from tests.unit.extender.fake_extender import FakeExtender, names_of


def config(url: str, ignored: bool) -> str:
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "extenders:\n"
        f"- urlPrefix: {url}\n"
        "  filterVerb: filter\n"
        "  nodeCacheCapable: true\n"
        "  managedResources:\n"
        f"  - {{name: example.com/ext, ignoredByScheduler: {str(ignored).lower()}}}\n"
    )


def ext_pod(name: str) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["containers"][0]["resources"]["requests"]["example.com/ext"] = "1"
    return pod


async def run(tmp_path: Path, ignored: bool) -> tuple[InMemoryCluster, FakeExtender, Any]:
    fake = FakeExtender()
    await fake.__aenter__()
    fake.handlers["filter"] = lambda args: {"NodeNames": [n for n in names_of(args) if n == "n2"]}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(config(fake.url, ignored))
    profiles, extenders = simulate.load_setup(str(cfg))
    c = InMemoryCluster()
    for n in ("n1", "n2"):
        c.create("nodes", make_node(n))
    sched = Scheduler(c, profiles, seed=1, extenders=[HTTPExtender(e) for e in extenders])
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    c.create("pods", ext_pod("p"))
    return c, fake, (sched, task)


async def stop(fake: FakeExtender, handle: Any) -> None:
    sched, task = handle
    await sched.shutdown()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await fake.__aexit__(None, None, None)


async def test_an_ignored_managed_resource_is_left_to_the_extender(tmp_path: Path) -> None:
    c, fake, handle = await run(tmp_path, ignored=True)
    try:
        await wait_for(lambda: node_of(c, "p") == "n2")
        assert fake.calls("filter")  # the extender was asked
    finally:
        await stop(fake, handle)


async def test_a_managed_resource_not_ignored_is_checked_by_node_resources_fit(
    tmp_path: Path,
) -> None:
    c, fake, handle = await run(tmp_path, ignored=False)
    try:

        def failed() -> bool:
            pod = c.get("pods", "default/p") or {}
            conds = (pod.get("status") or {}).get("conditions") or []
            return any("Insufficient example.com/ext" in x.get("message", "") for x in conds)

        await wait_for(failed)
        assert not fake.calls("filter")  # no node passed the built-in filters
    finally:
        await stop(fake, handle)
