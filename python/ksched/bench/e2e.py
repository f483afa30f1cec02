"""A workload against a real kube-apiserver, with ksched and with upstream kube-scheduler.

The harness (this module, one asyncio loop) talks to the apiserver through
:mod:`ksched.client`'s REST client with no client-side rate limit and a bounded number
of requests in flight:

1. once per workload: the PriorityClasses, the namespaces, and the nodes — created
   through the API and given their capacity and Ready condition through the ``status``
   subresource (a create drops ``status``) — shared by both schedulers;
2. once per workload, and again whenever a run changed them (preemption deletes
   victims): the pre-bound init pods;
3. per scheduler run: the scheduler under test is started and waited for (ksched: the
   ready file its process writes once the informers synced; kube-scheduler: its
   ``scheduler_cache_size{type="nodes"}`` reaching the node count); background churn
   starts; a watch on the measured namespace with ``fieldSelector=spec.nodeName!=``
   records when each pod is bound; the measured pods are created with up to
   ``concurrency`` requests in flight; the clock runs from the first measured pod
   created to the last one seen bound, as scheduler_perf's does;
4. after the run: attempt latencies from the scheduler's metrics (scraped before and
   after the measured op, subtracted), peak RSS (``VmHWM``) and CPU seconds
   (``utime+stime``) from ``/proc`` — also of kube-apiserver, etcd and the harness over
   the measured window, to show what the machine spent where —, the placement summary,
   then the scheduler is stopped and the measured/churn namespaces are emptied.

Both schedulers get the same ``KubeSchedulerConfiguration`` apart from the kubeconfig:
the default profile, leader election off, ``clientConnection.qps``/``burst`` both set
to ``qps``/``burst`` (default 5000/5000). kube-scheduler keeps its default content type
(protobuf); ksched speaks JSON.

ksched runs as ``python -m ksched.bench.kschedproc`` — ``ksched run`` plus a stats file,
since ``ksched run`` serves no ``/metrics`` yet (:mod:`ksched.bench.kschedproc`).

``--against bare-binder`` runs the bare binder (:mod:`ksched.bench.barebinder`) the same
way: a client that only POSTs the measured pods' bindings round-robin over the nodes, as
fast as the apiserver takes them. Its throughput is the end-to-end limit on the machine;
the report gives ksched's as a fraction of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import orjson
import yaml

from ksched.bench import procstat
from ksched.bench.placement import summarize
from ksched.bench.report import BARE_BINDER, KSCHED, UPSTREAM, RunResult
from ksched.bench.workload import (
    BENCH_LABEL,
    EXISTING_PARAM,
    NODES_PARAM,
    PODS_PARAM,
    Churn,
    CreatePods,
    Obj,
    WorkloadSpec,
    instantiate,
)
from ksched.client.kubeconfig import load_client_config
from ksched.client.rest import MERGE_PATCH, RestClient
from ksched.client.watching import watch
from ksched.cluster import APIError, Conflict, Gone, NotFound
from ksched.testing.controlplane import ControlPlane, KubeScheduler

ATTEMPT_METRIC = "scheduler_scheduling_attempt_duration_seconds"
CHURN_LABEL = "bench.ksched.io/churn"
DEFAULT_QPS = 5000.0
DEFAULT_BURST = 5000


def scheduler_config(kubeconfig: str, *, qps: float, burst: int) -> dict[str, Any]:
    """The ``KubeSchedulerConfiguration`` both schedulers run with."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }


# ------------------------------------------------------------------------ API client


class BenchAPI:
    """The harness's writes and reads. Use in one event loop; :meth:`close` at the end."""

    def __init__(self, kubeconfig: str, *, concurrency: int = 32) -> None:
        config = load_client_config(kubeconfig=kubeconfig, qps=-1, burst=1)
        self.rest = RestClient(config, max_connections=concurrency + 16)
        self.sem = asyncio.Semaphore(concurrency)
        #: Reads never queue behind thousands of pending creates.
        self.read_sem = asyncio.Semaphore(8)

    async def close(self) -> None:
        await self.rest.close()

    async def call(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        async with self.sem:
            return await self.rest.request_json(method, path, body=body, **kw)

    async def create(self, path: str, obj: Obj, *, exist_ok: bool = False) -> Obj | None:
        try:
            out: Obj = await self.call("POST", path, obj)
            return out
        except Conflict:
            if not exist_ok:
                raise
            return None

    async def create_node(self, node: Obj) -> None:
        """POST the node, then its status through the ``status`` subresource."""
        await self.create("/api/v1/nodes", node, exist_ok=True)
        name = quote(node["metadata"]["name"], safe="")
        await self.call(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": node.get("status") or {}},
            content_type=MERGE_PATCH,
        )

    async def create_with_status(self, path: str, obj: Obj) -> None:
        """POST the object (if it is not there yet), then PUT its status (the API drops
        ``status`` on create), as upstream's ``CreatePodWithPersistentVolume``."""
        created = await self.create(path, obj, exist_ok=True)
        if created is None or not obj.get("status"):
            return
        name = quote(created["metadata"]["name"], safe="")
        await self.call("PUT", f"{path}/{name}/status", {**created, "status": obj["status"]})

    async def create_volumes(self, spec: WorkloadSpec, op: CreatePods) -> None:
        """The claim and volume of every pod of ``op`` (none without volume templates)."""
        claims = f"/api/v1/namespaces/{quote(op.namespace, safe='')}/persistentvolumeclaims"

        async def one(pvc: Obj, pv: Obj) -> None:
            await self.create_with_status(claims, pvc)
            await self.create_with_status("/api/v1/persistentvolumes", pv)

        await self.gather(one(pvc, pv) for pvc, pv in spec.volume_objects(op))

    async def gather(self, coros: Iterable[Any]) -> None:
        """Run many requests (the semaphore bounds those in flight); fail on the first error."""
        tasks = [asyncio.ensure_future(c) for c in coros]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    async def list(self, path: str, params: dict[str, str] | None = None) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        cont = ""
        rv = ""
        while True:
            q = dict(params or {})
            q["limit"] = "1000"
            if cont:
                q["continue"] = cont
            async with self.read_sem:
                page = await self.rest.request_json("GET", path, params=q)
            meta = page.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or ())
            cont = str(meta.get("continue") or "")
            if not cont:
                return items, rv

    async def count(self, path: str, params: dict[str, str] | None = None) -> int:
        q = dict(params or {})
        q["limit"] = "1"
        async with self.read_sem:
            page = await self.rest.request_json("GET", path, params=q)
        meta = page.get("metadata") or {}
        return len(page.get("items") or ()) + int(meta.get("remainingItemCount") or 0)

    async def delete_collection(self, path: str, params: dict[str, str] | None = None) -> None:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        with contextlib.suppress(NotFound):
            await self.call("DELETE", path, body, params=params, timeout=600)

    async def empty_claims(self, ns: str) -> None:
        """Delete every ResourceClaim of ``ns``: the schedulers put their finalizer on
        the claims they allocate and no controller runs here to take it off, so drop
        it first."""
        path = f"{DRA}/namespaces/{quote(ns, safe='')}/resourceclaims"
        claims, _ = await self.list(path)

        async def unfinalize(c: Obj) -> None:
            if c["metadata"].get("finalizers"):
                name = quote(c["metadata"]["name"], safe="")
                with contextlib.suppress(NotFound):
                    await self.call(
                        "PATCH",
                        f"{path}/{name}",
                        {"metadata": {"finalizers": None}},
                        content_type=MERGE_PATCH,
                    )

        await self.gather(unfinalize(c) for c in claims)
        await self.empty(path)

    async def empty(
        self, path: str, params: dict[str, str] | None = None, timeout: float = 600
    ) -> None:
        """Delete every object of a collection and wait until none is left."""
        deadline = time.monotonic() + timeout
        while True:
            await self.delete_collection(path, params)
            if await self.count(path, params) == 0:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} still not empty after {timeout:.0f}s")
            await asyncio.sleep(0.5)


#: The resource.k8s.io API the DRA objects of a workload live in.
DRA = "/apis/resource.k8s.io/v1"


def pods_path(ns: str) -> str:
    return f"/api/v1/namespaces/{quote(ns, safe='')}/pods"


# --------------------------------------------------------------- schedulers under test


class UnderTest(Protocol):
    name: str

    @property
    def pid(self) -> int: ...

    def alive(self) -> bool: ...

    async def wait_ready(self, nodes: int, timeout: float) -> None: ...

    async def scrape(self) -> str: ...

    async def stop(self) -> None: ...

    def extra(self) -> dict[str, Any]: ...

    def last_stats(self) -> dict[str, Any]: ...


class KschedProcess:
    """``ksched run`` (:mod:`ksched.bench.kschedproc`) in a subprocess."""

    name = KSCHED

    def __init__(
        self, workdir: Path, config: dict[str, Any], run_id: int, *, tracemalloc: bool = False
    ) -> None:
        self.workdir = workdir
        cfg_path = workdir / f"ksched-{run_id}.config.yaml"
        cfg_path.write_text(yaml.safe_dump(config))
        self.stats_path = workdir / f"ksched-{run_id}.stats.json"
        self.ready_path = workdir / f"ksched-{run_id}.ready"
        self.log_path = workdir / f"ksched-{run_id}.log"
        for p in (self.stats_path, self.ready_path):
            p.unlink(missing_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ksched.bench.kschedproc",
                f"--config={cfg_path}",
                f"--stats-file={self.stats_path}",
                f"--ready-file={self.ready_path}",
                *(["--tracemalloc"] if tracemalloc else []),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._seq = 0
        self.final: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _tail(self) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""

    async def wait_ready(self, nodes: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready_path.exists():
            if not self.alive():
                raise RuntimeError(f"ksched exited ({self.proc.returncode}):\n{self._tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"ksched not ready after {timeout:.0f}s:\n{self._tail()}")
            await asyncio.sleep(0.05)

    def _read_stats(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = orjson.loads(self.stats_path.read_bytes())
            return doc
        except (OSError, orjson.JSONDecodeError):
            return {}

    async def scrape(self) -> str:
        self._seq += 1
        os.kill(self.proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while True:
            doc = self._read_stats()
            if doc.get("seq", 0) >= self._seq:
                return str(doc.get("metrics", ""))
            if time.monotonic() > deadline or not self.alive():
                raise RuntimeError(f"ksched wrote no stats:\n{self._tail()}")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, 60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait, 10)
        self.final = self._read_stats()
        self._log.close()

    def extra(self) -> dict[str, Any]:
        return self.final

    def last_stats(self) -> dict[str, Any]:
        return self._read_stats()


class BareBinderProcess:
    """The bare binder (:mod:`ksched.bench.barebinder`) in a subprocess: binds the
    measured namespace's pending pods round-robin over the workload's nodes, as fast as
    the apiserver takes them. It serves no metrics (no attempt latencies)."""

    name = BARE_BINDER

    def __init__(self, workdir: Path, kubeconfig: str, namespace: str, run_id: int) -> None:
        self.ready_path = workdir / f"bare-binder-{run_id}.ready"
        self.log_path = workdir / f"bare-binder-{run_id}.log"
        self.ready_path.unlink(missing_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ksched.bench.barebinder",
                f"--kubeconfig={kubeconfig}",
                f"--namespace={namespace}",
                f"--node-selector={BENCH_LABEL}",
                f"--ready-file={self.ready_path}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    async def wait_ready(self, nodes: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready_path.exists():
            if not self.alive():
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the bare binder exited ({self.proc.returncode}):\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the bare binder not ready after {timeout:.0f}s")
            await asyncio.sleep(0.05)

    async def scrape(self) -> str:
        return ""

    async def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, 30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait, 10)
        self._log.close()

    def extra(self) -> dict[str, Any]:
        return {}

    def last_stats(self) -> dict[str, Any]:
        return {}


class UpstreamProcess:
    """Upstream kube-scheduler v1.36, started by the test control plane."""

    name = UPSTREAM

    def __init__(self, cp: ControlPlane, config: dict[str, Any]) -> None:
        self.sched: KubeScheduler = cp.start_kube_scheduler(config, wait=False)

    @property
    def pid(self) -> int:
        return self.sched.pid

    def alive(self) -> bool:
        return self.sched.alive()

    async def wait_ready(self, nodes: int, timeout: float) -> None:
        await asyncio.to_thread(self.sched.wait_healthy, timeout)
        deadline = time.monotonic() + timeout
        while True:
            text = await self.scrape()
            have = sum(
                v
                for labels, v in procstat.samples(text, "scheduler_cache_size")
                if labels.get("type") == "nodes"
            )
            if have >= nodes:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"kube-scheduler has {have:.0f}/{nodes} nodes after {timeout:.0f}s"
                )
            await asyncio.sleep(0.1)

    async def scrape(self) -> str:
        return await asyncio.to_thread(self.sched.metrics)

    async def stop(self) -> None:
        await asyncio.to_thread(self.sched.stop)

    def extra(self) -> dict[str, Any]:
        return {}

    def last_stats(self) -> dict[str, Any]:
        return {}


# ---------------------------------------------------------------------------- churn


class _ApiChurn:
    """scheduler_perf's churn op through the API."""

    def __init__(self, api: BenchAPI, op: Churn, spec: WorkloadSpec) -> None:
        self.api, self.op, self.spec = api, op, spec
        self.live: list[str] = []  # paths to delete
        self.n = 0
        self.errors = 0

    async def tick(self) -> None:
        if self.op.mode == "recreate":
            for path in self.live:
                with contextlib.suppress(NotFound):
                    await self.api.call(
                        "DELETE",
                        path,
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
                    )
            self.live.clear()
        ns = quote(self.op.namespace, safe="")
        for _ in range(self.op.number):
            for t in self.op.templates:
                kind = t.get("kind")
                if kind == "Node":
                    obj = instantiate(
                        t,
                        self.n,
                        labels={BENCH_LABEL: self.spec.key, CHURN_LABEL: "true"},
                        suffix="-churn",
                    )
                    await self.api.create_node(obj)
                    self.live.append(f"/api/v1/nodes/{obj['metadata']['name']}")
                elif kind == "Pod":
                    obj = instantiate(t, self.n, namespace=self.op.namespace, suffix="-churn")
                    await self.api.create(pods_path(self.op.namespace), obj)
                    self.live.append(f"{pods_path(self.op.namespace)}/{obj['metadata']['name']}")
                elif kind == "Service":
                    obj = instantiate(t, self.n, namespace=self.op.namespace, suffix="-churn")
                    await self.api.create(f"/api/v1/namespaces/{ns}/services", obj)
                    self.live.append(f"/api/v1/namespaces/{ns}/services/{obj['metadata']['name']}")
            self.n += 1

    async def run(self) -> None:
        while True:
            t0 = time.monotonic()
            try:
                await self.tick()
            except (APIError, TimeoutError, OSError):
                self.errors += 1
            await asyncio.sleep(max(0.0, self.op.interval - (time.monotonic() - t0)))


# ---------------------------------------------------------------------------- runner


@dataclass(slots=True)
class E2EOptions:
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    concurrency: int = 32
    timeout: float = 600.0
    ready_timeout: float = 300.0
    #: When set, ``py-spy record`` samples the ksched process during the measured op and
    #: writes ``<dir>/<workload>-<run>.txt`` (collapsed stacks) and a summary.
    profile_dir: str | None = None
    #: With ``profile_dir``: run ksched under tracemalloc and write its heaviest
    #: allocation sites at the end of the measured op (slows ksched down; memory only).
    memory_profile: bool = False
    #: "scheduler_perf": create the measured pods while the scheduler runs (the clock
    #: runs from the first created to the last bound); "backlog": create them before
    #: the scheduler starts (first bound to last bound) — the scheduler's own drain
    #: rate, without the harness's creation rate in the window.
    mode: str = "scheduler_perf"


class Bench:
    """One apiserver, one workload at a time, both schedulers on it in turn."""

    def __init__(
        self,
        cp: ControlPlane,
        *,
        options: E2EOptions | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.cp = cp
        self.opts = options or E2EOptions()
        self.on_progress = on_progress or (lambda s: None)
        self.api = BenchAPI(str(cp.kubeconfig), concurrency=self.opts.concurrency)
        self.workdir = Path(cp.workdir) / "bench"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._runs = 0
        self._prepared: str | None = None
        self._node_names: list[str] = []
        self._etcd_pids = procstat.find_pids(str(Path(cp.workdir) / "etcd-data"))

    async def close(self) -> None:
        await self.api.close()

    # ---- setup ----------------------------------------------------------------------

    async def prepare(self, spec: WorkloadSpec) -> None:
        """Namespaces, PriorityClasses and the nodes of ``spec`` (replacing any others)."""
        if self._prepared == spec.label:
            return
        t0 = time.monotonic()
        self.on_progress(f"{spec.label}: cleaning up")
        for ns in spec.namespaces():
            await self.api.create("/api/v1/namespaces", {"metadata": {"name": ns}}, exist_ok=True)
            await self.api.empty(pods_path(ns))
            await self.api.empty(f"/api/v1/namespaces/{quote(ns, safe='')}/persistentvolumeclaims")
        await self.api.empty("/api/v1/nodes", {"labelSelector": BENCH_LABEL})
        await self.api.empty("/apis/storage.k8s.io/v1/csinodes", {"labelSelector": BENCH_LABEL})
        await self.api.empty("/api/v1/persistentvolumes", {"labelSelector": BENCH_LABEL})
        for ns in spec.namespaces():
            await self.api.empty_claims(ns)
        for kind in ("resourceslices", "deviceclasses"):
            await self.api.empty(f"{DRA}/{kind}", {"labelSelector": BENCH_LABEL})
        for name, value in spec.priority_classes.items():
            await self.api.create(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
                exist_ok=True,
            )
        nodes = spec.node_objects()
        done = 0

        async def one(n: Obj) -> None:
            nonlocal done
            await self.api.create_node(n)
            done += 1
            if done % 250 == 0:
                self.on_progress(f"{spec.label}: nodes {done}/{len(nodes)}")

        await self.api.gather(one(n) for n in nodes)
        await self.api.gather(
            self.api.create("/apis/storage.k8s.io/v1/csinodes", c, exist_ok=True)
            for c in spec.csinode_objects()
        )
        await self.api.gather(
            self.api.create(f"{DRA}/{kind}", obj, exist_ok=True) for kind, obj in spec.dra_objects()
        )
        # Pre-bound claims and volumes of every pod (kept across runs: no scheduler
        # changes a bound claim).
        for op in spec.ops():
            if isinstance(op, CreatePods) and op.pv_template is not None:
                t1 = time.monotonic()
                await self.api.create_volumes(spec, op)
                self.on_progress(
                    f"{spec.label}: {op.count} claims and volumes in {time.monotonic() - t1:.1f}s"
                )
        self._node_names = [n["metadata"]["name"] for n in nodes]
        self._prepared = spec.label
        self.on_progress(f"{spec.label}: {len(nodes)} nodes in {time.monotonic() - t0:.1f}s")

    async def _ensure_init_pods(self, spec: WorkloadSpec) -> None:
        for op in spec.ops():
            if not (isinstance(op, CreatePods) and op.bound and not op.collect_metrics):
                continue
            path = pods_path(op.namespace)
            if await self.api.count(path) == op.count:
                continue
            await self.api.empty(path)
            t0 = time.monotonic()
            done = 0

            async def one(p: Obj, path: str = path, total: int = op.count) -> None:
                nonlocal done
                await self.api.create(path, p)
                done += 1
                if done % 500 == 0:
                    self.on_progress(f"{spec.label}: init pods {done}/{total}")

            await self.api.gather(one(p) for p in spec.pod_objects(op, self._node_names))
            self.on_progress(f"{spec.label}: {op.count} init pods in {time.monotonic() - t0:.1f}s")

    async def _cleanup_run(self, spec: WorkloadSpec) -> None:
        for op in spec.ops():
            if isinstance(op, Churn):
                await self.api.empty(pods_path(op.namespace))
                await self.api.delete_collection(
                    f"/api/v1/namespaces/{quote(op.namespace, safe='')}/services"
                )
            elif isinstance(op, CreatePods) and not op.bound:
                await self.api.empty(pods_path(op.namespace))
                # The claims DynamicResources created for the pods' extended resources.
                await self.api.empty_claims(op.namespace)
        await self.api.empty("/api/v1/nodes", {"labelSelector": CHURN_LABEL})

    # ---- one run --------------------------------------------------------------------

    def _start(self, which: str, spec: WorkloadSpec) -> UnderTest:
        self._runs += 1
        if which == BARE_BINDER:
            namespace = spec.measured().namespace
            return BareBinderProcess(self.workdir, str(self.cp.kubeconfig), namespace, self._runs)
        if which == KSCHED:
            cfg = scheduler_config(
                str(self.cp.kubeconfig), qps=self.opts.qps, burst=self.opts.burst
            )
            return KschedProcess(
                self.workdir,
                cfg,
                self._runs,
                tracemalloc=bool(self.opts.memory_profile and self.opts.profile_dir),
            )
        if which == UPSTREAM:
            cfg = scheduler_config(
                str(self.cp.kubeconfig), qps=self.opts.qps, burst=self.opts.burst
            )
            return UpstreamProcess(self.cp, cfg)
        raise ValueError(f"unknown scheduler {which!r}")

    def _profile_start(
        self, spec: WorkloadSpec, under: UnderTest
    ) -> tuple[subprocess.Popen[bytes], Path] | None:
        if not self.opts.profile_dir or under.name != KSCHED:
            return None
        out = Path(self.opts.profile_dir) / f"{spec.key}-{self._runs}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(under.pid),
                "--rate",
                "200",
                "--format",
                "raw",
                "--nonblocking",
                "--output",
                str(out),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return proc, out

    async def _profile_stop(self, proc: subprocess.Popen[bytes], out: Path) -> str:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.to_thread(proc.wait, 30)
        except subprocess.TimeoutExpired:
            proc.kill()
        summary = out.with_suffix(".summary.txt")
        summary.write_text(procstat.summarize_collapsed(out))
        return str(summary)

    def _write_memory(self, spec: WorkloadSpec, under: UnderTest) -> None:
        if not (self.opts.profile_dir and self.opts.memory_profile):
            return
        lines = under.last_stats().get("memory") or []
        if lines:
            out = Path(self.opts.profile_dir) / f"{spec.key}-{self._runs}.memory.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("\n".join(lines) + "\n")

    def _cpu(self, sched_pid: int) -> dict[str, float]:
        out = {
            "scheduler": procstat.cpu_seconds(sched_pid),
            "harness": procstat.cpu_seconds(os.getpid()),
        }
        if (pid := self.cp.apiserver_pid) is not None:
            out["kube-apiserver"] = procstat.cpu_seconds(pid)
        out["etcd"] = sum(procstat.cpu_seconds(p) for p in self._etcd_pids)
        return out

    async def run(self, spec: WorkloadSpec, which: str) -> RunResult:
        """Run ``spec``'s measured op with scheduler ``which`` (ksched, kube-scheduler or
        the bare binder)."""
        await self.prepare(spec)
        await self._cleanup_run(spec)
        await self._ensure_init_pods(spec)
        measured = spec.measured()
        backlog = self.opts.mode == "backlog"
        if which == BARE_BINDER and any(
            isinstance(o, CreatePods) and not o.bound and not o.collect_metrics for o in spec.ops()
        ):
            raise ValueError(
                f"{spec.label}: the bare binder binds only the measured pods; this workload "
                "has init pods to schedule"
            )
        result = RunResult(
            scheduler=which,
            target="apiserver" if not backlog else "apiserver-backlog",
            workload=spec.name,
            label=spec.label,
            nodes=spec.params.get(NODES_PARAM, 0),
            existing_pods=spec.params.get(EXISTING_PARAM, 0),
            pods=spec.params.get(PODS_PARAM, measured.count),
        )
        watcher = _BindWatcher(self.api, pods_path(measured.namespace), measured.count)
        if backlog:
            if any(
                isinstance(o, CreatePods) and not o.bound and not o.collect_metrics
                for o in spec.ops()
            ):
                raise ValueError(f"{spec.label}: backlog mode needs pre-bound init pods")
            t0 = time.monotonic()
            await self._create_pods(spec, measured, result, None)
            self.on_progress(
                f"{spec.label}: {measured.count} pending pods in {time.monotonic() - t0:.1f}s"
            )
            await watcher.start()
        self.on_progress(f"{spec.label} [{which}]: starting")
        under = self._start(which, spec)
        churns: list[asyncio.Task[None]] = []
        before = ""
        try:
            await under.wait_ready(len(self._node_names), self.opts.ready_timeout)
            result.rss_ready_mib = procstat.rss_mib(under.pid)
            for op in spec.ops():
                if isinstance(op, CreatePods) and not op.bound and not op.collect_metrics:
                    await self._create_and_wait(spec, op, under)
            churn_ops = [
                _ApiChurn(self.api, op, spec) for op in spec.ops() if isinstance(op, Churn)
            ]
            churns = [asyncio.ensure_future(c.run()) for c in churn_ops]
            if not backlog:
                # Attempts before the measured op (none with pre-bound init pods) are
                # subtracted; in backlog mode the scheduler is already at work here.
                before = await under.scrape()
                await watcher.start()
            spy = self._profile_start(spec, under)
            await self._measure(spec, measured, under, result, watcher, backlog=backlog)
            if spy is not None:
                result.notes.append(f"profile: {await self._profile_stop(*spy)}")
            after = await under.scrape()
            self._write_memory(spec, under)
            result.peak_rss_mib = procstat.peak_rss_mib(under.pid)
            result.cpu_seconds = procstat.cpu_seconds(under.pid)
            for c in churn_ops:
                if c.errors:
                    result.notes.append(f"{c.errors} churn ticks failed")
        finally:
            for t in churns:
                t.cancel()
            await asyncio.gather(*churns, return_exceptions=True)
            await watcher.stop()
            await under.stop()
        buckets = procstat.subtract(
            procstat.histogram(after, ATTEMPT_METRIC, {"result": "scheduled"})[0],
            procstat.histogram(before, ATTEMPT_METRIC, {"result": "scheduled"})[0],
        )
        result.attempt_p50_ms = procstat.histogram_quantile(0.5, buckets) * 1e3
        result.attempt_p99_ms = procstat.histogram_quantile(0.99, buckets) * 1e3
        extra = under.extra()
        if "cycle_p50_us" in extra:
            result.cycle_p50_us = float(extra["cycle_p50_us"])
            result.cycle_p99_us = float(extra["cycle_p99_us"])
        nodes, _ = await self.api.list("/api/v1/nodes", {"labelSelector": BENCH_LABEL})
        pods: list[Obj] = []
        for ns in spec.namespaces():
            pods += (await self.api.list(pods_path(ns)))[0]
        result.placement = summarize(
            nodes, pods, measured_namespace=measured.namespace, template=measured.template
        )
        return result

    async def _create_and_wait(self, spec: WorkloadSpec, op: CreatePods, under: UnderTest) -> None:
        path = pods_path(op.namespace)
        await self.api.gather(
            self.api.create(path, p) for p in spec.pod_objects(op, self._node_names)
        )
        deadline = time.monotonic() + self.opts.timeout
        while await self.api.count(path, {"fieldSelector": "spec.nodeName="}) > 0:
            if time.monotonic() > deadline or not under.alive():
                raise TimeoutError(f"{spec.label}: init pods in {op.namespace} not scheduled")
            await asyncio.sleep(0.5)

    async def _create_pods(
        self, spec: WorkloadSpec, op: CreatePods, result: RunResult, start: float | None
    ) -> None:
        path = pods_path(op.namespace)
        created = 0

        async def create(p: Obj) -> None:
            nonlocal created
            await self.api.create(path, p)
            created += 1
            if start is not None:
                result.create_times.append(time.perf_counter() - start)
            elif created % 500 == 0:
                self.on_progress(f"{spec.label}: pending pods {created}/{op.count}")

        await self.api.gather(create(p) for p in spec.pod_objects(op, self._node_names))

    async def _measure(
        self,
        spec: WorkloadSpec,
        op: CreatePods,
        under: UnderTest,
        result: RunResult,
        watcher: _BindWatcher,
        *,
        backlog: bool,
    ) -> None:
        expected = op.count
        cpu0 = self._cpu(under.pid)
        start = time.perf_counter()
        watcher.origin = start
        create_task = asyncio.ensure_future(
            asyncio.sleep(0) if backlog else self._create_pods(spec, op, result, start)
        )
        deadline = start + self.opts.timeout
        cpu1 = cpu0
        try:
            while not watcher.done.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.done.wait(), 0.5)
                now = time.perf_counter()
                el = now - start
                n = len(watcher.seen)
                made = expected if backlog else len(result.create_times)
                self.on_progress(
                    f"{spec.label} [{under.name}]: created {made}/{expected}, bound "
                    f"{n}/{expected}, {n / max(el, 1e-9):,.0f} pods/s, {el:.0f}s"
                )
                if create_task.done() and (exc := create_task.exception()) is not None:
                    raise exc
                if not under.alive():
                    result.notes.append("the scheduler exited during the run")
                    break
                if now > deadline:
                    result.notes.append(f"timed out after {self.opts.timeout:.0f}s")
                    break
            cpu1 = self._cpu(under.pid)
            wall = time.perf_counter() - start
        finally:
            create_task.cancel()
            await asyncio.gather(create_task, return_exceptions=True)
        times = sorted(watcher.times)
        if backlog and times:
            # Pods were pending before the scheduler started: the clock runs from the
            # first bind to the last.
            first = times[0]
            times = [t - first for t in times]
            result.notes.append(f"backlog: first bind {first:.2f}s after the scheduler was ready")
        result.bind_times = times
        if watcher.restarts:
            result.notes.append(f"bind watch re-established {watcher.restarts}x")
        result.bound = len(watcher.seen)
        result.completed = result.bound >= expected
        result.seconds = max(times[-1] if times else 0.0, 1e-9)
        result.pods_per_second = (result.bound - (1 if backlog else 0)) / result.seconds
        result.create_seconds = max(result.create_times) if result.create_times else 0.0
        result.cpu_seconds_measured = cpu1["scheduler"] - cpu0["scheduler"]
        result.other_cpu_seconds = {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1 if k != "scheduler"}
        result.other_cpu_seconds["wall"] = wall


class _BindWatcher:
    """Watches a namespace's bound pods (``spec.nodeName!=``) and timestamps each one
    the first time it is seen bound (seconds after :attr:`origin`)."""

    def __init__(self, api: BenchAPI, path: str, expected: int) -> None:
        self.api, self.path, self.expected = api, path, expected
        self.seen: set[str] = set()
        self.times: list[float] = []
        self.origin = time.perf_counter()
        self.done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._rv = ""
        #: Times the watch had to be re-established.
        self.restarts = 0

    def _bound(self, name: str) -> None:
        if name not in self.seen:
            self.seen.add(name)
            self.times.append(time.perf_counter() - self.origin)
            if len(self.seen) >= self.expected:
                self.done.set()

    async def start(self) -> None:
        items, self._rv = await self.api.list(self.path, {"fieldSelector": "spec.nodeName!="})
        for p in items:
            self._bound(str(p["metadata"]["name"]))
        self._task = asyncio.ensure_future(self._run())
        await asyncio.sleep(0.05)  # let the watch connect

    async def _run(self) -> None:
        sel = {"fieldSelector": "spec.nodeName!="}
        while True:
            try:
                async for ev in watch(
                    self.api.rest,
                    self.path,
                    resource_version=self._rv,
                    params=sel,
                    timeout_seconds=3600,
                ):
                    meta = ev.object.get("metadata") or {}
                    if ev.type in ("ADDED", "MODIFIED"):
                        self._bound(str(meta.get("name")))
                    if meta.get("resourceVersion"):
                        self._rv = str(meta["resourceVersion"])
                # The server ended the watch (e.g. a consumer it found too slow while
                # the harness was busy creating pods): resume from the last version.
                self.restarts += 1
            except Gone:
                self.restarts += 1
                items, self._rv = await self.api.list(self.path, sel)
                for p in items:
                    self._bound(str(p["metadata"]["name"]))
            except (APIError, TimeoutError, OSError):
                self.restarts += 1
                await asyncio.sleep(0.1)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
