"""The gang benchmark: thousands of nodes, hundreds of gangs of 8 to 64 pods, and
background pods, on the embedded cluster or a real apiserver.

::

    python -m ksched.bench.gangs                                   # embedded, full size
    python -m ksched.bench.gangs --target apiserver --scale 0.2    # real kube-apiserver

The workload (:class:`GangWorkload`): ``nodes`` nodes (8 cpu, 32Gi, 110 pods, three
zones), ``gangs`` scheduling.k8s.io/v1alpha2 PodGroups with a gang policy whose
``minCount`` is the gang's size, drawn uniformly from 8 to 64 with a fixed seed, and
``background`` plain pods. Gang members request 1 cpu / 2Gi, background pods 100m /
500Mi (scheduler_perf's pod). The PodGroups exist first; the pods are then created
gang by gang, a gang's members one after another, with the background pods spread
evenly between the gangs. ksched runs with ``--feature-gates=GenericWorkload=true,
GangScheduling=true`` and its default profile (GangScheduling included).

Reported (:class:`GangResult`): pods bound per second, from the first pod created to
the last one bound; the time from the first pod created to the moment the last gang
was complete; how many gangs ended complete; and the partial placements: gangs with
some but fewer than ``minCount`` members bound once the run is over (must be 0: a gang
binds whole or not at all; while a gang's bindings are in flight it is of course
briefly incomplete, which is not a placement).

The embedded target runs the whole scheduler on :class:`~ksched.sim.cluster.
InMemoryCluster` (no HTTP). The apiserver target starts the test control plane with
the alpha API and gates (:mod:`ksched.testing.controlplane`), runs ksched as a child
process (:mod:`ksched.bench.kschedproc`), creates the objects through the API with
bounded concurrency and follows the bindings with a watch.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ksched import aio
from ksched.config import DEFAULT_FEATURE_GATES, load_config_bytes
from ksched.profiles import build_profiles
from ksched.scheduler import Scheduler
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

__all__ = ["GangResult", "GangWorkload", "main", "run_apiserver", "run_embedded"]

Obj = dict[str, Any]
GATES = DEFAULT_FEATURE_GATES.with_(generic_workload=True, gang_scheduling=True)
GATE_FLAGS = "GenericWorkload=true,GangScheduling=true"
ZONE = "topology.kubernetes.io/zone"
_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@dataclass(slots=True)
class GangWorkload:
    nodes: int = 5000
    gangs: int = 500
    min_size: int = 8
    max_size: int = 64
    background: int = 5000
    seed: int = 1
    namespace: str = "gangs"

    def scaled(self, factor: float) -> GangWorkload:
        return GangWorkload(
            nodes=max(1, round(self.nodes * factor)),
            gangs=max(1, round(self.gangs * factor)),
            min_size=self.min_size,
            max_size=self.max_size,
            background=round(self.background * factor),
            seed=self.seed,
            namespace=self.namespace,
        )

    def sizes(self) -> list[int]:
        rng = random.Random(self.seed)
        return [rng.randint(self.min_size, self.max_size) for _ in range(self.gangs)]

    def node_objects(self) -> list[Obj]:
        return [
            make_node(f"node-{i}", cpu="8", memory="32Gi", labels={ZONE: f"zone-{i % 3}"})
            for i in range(self.nodes)
        ]

    def pod_group_objects(self) -> list[Obj]:
        return [
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": self.namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
            }
            for g, size in enumerate(self.sizes())
        ]

    def pod_objects(self) -> Iterator[Obj]:
        """Gang by gang, background pods spread evenly between the gangs."""
        sizes = self.sizes()
        per_gang = self.background / max(1, len(sizes))
        made = 0
        for g, size in enumerate(sizes):
            for m in range(size):
                obj = make_pod(f"gang-{g}-{m}", namespace=self.namespace, cpu="1", memory="2Gi")
                obj["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{g}"}
                yield obj
            want = round(per_gang * (g + 1))
            while made < want:
                yield make_pod(f"bg-{made}", namespace=self.namespace)
                made += 1
        while made < self.background:
            yield make_pod(f"bg-{made}", namespace=self.namespace)
            made += 1

    @property
    def gang_pods(self) -> int:
        return sum(self.sizes())


@dataclass(slots=True)
class GangResult:
    target: str
    nodes: int
    gangs: int
    gang_pods: int
    background_pods: int
    bound: int = 0
    seconds: float = 0.0
    pods_per_second: float = 0.0
    last_gang_bound_seconds: float = 0.0
    complete_gangs: int = 0
    #: Gangs with some but fewer than minCount members bound at the end (must be 0).
    partial_placements: int = 0
    cpu_seconds: float = 0.0
    peak_rss_mib: float = 0.0
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        rows = [
            (
                "workload",
                f"{self.target}: {self.nodes} nodes, {self.gangs} gangs "
                f"({self.gang_pods} pods), {self.background_pods} background pods",
            ),
            (
                "bound",
                f"{self.bound}/{self.gang_pods + self.background_pods} in {self.seconds:.2f}s",
            ),
            ("throughput", f"{self.pods_per_second:,.0f} pods/s"),
            ("last gang bound", f"{self.last_gang_bound_seconds:.2f}s after the clock started"),
            ("complete gangs", f"{self.complete_gangs}/{self.gangs}"),
            ("partial placements", f"{self.partial_placements}"),
            ("cpu", f"{self.cpu_seconds:.1f}s (scheduler process)"),
            ("peak RSS", f"{self.peak_rss_mib:.0f} MiB"),
            ("load average", " ".join(f"{x:.2f}" for x in self.load_average)),
        ]
        rows += [("note", n) for n in self.notes]
        return "\n".join(f"{k:<20}{v}" for k, v in rows)


class _Tracker:
    """Bindings per gang as they happen: complete and partial gangs, timings."""

    def __init__(self, w: GangWorkload, start: float) -> None:
        self.start = start
        self.sizes = {f"gang-{g}": s for g, s in enumerate(w.sizes())}
        self.bound: dict[str, int] = dict.fromkeys(self.sizes, 0)
        self.pods: set[str] = set()
        self.complete = 0
        self.last_complete = 0.0
        self.last_bound = 0.0

    def saw_bound(self, name: str, now: float) -> None:
        if name in self.pods:
            return
        self.pods.add(name)
        self.last_bound = now - self.start
        if not name.startswith("gang-"):
            return
        gang = name.rsplit("-", 1)[0]
        self.bound[gang] += 1
        if self.bound[gang] == self.sizes[gang]:
            self.complete += 1
            self.last_complete = now - self.start

    def partial_now(self) -> int:
        return sum(1 for g, n in self.bound.items() if 0 < n < self.sizes[g])


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_self() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# ---- embedded -------------------------------------------------------------------------------


async def run_embedded(w: GangWorkload, *, timeout: float = 600.0) -> GangResult:
    result = GangResult("embedded", w.nodes, w.gangs, w.gang_pods, w.background)
    cluster = InMemoryCluster()
    for n in w.node_objects():
        cluster.create("nodes", n)
    for pg in w.pod_group_objects():
        cluster.create("podgroups", pg)
    cfg = load_config_bytes(_EMPTY_CONFIG, gates=GATES)
    sched = Scheduler(cluster, build_profiles(cfg, gates=GATES), seed=w.seed, feature_gates=GATES)
    await sched.start()
    aio.tune_gc()
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    pods = list(w.pod_objects())
    total = len(pods)
    cpu0 = _cpu_self()
    start = time.perf_counter()
    tracker = _Tracker(w, start)
    bind = cluster.bind

    async def bind_and_track(*, namespace: str, name: str, uid: str, node_name: str) -> None:
        await bind(namespace=namespace, name=name, uid=uid, node_name=node_name)
        tracker.saw_bound(name, time.perf_counter())

    cluster.bind = bind_and_track  # type: ignore[method-assign]
    try:
        deadline = start + timeout
        it = iter(pods)
        created = 0
        while len(tracker.pods) < total:
            for pod in it:
                cluster.create("pods", pod)
                created += 1
                if created % 500 == 0:
                    break
            if time.perf_counter() > deadline:
                result.notes.append(f"timed out after {timeout:.0f}s")
                break
            await asyncio.sleep(0 if created < total else 0.001)
    finally:
        await sched.shutdown()
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)
        gc.unfreeze()
    result.cpu_seconds = _cpu_self() - cpu0
    return _finish(result, tracker, total)


def _finish(result: GangResult, tracker: _Tracker, total: int) -> GangResult:
    result.bound = len(tracker.pods)
    result.seconds = max(tracker.last_bound, 1e-9)
    result.pods_per_second = result.bound / result.seconds
    result.last_gang_bound_seconds = tracker.last_complete
    result.complete_gangs = tracker.complete
    result.partial_placements = tracker.partial_now()
    result.peak_rss_mib = _rss_mib()
    result.load_average = os.getloadavg()
    if result.bound < total:
        result.notes.append(f"{total - result.bound} pods not bound")
    return result


# ---- real apiserver -------------------------------------------------------------------------


async def run_apiserver(
    w: GangWorkload, *, timeout: float = 1200.0, concurrency: int = 64, backlog: bool = False
) -> GangResult:
    """The workload on a real kube-apiserver. ``backlog``: every pod exists before ksched
    starts, and the clock runs from ksched's caches synced to the last pod bound
    (scheduling alone); otherwise pods are created while ksched runs (scheduler_perf's
    way: the clock includes the creation rate)."""
    from ksched.bench.e2e import BenchAPI
    from ksched.client.api import connect
    from ksched.testing.controlplane import ControlPlane, ensure_binaries

    result = GangResult(
        "apiserver (backlog)" if backlog else "apiserver",
        w.nodes,
        w.gangs,
        w.gang_pods,
        w.background,
    )
    cp = ControlPlane(
        bin_dir=ensure_binaries(),
        apiserver_args=(
            "--runtime-config=scheduling.k8s.io/v1alpha2=true",
            f"--feature-gates={GATE_FLAGS}",
            "--max-requests-inflight=2000",
            "--max-mutating-requests-inflight=2000",
        ),
    )
    cp.start()
    workdir = Path(tempfile.mkdtemp(prefix="ksched-gangs-"))
    proc: subprocess.Popen[bytes] | None = None
    api = BenchAPI(str(cp.kubeconfig), concurrency=concurrency)
    watcher = connect(kubeconfig=str(cp.kubeconfig), qps=-1, burst=0)
    try:
        await api.create("/api/v1/namespaces", {"metadata": {"name": w.namespace}})
        await api.gather(api.create_node(n) for n in w.node_objects())
        ns_path = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{w.namespace}/podgroups"
        await api.gather(api.create(ns_path, pg) for pg in w.pod_group_objects())
        cfg = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": 5000, "burst": 5000},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": "default-scheduler"}],
        }
        pods = list(w.pod_objects())
        total = len(pods)
        pods_path = f"/api/v1/namespaces/{w.namespace}/pods"
        if backlog:
            await api.gather(api.create(pods_path, p) for p in pods)
        cfg_path = workdir / "ksched.config.json"
        cfg_path.write_text(json.dumps(cfg))
        ready = workdir / "ready"
        stats = workdir / "stats.json"
        log = open(workdir / "ksched.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ksched.bench.kschedproc",
                f"--config={cfg_path}",
                f"--stats-file={stats}",
                f"--ready-file={ready}",
                f"--feature-gates={GATE_FLAGS}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 600
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((workdir / "ksched.log").read_text(errors="replace")[-4000:])
            await asyncio.sleep(0.1)
        listed = await watcher.list(kind="pods")
        start = time.perf_counter()
        tracker = _Tracker(w, start)
        for obj in listed.items:
            if (obj.get("spec") or {}).get("nodeName"):
                tracker.saw_bound(obj["metadata"]["name"], start)
        done = asyncio.Event()

        async def follow() -> None:
            rv = listed.resource_version
            try:
                while True:
                    async for ev in watcher.watch(kind="pods", resource_version=rv):
                        obj = ev.object
                        meta = obj.get("metadata") or {}
                        rv = str(meta.get("resourceVersion") or rv)
                        if ev.type == "BOOKMARK" or meta.get("namespace") != w.namespace:
                            continue
                        if (obj.get("spec") or {}).get("nodeName"):
                            tracker.saw_bound(meta["name"], time.perf_counter())
                            if len(tracker.pods) >= total:
                                done.set()
                                return
            except Exception as exc:  # the run reports it instead of hanging
                result.notes.append(f"watch failed: {exc!r}")
                done.set()

        follower = asyncio.get_running_loop().create_task(follow())
        creating = asyncio.get_running_loop().create_task(
            api.gather(api.create(pods_path, p) for p in ([] if backlog else pods))
        )
        if len(tracker.pods) >= total:
            done.set()
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except TimeoutError:
            result.notes.append(f"timed out after {timeout:.0f}s")
        await creating
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        # The scheduler's CPU, from /proc (the child process).
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        result.cpu_seconds = (int(fields[11]) + int(fields[12])) / tick
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    result.peak_rss_mib = int(line.split()[1]) / 1024.0
        out = _finish(result, tracker, total)
        out.peak_rss_mib = result.peak_rss_mib
        return out
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        await watcher.close()
        await api.close()
        cp.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ksched.bench.gangs", description=__doc__)
    p.add_argument("--target", choices=("embedded", "apiserver"), default="embedded")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--nodes", type=int, default=None)
    p.add_argument("--gangs", type=int, default=None)
    p.add_argument("--background", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--json", default=None, help="write the result here")
    p.add_argument(
        "--mode",
        choices=("created", "backlog"),
        default="created",
        help="apiserver target: create the pods while ksched runs (the clock includes the "
        "creation), or before it starts (backlog: the clock runs from synced to last bound)",
    )
    args = p.parse_args(argv)
    w = GangWorkload(seed=args.seed).scaled(args.scale)
    if args.nodes is not None:
        w.nodes = args.nodes
    if args.gangs is not None:
        w.gangs = args.gangs
    if args.background is not None:
        w.background = args.background
    if args.target == "embedded":
        result = aio.run(run_embedded(w, timeout=args.timeout))
    else:
        result = aio.run(run_apiserver(w, timeout=args.timeout, backlog=args.mode == "backlog"))
    print(result.table())
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(result), indent=2))
    ok = result.partial_placements == 0 and not result.notes
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
