"""The informer reports list/watch changes and recovers from a compacted watch by relisting."""

from __future__ import annotations

import asyncio

from ksched.client.informer import Informer
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def add(self, o: dict) -> None:
        self.events.append(("add", o["metadata"]["name"]))

    def update(self, old: dict, new: dict) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def delete(self, o: dict) -> None:
        self.events.append(("delete", o["metadata"]["name"]))


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_relist_after_gone_reports_exactly_the_differences() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("keep"))
    c.create("nodes", make_node("drop"))
    rec = Recorder()
    inf = Informer(c, "nodes", on_add=rec.add, on_update=rec.update, on_delete=rec.delete)
    task = asyncio.get_running_loop().create_task(inf.run())
    await inf.synced.wait()
    assert sorted(rec.events) == [("add", "drop"), ("add", "keep")]
    rec.events.clear()

    # The watch stream dies (API server restart) while changes happen and the history
    # is compacted: the informer must relist and report only what changed.
    c.close_watches()
    c.delete("nodes", "drop")
    c.create("nodes", make_node("new"))
    c.compact()
    await _settle()
    await asyncio.sleep(0.05)
    await _settle()
    assert inf.relists == 1
    assert sorted(rec.events) == [("add", "new"), ("delete", "drop")]
    task.cancel()


async def test_a_failing_handler_does_not_stop_the_stream() -> None:
    c = InMemoryCluster()
    seen: list[str] = []

    def add(o: dict) -> None:
        if o["metadata"]["name"] == "bad":
            raise RuntimeError("boom")
        seen.append(o["metadata"]["name"])

    inf = Informer(c, "nodes", on_add=add, on_update=lambda a, b: None, on_delete=lambda o: None)
    task = asyncio.get_running_loop().create_task(inf.run())
    await inf.synced.wait()
    c.create("nodes", make_node("bad"))
    c.create("nodes", make_node("good"))
    await _settle()
    assert seen == ["good"]
    assert inf.handler_errors == 1
    task.cancel()
