"""The gang benchmark's harness on a tiny embedded workload."""

from __future__ import annotations

from ksched.bench.gangs import GangWorkload, run_embedded


def test_workload_creates_every_gang_whole_and_the_background_between() -> None:
    w = GangWorkload(nodes=10, gangs=4, background=6, seed=3)
    sizes = w.sizes()
    assert all(8 <= s <= 64 for s in sizes)
    pods = list(w.pod_objects())
    assert len(pods) == sum(sizes) + 6
    names = [p["metadata"]["name"] for p in pods]
    first = names.index("gang-1-0")
    assert names[first - sizes[0] - 2 : first - 2] == [f"gang-0-{m}" for m in range(sizes[0])]
    assert [
        g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in w.pod_group_objects()
    ] == sizes


async def test_embedded_run_binds_every_gang_whole() -> None:
    w = GangWorkload(nodes=40, gangs=6, background=20, seed=2)
    result = await run_embedded(w, timeout=60)
    assert result.bound == w.gang_pods + w.background
    assert result.complete_gangs == 6
    assert result.partial_placements == 0
    assert result.notes == []
    assert "partial placements  0" in result.table()
    assert "after the clock started" in result.table()
