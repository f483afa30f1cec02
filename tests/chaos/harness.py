"""What the chaos scenarios share: replicas of ``ksched run``, a recorded history of
every pod change, and the invariants checked against it.

* :class:`Api` — the admin's HTTPS client with one keep-alive connection per thread
  (creating thousands of pods must not cost a TLS handshake each).
* :class:`Replicas` — ``ksched run`` child processes (:class:`KschedProcess`) sharing
  one Lease: find the leader from the Lease, SIGKILL, SIGSTOP/SIGCONT, restart a
  replica that exited (as its Deployment would), and read their logs for tracebacks
  and exits nobody asked for. ``KSCHED_CHAOS_PYTHONPATH`` runs the replicas from
  another source tree (an older ksched) to show what a scenario does to it.
* :class:`History` — a watch on the namespace's pods, in the apiserver's commit order,
  that resumes after a broken stream and relists after ``410 Gone`` (compaction),
  reporting what changed in between. It records every binding, every deletion and
  the exact occupancy of every node after each change.
* :func:`violations` — the invariants: every pod created is bound exactly once (its
  node never changes and none is left pending), no node is ever over its allocatable
  cpu, memory or pod count (exact quantity arithmetic with :class:`fractions.Fraction`,
  independent of ksched's own parser), and no running pod is deleted unless a
  placement required it: each deletion must be claimed by a ``Preempted`` event, for
  a more important pod that was then bound, and made by the replica holding the Lease
  at that moment (:class:`LeaseLog`; which replica deleted a victim is in its log, as
  every replica's events carry the same upstream ``reportingInstance``). (Counting
  deletions against placements instead would also flag upstream's own race: two
  preemptors of equal priority nominated to one node block each other until both
  victims are gone, and one of them may preempt a second time; kube-scheduler v1.36.5
  itself does that on this workload.)
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import signal
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ksched.testing.controlplane import ControlPlane
from ksched.testing.ksched_process import KschedProcess, write_scheduler_config

Obj = dict[str, Any]

#: Lines for the terminal summary (``tests/chaos/conftest.py`` prints them).
FIGURES: list[str] = []


def full() -> bool:
    """``make chaos``: the full loops (else one short round, as ``make test`` runs)."""
    return os.environ.get("KSCHED_CHAOS_FULL", "") not in ("", "0")


def rounds() -> int:
    """How many times ``make chaos ROUNDS=N`` repeats each full loop."""
    return max(1, int(os.environ.get("KSCHED_CHAOS_ROUNDS", "1") or 1))


def figure(line: str) -> None:
    """A line for the terminal summary (also in the captured output)."""
    print(line)
    FIGURES.append(line)


# ---- exact quantities (independent of ksched.api.quantity) ------------------------

_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?)([a-zA-Z]*)$")


def quantity(text: str | int | None) -> Fraction:
    """The exact value of the simple quantities these scenarios use ("100m", "4Gi")."""
    if text is None:
        return Fraction(0)
    m = _QUANTITY.match(str(text))
    if m is None or m.group(2) not in _SUFFIXES:
        raise ValueError(f"unsupported quantity {text!r}")
    return Fraction(m.group(1)) * _SUFFIXES[m.group(2)]


RESOURCES = ("cpu", "memory", "pods")


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """A pod's requests as the scheduler counts them (containers summed, one pod slot)."""
    total = {r: Fraction(0) for r in RESOURCES}
    total["pods"] = Fraction(1)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for r, v in ((c.get("resources") or {}).get("requests") or {}).items():
            if r in total and r != "pods":
                total[r] += quantity(v)
    return total


# ---- the API ----------------------------------------------------------------------


class Api:
    """Admin requests with one keep-alive HTTPS connection per thread."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "port", None) != self.cp.port:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", self.cp.port, context=self.cp.ssl_context(), timeout=30
            )
            self._local.conn, self._local.port = conn, self.cp.port
        return conn

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
                continue
            return resp.status, json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    def must(self, method: str, path: str, body: Any = None, ok: Iterable[int] = (200, 201)) -> Any:
        status, doc = self.request(method, path, body)
        if status not in tuple(ok):
            raise AssertionError(f"{method} {path}: HTTP {status}: {doc}")
        return doc

    def create_all(self, path: str, objs: Sequence[Obj], threads: int = 8) -> None:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda o: self.must("POST", path, o), objs))

    def create_surely(self, path: str, objs: Sequence[Obj], threads: int = 8) -> None:
        """Create every object, retrying through an apiserver restart (an object whose
        create committed before the connection broke answers 409 on the retry)."""

        def one(obj: Obj) -> None:
            deadline = time.monotonic() + 120
            while True:
                try:
                    status, doc = self.request("POST", path, obj)
                except (OSError, http.client.HTTPException):
                    status, doc = 0, None
                if status in (201, 409):
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"POST {path}: HTTP {status}: {doc}")
                time.sleep(0.2)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, objs))

    def pods(self, namespace: str) -> list[Obj]:
        return list(self.must("GET", f"/api/v1/namespaces/{namespace}/pods")["items"])

    def lease_holder(self, namespace: str, name: str) -> str:
        status, doc = self.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        )
        return (
            str(((doc or {}).get("spec") or {}).get("holderIdentity") or "")
            if status == 200
            else ""
        )

    def delete_all_pods(self, namespace: str, timeout: float = 60) -> None:
        self.must(
            "DELETE",
            f"/api/v1/namespaces/{namespace}/pods",
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        wait_until(lambda: not self.pods(namespace), timeout, "every pod deleted", poll=0.2)

    def priority_class(self, name: str, value: int) -> None:
        self.must(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
            ok=(201, 409),
        )


def compact_etcd(cp: ControlPlane) -> int:
    """Compact etcd at its current revision through the v3 JSON gateway; returns it.
    Every watch that resumes from an older resourceVersion then gets 410 Gone."""
    import urllib.request

    def post(path: str, body: Obj) -> Obj:
        req = urllib.request.Request(
            cp.etcd_url + path, data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            doc: Obj = json.loads(r.read())
            return doc

    revision = int(post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def wait_until(cond: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> float:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:.0f}s: {what}")
        time.sleep(poll)
    return time.monotonic()


def make_nodes(api: Api, prefix: str, count: int, *, cpu: str, memory: str, pods: str) -> list[Obj]:
    nodes = []
    for i in range(count):
        name = f"{prefix}-{i:03d}"
        capacity = {"cpu": cpu, "memory": memory, "pods": pods}
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {
                    "capacity": capacity,
                    "allocatable": dict(capacity),
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    api.create_all("/api/v1/nodes", nodes)
    return nodes


def delete_nodes(api: Api, nodes: Iterable[Obj]) -> None:
    for n in nodes:
        api.request("DELETE", f"/api/v1/nodes/{n['metadata']['name']}")


def pod_obj(
    name: str, *, cpu: str = "100m", memory: str = "100Mi", priority_class: str = ""
) -> Obj:
    spec: Obj = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# ---- replicas ---------------------------------------------------------------------


@dataclass
class Timing:
    lease: float
    renew: float
    retry: float


@dataclass
class Replica:
    index: int
    proc: KschedProcess
    identity: str = ""
    #: Exit statuses this replica was expected to have (killed, fenced...).
    expected_exit: bool = False
    generation: int = 0


class Replicas:
    """``count`` replicas of ``ksched run`` on one Lease, restarted when they exit."""

    def __init__(
        self,
        cp: ControlPlane,
        workdir: Path,
        namespace: str,
        lease_name: str,
        timing: Timing,
        count: int,
        *,
        qps: int = 200,
    ) -> None:
        self.cp = cp
        self.workdir = workdir
        self.namespace = namespace
        self.lease_name = lease_name
        self.config = write_scheduler_config(
            workdir / "sched.json",
            {
                # In the file: with --config, kube-scheduler (and ksched) ignore the
                # deprecated --kubeconfig flag.
                "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": qps, "burst": qps},
                "podInitialBackoffSeconds": 1,
                "podMaxBackoffSeconds": 10,
                "leaderElection": {
                    "leaderElect": True,
                    "leaseDuration": f"{timing.lease}s",
                    "renewDeadline": f"{timing.renew}s",
                    "retryPeriod": f"{timing.retry}s",
                    "resourceNamespace": namespace,
                    "resourceName": lease_name,
                },
            },
        )
        self.replicas: list[Replica] = []
        #: Every process ever started, for the log checks.
        self.history: list[Replica] = []
        self.unexpected: list[str] = []
        for i in range(count):
            self.replicas.append(self._start(i, 0))

    def _start(self, index: int, generation: int) -> Replica:
        env = dict(os.environ)
        other = os.environ.get("KSCHED_CHAOS_PYTHONPATH", "")
        if other:
            env["PYTHONPATH"] = other + os.pathsep + env.get("PYTHONPATH", "")
        proc = KschedProcess(
            [
                f"--config={self.config}",
                f"--client-ca-file={self.cp.ca_file}",
                "-v",
                "2",
            ],
            self.workdir / f"ksched-{index}-{generation}.log",
            env=env,
        )
        replica = Replica(index, proc, generation=generation)
        self.history.append(replica)
        return replica

    def identity(self, r: Replica, timeout: float = 60) -> str:
        def named() -> bool:
            self._read_identity(r)
            if not r.identity and not r.proc.alive():
                raise AssertionError(f"ksched exited ({r.proc.proc.returncode}):\n{r.proc.text()}")
            return bool(r.identity)

        if not r.identity:
            wait_until(named, timeout, f"replica {r.index}.{r.generation} names its identity")
        return r.identity

    @staticmethod
    def _read_identity(r: Replica) -> None:
        """The replica's Lease identity, from its ``-v 2`` log: ``"Leader election
        candidate" ... identity="<host>_<uuid>"`` (or, for a ksched from before the klog
        lines, ``attempting to acquire leader lease <lease> as <identity>.``)."""
        for ln in r.proc.text().splitlines():
            if '"Leader election candidate"' in ln and ' identity="' in ln:
                r.identity = ln.split(' identity="', 1)[1].split('"', 1)[0]
                return
            if "attempting to acquire leader lease" in ln and " as " in ln:
                r.identity = ln.split(" as ", 1)[1].rstrip(".").strip()
                return

    def wait_ready(self, timeout: float = 90) -> None:
        for r in self.replicas:
            self.identity(r, timeout)

    def leader(self, api: Api) -> Replica | None:
        holder = api.lease_holder(self.namespace, self.lease_name)
        for r in self.replicas:
            if not r.identity:
                self._read_identity(r)  # a replica started a moment ago
            if holder and r.identity == holder:
                return r
        return None

    def wait_leader(self, api: Api, timeout: float = 60, not_: Replica | None = None) -> Replica:
        found: list[Replica] = []

        def cond() -> bool:
            r = self.leader(api)
            if r is not None and r is not not_ and r.proc.alive():
                found.append(r)
                return True
            return False

        wait_until(cond, timeout, "a live replica leads", poll=0.02)
        return found[-1]

    def kill(self, r: Replica) -> None:
        r.expected_exit = True
        r.proc.kill()

    def pause(self, r: Replica) -> None:
        r.proc.signal(signal.SIGSTOP)

    def resume(self, r: Replica) -> None:
        r.proc.signal(signal.SIGCONT)

    def replace(self, r: Replica) -> Replica:
        """Start a new process in ``r``'s place (``r`` has exited or is killed now)."""
        if r.proc.alive():
            self.kill(r)
        fresh = self._start(r.index, r.generation + 1)
        self.replicas[r.index] = fresh
        return fresh

    def restart_exited(self, allowed: Callable[[Replica, int, str], bool]) -> list[Replica]:
        """Restart every replica that exited; an exit ``allowed`` does not accept is
        recorded as unexpected. Returns the replicas that had exited."""
        exited = []
        for r in list(self.replicas):
            code = r.proc.proc.poll()
            if code is None:
                continue
            exited.append(r)
            if not r.expected_exit and not allowed(r, code, r.proc.text()):
                self.unexpected.append(f"replica {r.index}.{r.generation} exited {code}")
            r.expected_exit = True
            self.replace(r)
        return exited

    def problems(self) -> list[str]:
        """Tracebacks and handler failures in any replica's log, and unexpected exits."""
        out = list(self.unexpected)
        for r in self.history:
            text = r.proc.text()
            for needle in ("Traceback", "handler failed", "Task exception was never retrieved"):
                if needle in text:
                    i = text.index(needle)
                    out.append(
                        f"replica {r.index}.{r.generation}: {text[max(0, i - 300) : i + 1500]}"
                    )
                    break
        return out

    def leader_queue(self, api: Api) -> dict[str, float]:
        """The leader's ``scheduler_pending_pods`` by queue (empty when none leads)."""
        r = self.leader(api)
        if r is None or not r.proc.alive():
            return {}
        _, text = r.proc.get("/metrics", cert=(self.cp.client_cert_file, self.cp.client_key_file))
        out: dict[str, float] = {}
        for ln in text.splitlines():
            if ln.startswith("scheduler_pending_pods{"):
                queue = ln.split('queue="', 1)[1].split('"', 1)[0]
                out[queue] = float(ln.rsplit(" ", 1)[1])
        return out

    def diagnose(self, api: Api) -> str:
        """What the replicas say about themselves, for a scenario that timed out: who
        leads, and each live replica's queue, cache and attempt counters."""
        lines = [f"lease holder: {api.lease_holder(self.namespace, self.lease_name) or '-'}"]
        wanted = ("pending_pods", "attempts_total", "cache_size", "fenced", "renewal_age")
        for r in self.replicas:
            head = f"replica {r.index}.{r.generation} {r.identity} alive={r.proc.alive()}"
            if not r.proc.alive():
                lines.append(head)
                continue
            try:
                _, text = r.proc.get(
                    "/metrics", cert=(self.cp.client_cert_file, self.cp.client_key_file)
                )
            except OSError as exc:
                lines.append(f"{head}: /metrics: {exc}")
                continue
            found = [
                ln
                for ln in text.splitlines()
                if not ln.startswith("#") and any(w in ln for w in wanted)
            ]
            lines.append(f"{head}: " + "; ".join(found))
        return "\n".join(lines)

    def stop(self) -> None:
        for r in self.replicas:
            r.expected_exit = True
            if r.proc.alive():
                self.resume(r)
        for r in self.history:
            r.proc.stop()


# ---- the history ------------------------------------------------------------------


@dataclass
class PodRecord:
    uid: str
    name: str
    priority: int
    requests: dict[str, Fraction]
    nodes: list[str] = field(default_factory=list)
    bound_at: float | None = None
    deleted_at: float | None = None
    #: The sequence number of the change that bound / deleted it (commit order).
    bound_seq: int | None = None
    deleted_seq: int | None = None


class History:
    """Every change to the namespace's pods, in commit order (see the module docstring)."""

    def __init__(self, cp: ControlPlane, namespace: str, nodes: Iterable[Obj]) -> None:
        self.cp = cp
        self.namespace = namespace
        self.allocatable = {
            n["metadata"]["name"]: {r: quantity(n["status"]["allocatable"][r]) for r in RESOURCES}
            for n in nodes
        }
        self.pods: dict[str, PodRecord] = {}
        self.live: dict[str, Obj] = {}  # uid → current object
        self.usage: dict[str, dict[str, Fraction]] = {
            n: {r: Fraction(0) for r in RESOURCES} for n in self.allocatable
        }
        #: (node, resource, used, allocatable, seq) every time a node was over.
        self.overcommits: list[tuple[str, str, Fraction, Fraction, int]] = []
        self.max_pods: dict[str, int] = {}
        self.relists = 0
        self.reconnects = 0
        self.errors: list[str] = []
        self.seq = 0
        self._lock = threading.Lock()
        self._closed = False
        self._conn: http.client.HTTPSConnection | None = None
        self.rv = self._list()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    # -- state changes --

    def _on(self, obj: Obj, deleted: bool) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        spec = obj.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        now = time.monotonic()
        self.seq += 1
        rec = self.pods.get(uid)
        if rec is None:
            rec = self.pods[uid] = PodRecord(
                uid, str(meta.get("name")), int(spec.get("priority") or 0), pod_requests(obj)
            )
        before = self.live.get(uid)
        before_node = str(((before or {}).get("spec") or {}).get("nodeName") or "")
        if before_node:
            self._account(before_node, rec, -1)
        if deleted:
            self.live.pop(uid, None)
            if rec.deleted_at is None:
                rec.deleted_at, rec.deleted_seq = now, self.seq
        else:
            self.live[uid] = obj
        if node and (not rec.nodes or rec.nodes[-1] != node):
            rec.nodes.append(node)
            if rec.bound_at is None:
                rec.bound_at, rec.bound_seq = now, self.seq
        if node and not deleted:
            self._account(node, rec, +1)

    def _account(self, node: str, rec: PodRecord, sign: int) -> None:
        usage = self.usage.setdefault(node, {r: Fraction(0) for r in RESOURCES})
        for r in RESOURCES:
            usage[r] += sign * rec.requests[r]
        if sign > 0:
            self.max_pods[node] = max(self.max_pods.get(node, 0), int(usage["pods"]))
            alloc = self.allocatable.get(node)
            if alloc is not None:
                for r in RESOURCES:
                    if usage[r] > alloc[r]:
                        self.overcommits.append((node, r, usage[r], alloc[r], self.seq))

    # -- list and watch --

    def _list(self) -> str:
        status, doc = Api(self.cp).request("GET", f"/api/v1/namespaces/{self.namespace}/pods")
        if status != 200:
            raise RuntimeError(f"list answered {status}")
        with self._lock:
            seen = set()
            for obj in doc["items"]:
                uid = obj["metadata"]["uid"]
                seen.add(uid)
                old = self.live.get(uid)
                if (
                    old is None
                    or old["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]
                ):
                    self._on(obj, deleted=False)
            for uid in [u for u in self.live if u not in seen]:
                self._on(self.live[uid], deleted=True)
        return str(doc["metadata"]["resourceVersion"])

    def _run(self) -> None:
        while not self._closed:
            try:
                self._stream()
            except _GoneError:
                self.relists += 1
                try:
                    self.rv = self._list()
                except Exception as exc:
                    self.errors.append(f"relist: {exc!r}")
                    time.sleep(0.2)
            except Exception as exc:
                if self._closed:
                    return
                self.reconnects += 1
                time.sleep(0.2)
                if not isinstance(exc, (OSError, http.client.HTTPException, RuntimeError)):
                    self.errors.append(repr(exc))

    def _stream(self) -> None:
        self._conn = conn = http.client.HTTPSConnection(
            "127.0.0.1", self.cp.port, context=self.cp.ssl_context(), timeout=60
        )
        q = urllib.parse.urlencode(
            {
                "watch": "1",
                "resourceVersion": self.rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
        )
        conn.request(
            "GET",
            f"/api/v1/namespaces/{self.namespace}/pods?{q}",
            headers={"Accept": "application/json"},
        )
        resp = conn.getresponse()
        if resp.status == 410:
            raise _GoneError()
        if resp.status != 200:
            raise RuntimeError(f"watch answered {resp.status}")
        for line in resp:
            if not line.strip():
                continue
            ev = json.loads(line)
            obj = ev["object"]
            if ev["type"] == "ERROR":
                if obj.get("code") == 410:
                    raise _GoneError()
                raise RuntimeError(f"watch error: {obj}")
            with self._lock:
                self.rv = obj["metadata"]["resourceVersion"]
                if ev["type"] != "BOOKMARK":
                    self._on(obj, deleted=ev["type"] == "DELETED")

    # -- queries --

    def bound(self, names: Iterable[str] | None = None) -> int:
        with self._lock:
            wanted = None if names is None else set(names)
            return sum(
                1 for r in self.pods.values() if r.nodes and (wanted is None or r.name in wanted)
            )

    def pending(self) -> list[str]:
        with self._lock:
            return sorted(
                str(o["metadata"]["name"])
                for o in self.live.values()
                if not o["spec"].get("nodeName")
            )

    def first_binding_after(self, t: float) -> float | None:
        with self._lock:
            times = [
                r.bound_at for r in self.pods.values() if r.bound_at is not None and r.bound_at > t
            ]
        return min(times) if times else None

    def close(self) -> None:
        self._closed = True
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)


class _GoneError(Exception):
    pass


# ---- invariants -------------------------------------------------------------------


class LeaseLog:
    """The holders of one Lease over time, polled every 25 ms: ``(holder, acquired)``
    with the holder's ``acquireTime`` as epoch seconds, in order."""

    def __init__(self, cp: ControlPlane, namespace: str, name: str) -> None:
        self._api = Api(cp)
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self.tenures: list[tuple[str, float]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            with contextlib.suppress(Exception):
                status, doc = self._api.request("GET", self._path)
                spec = (doc or {}).get("spec") or {}
                holder = str(spec.get("holderIdentity") or "")
                acquired = spec.get("acquireTime")
                if status == 200 and holder and acquired:
                    tenure = (holder, epoch(acquired))
                    if not self.tenures or self.tenures[-1] != tenure:
                        self.tenures.append(tenure)
            time.sleep(0.025)

    def holder_at(self, t: float) -> str:
        holder = ""
        for who, since in self.tenures:
            if since <= t:
                holder = who
        return holder

    def close(self) -> None:
        self._closed = True
        self._thread.join(5)


def epoch(micro_time: str) -> float:
    """``metav1.MicroTime`` / RFC 3339 text as seconds since the epoch."""
    import datetime

    return datetime.datetime.fromisoformat(micro_time.replace("Z", "+00:00")).timestamp()


@dataclass
class Preemption:
    victim: str
    preemptor_uid: str
    node: str
    reporter: str
    at: float


#: ``-v 2`` line of the replica whose DELETE removed a victim (upstream's wording).
_PREEMPTED_LINE = '"Preemptor Pod preempted victim Pod"'


def victim_deleters(replicas: Replicas, namespace: str) -> dict[str, str]:
    """Victim name → the identity of the replica that deleted it, from the replicas'
    logs (``"Preemptor Pod preempted victim Pod" ... victim="<ns>/<name>"``). Events
    cannot tell replicas apart: their ``reportingInstance`` is upstream's
    ``<schedulerName>-<hostname>``, the same for every replica on this machine."""
    out: dict[str, str] = {}
    prefix = f' victim="{namespace}/'
    for r in replicas.history:
        if not r.identity:
            replicas._read_identity(r)
        for ln in r.proc.text().splitlines():
            if _PREEMPTED_LINE in ln and prefix in ln:
                out[ln.split(prefix, 1)[1].split('"', 1)[0]] = r.identity
    return out


def preemptions(
    api: Api,
    namespace: str,
    victims: Iterable[str] | None = None,
    replicas: Replicas | None = None,
) -> dict[str, Preemption]:
    """The ``Preempted`` events of the namespace by victim name (``Preempted by pod
    <uid> on node <node>``), of the ``victims`` named (default: all). The reporter is
    the replica whose log says it deleted the victim (:func:`victim_deleters`, with
    ``replicas``), else the event's ``reportingInstance``."""
    out: dict[str, Preemption] = {}
    wanted = None if victims is None else set(victims)
    deleters = victim_deleters(replicas, namespace) if replicas is not None else {}
    doc = api.must("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    for ev in doc["items"]:
        if ev.get("reason") != "Preempted":
            continue
        words = str(ev.get("note") or "").split()
        victim = ev["regarding"]["name"]
        if wanted is not None and victim not in wanted:
            continue
        out[victim] = Preemption(
            victim,
            words[3] if len(words) > 3 else "",
            words[6] if len(words) > 6 else "",
            deleters.get(victim) or str(ev.get("reportingInstance") or ""),
            epoch(ev["eventTime"]),
        )
    return out


def violations(
    history: History,
    created: Iterable[str],
    *,
    leases: LeaseLog | None = None,
    preempted: dict[str, Preemption] | None = None,
) -> list[str]:
    """Every broken invariant, as readable lines (empty: all hold). Deletions are
    checked against ``preempted`` (:func:`preemptions`) and ``leases`` when given."""
    out: list[str] = []
    with history._lock:
        by_name: dict[str, list[PodRecord]] = {}
        for rec in history.pods.values():
            by_name.setdefault(rec.name, []).append(rec)
        for name in created:
            recs = by_name.get(name, [])
            if len(recs) != 1:
                out.append(f"pod {name}: {len(recs)} pods of that name seen")
                continue
            rec = recs[0]
            if not rec.nodes:
                out.append(f"pod {name}: never bound")
            elif len(rec.nodes) > 1:
                out.append(f"pod {name}: bound more than once: {rec.nodes}")
        for node, resource, used, alloc, seq in history.overcommits[:20]:
            out.append(
                f"node {node}: {resource} {float(used):g} > allocatable {float(alloc):g} "
                f"(change #{seq})"
            )
        if len(history.overcommits) > 20:
            out.append(f"... {len(history.overcommits)} over-commits in all")
        out.extend(_wrongful_deletions(history, preempted or {}, leases))
        out.extend(history.errors)
    return out


def _wrongful_deletions(
    history: History, preempted: dict[str, Preemption], leases: LeaseLog | None
) -> list[str]:
    """A bound pod may only be deleted by a preemption that the replica holding the
    Lease at the time decided, for a more important pod that was then bound."""
    out = []
    by_uid = history.pods
    for rec in history.pods.values():
        if rec.deleted_at is None or not rec.nodes:
            continue
        p = preempted.get(rec.name)
        where = f"pod {rec.name} (priority {rec.priority}) deleted from {rec.nodes[-1]}"
        if p is None:
            out.append(f"{where}: no preemption claims it")
            continue
        holder = leases.holder_at(p.at) if leases is not None else p.reporter
        if holder != p.reporter:
            out.append(f"{where} by {p.reporter}, while {holder or 'nobody'} held the Lease")
            continue
        preemptor = by_uid.get(p.preemptor_uid)
        if preemptor is None or not preemptor.nodes or preemptor.priority <= rec.priority:
            out.append(f"{where} for {p.preemptor_uid}, which was not bound or not more important")
    return out


def jitter(a: float, b: float, rng: random.Random) -> float:
    return a + (b - a) * rng.random()
