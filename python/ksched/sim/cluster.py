"""An in-memory Kubernetes API for pods, nodes, events and every kind ksched watches.

Design: objects are stored as the API's JSON dicts and never mutated once handed out
(every change builds a new dict with a new ``metadata.resourceVersion``), so a watcher
may keep what it received. One monotonically increasing resource version covers all
kinds, as etcd's revision does. Every change is appended to a bounded history; a watch
from version ``rv`` first replays the history after ``rv`` and then follows live
changes, and a version older than the history raises :class:`Gone` (the client must
relist), exactly the contract informers rely on with a real API server.

Leases (and LeaseCandidates) live beside the watched kinds with the same resource
version counter, and an update with a stale ``resourceVersion`` is a :class:`Conflict`,
as on a real API server, so leader election runs here unchanged. Token and access
reviews answer from :attr:`InMemoryCluster.tokens` and :attr:`InMemoryCluster.authorize`.

Any kind can be read, created (with ``generateName``), deleted, replaced and patched
(:meth:`InMemoryCluster.get_object`, :meth:`~InMemoryCluster.create_object`,
:meth:`~InMemoryCluster.delete_object`, :meth:`~InMemoryCluster.update_object`,
:meth:`~InMemoryCluster.patch_object`) with the
API's rules: a stale ``resourceVersion`` is a :class:`Conflict`, a replace of a kind with
a status subresource keeps the stored status (and ``subresource="status"`` replaces only
the status). JSON merge patches and JSON patches are applied; strategic merge patches are
applied to the kinds whose Go patch tags :mod:`ksched.sim.strategic` carries (the DRA
kinds) and refused (415) for the others, since their list semantics live in Go struct
tags. A patch whose ``metadata.uid`` is not the object's fails (422), as the API
server's immutable-UID validation makes it.

``history`` bounds the changes kept for watches to replay and ``max_events`` the Events
kept (:attr:`InMemoryCluster.events`; every one is counted in ``event_counts``): a long
simulation keeps a bounded window of both.

Bindings can be slowed down (``bind_delay``), held (``bind_gate``) or made to fail
(``fail_bind``) so tests can exercise those paths.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import random
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, get_args

from ksched.cluster import (
    KIND_NAMES,
    KIND_PATHS,
    APIError,
    Conflict,
    Gone,
    Kind,
    LeaseKind,
    ListResult,
    NotFound,
    PatchType,
    WatchEvent,
)
from ksched.sim.strategic import SCHEMAS, StrategicMergeError, strategic_merge_patch

Obj = dict[str, Any]

#: Kinds whose ``status`` is a subresource: a replace of the object keeps it.
_STATUS_SUBRESOURCE: frozenset[str] = frozenset(
    {
        "pods",
        "nodes",
        "namespaces",
        "services",
        "replicationcontrollers",
        "replicasets",
        "statefulsets",
        "poddisruptionbudgets",
        "persistentvolumes",
        "persistentvolumeclaims",
        "volumeattachments",
        "resourceclaims",
        "podgroups",
        "podgroups.scheduling.x-k8s.io",
        "elasticquotas.scheduling.x-k8s.io",
    }
)


def _group_kind(kind: Kind) -> str:
    """``ResourceClaim.resource.k8s.io`` (``Pod`` for the core group), as the API
    server's errors name a kind."""
    name = KIND_NAMES.get(kind, kind)
    path = KIND_PATHS.get(kind, ("/api/v1", True))[0]
    parts = path.split("/")
    return f"{name}.{parts[2]}" if parts[1] == "apis" else name


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes, objects merge, the rest replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test), on a deep copy of ``doc``."""
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise ValueError("a JSON patch is a list of operations")
    for op in ops:
        parts = _pointer(str(op.get("path", "")))
        if not parts:
            raise ValueError("a JSON patch may not replace the whole object")
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        kind = op.get("op")
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise ValueError(f"test failed at {op.get('path')}")
        elif kind == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op.get("value"))
                elif kind == "add":
                    parent.insert(int(last), op.get("value"))
                else:
                    parent[int(last)] = op.get("value")
            else:
                if kind == "replace" and last not in parent:
                    raise KeyError(last)
                parent[last] = op.get("value")
        else:
            raise ValueError(f"unsupported JSON patch operation {kind!r}")
    return doc


_HISTORY = 200_000


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


class _Watcher:
    """One open watch: the events not yet taken (None ends the stream) and the future
    its stream waits on while there are none (cheaper than an ``asyncio.Queue``: the
    embedded cluster emits two events per pod scheduled)."""

    __slots__ = ("events", "kind", "waiter")

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.events: deque[WatchEvent | None] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, ev: WatchEvent | None) -> None:
        self.events.append(ev)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)


class InMemoryCluster:
    """A ClusterAPI backed by dicts. Not thread-safe: use it from one event loop."""

    def __init__(
        self,
        *,
        bind_delay: float = 0.0,
        bind_gate: asyncio.Event | None = None,
        fail_bind: Callable[[str, str, str], Exception | None] | None = None,
        max_events: int = 100_000,
        history: int = _HISTORY,
    ) -> None:
        self._rv = 0
        self._objects: dict[Kind, dict[str, Obj]] = {k: {} for k in get_args(Kind)}
        # The history as parallel deques (version, kind, event type, object): no
        # container per change for the garbage collector to walk but the object itself
        # (a watch replaying it gets a WatchEvent of its own).
        self._history_rvs: deque[int] = deque(maxlen=history)
        self._history_kinds: deque[Kind] = deque(maxlen=history)
        self._history_types: deque[str] = deque(maxlen=history)
        self._history: deque[Obj] = deque(maxlen=history)
        #: Open watches by kind.
        self._watchers: dict[Kind, list[_Watcher]] = {}
        self._uids = itertools.count(1)
        #: Generated names (``generateName``), seeded so that runs repeat.
        self._names_rng = random.Random(0)
        self.bind_delay = bind_delay
        #: When set, every binding waits until the event is set (a stalled API server).
        self.bind_gate = bind_gate
        self.fail_bind = fail_bind
        self.events: deque[Obj] = deque(maxlen=max_events)
        self.event_counts: dict[str, int] = {}
        self.bind_calls = 0
        self._leases: dict[tuple[LeaseKind, str], Obj] = {}
        #: Lease writes (creates and updates) accepted, for tests.
        self.lease_writes = 0
        #: TokenReview: bearer token → ``userInfo`` (unknown tokens are not authenticated).
        self.tokens: dict[str, Obj] = {}
        #: SubjectAccessReview: spec → allowed (None: everything is denied).
        self.authorize: Callable[[Obj], bool] | None = None

    # ---- helpers -----------------------------------------------------------------

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _emit(self, kind: Kind, type_: str, obj: Obj) -> None:
        self._history_rvs.append(self._rv)
        self._history_kinds.append(kind)
        self._history_types.append(type_)
        self._history.append(obj)
        watchers = self._watchers.get(kind)
        if watchers:
            ev = WatchEvent(type_, obj)  # type: ignore[arg-type]
            for w in watchers:
                w.put(ev)

    def _stamp(self, obj: Obj, *, new: bool) -> Obj:
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = self._next_rv()
        if new:
            meta.setdefault("uid", f"uid-{next(self._uids)}")
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        out = dict(obj)
        out["metadata"] = meta
        return out

    # ---- administration (what kubectl or controllers would do) ----------------------

    def create(self, kind: Kind, obj: Obj) -> Obj:
        key = _key(obj)
        if key in self._objects[kind]:
            raise Conflict(f'{kind} "{key}" already exists')
        stored = self._stamp(obj, new=True)
        self._objects[kind][key] = stored
        self._emit(kind, "ADDED", stored)
        return stored

    def update(self, kind: Kind, obj: Obj) -> Obj:
        key = _key(obj)
        if key not in self._objects[kind]:
            raise NotFound(f'{kind} "{key}" not found')
        stored = self._stamp(obj, new=False)
        self._objects[kind][key] = stored
        self._emit(kind, "MODIFIED", stored)
        return stored

    def delete(self, kind: Kind, key: str) -> Obj:
        obj = self._objects[kind].pop(key, None)
        if obj is None:
            raise NotFound(f'{kind} "{key}" not found')
        self._next_rv()
        self._emit(kind, "DELETED", obj)
        return obj

    def get(self, kind: Kind, key: str) -> Obj | None:
        return self._objects[kind].get(key)

    def objects(self, kind: Kind) -> list[Obj]:
        return list(self._objects[kind].values())

    def compact(self) -> None:
        """Forget the watch history, as etcd compaction does: old versions become Gone."""
        self._history_rvs.clear()
        self._history_kinds.clear()
        self._history_types.clear()
        self._history.clear()

    # ---- ClusterAPI --------------------------------------------------------------

    async def list(self, *, kind: Kind) -> ListResult:
        return ListResult(items=list(self._objects[kind].values()), resource_version=str(self._rv))

    async def watch(self, *, kind: Kind, resource_version: str) -> AsyncIterator[WatchEvent]:
        since = int(resource_version or 0)
        rvs = self._history_rvs
        if since < self._rv and (not rvs or rvs[0] > since + 1):
            raise Gone(f"too old resource version: {since} ({self._rv})")
        watcher = _Watcher(kind)
        # Replay and registration happen without an await in between, so no event is
        # lost or seen twice.
        history = zip(rvs, self._history_kinds, self._history_types, self._history, strict=True)
        for rv, k, type_, past in history:
            if rv > since and k == kind:
                watcher.events.append(WatchEvent(type_, past))  # type: ignore[arg-type]
        watchers = self._watchers.setdefault(kind, [])
        watchers.append(watcher)
        events = watcher.events
        loop = asyncio.get_running_loop()
        try:
            while True:
                while events:
                    ev = events.popleft()
                    if ev is None:
                        return
                    yield ev
                watcher.waiter = loop.create_future()
                await watcher.waiter
        finally:
            watchers.remove(watcher)

    def undelivered(self) -> int:
        """Watch events emitted and not yet taken by their watchers (``ksched replay``
        waits for none before it moves on)."""
        return sum(len(w.events) for ws in self._watchers.values() for w in ws)

    def close_watches(self) -> None:
        """End every open watch stream, as an API server restart would."""
        for ws in self._watchers.values():
            for w in ws:
                w.put(None)

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.bind_calls += 1
        if self.bind_delay:
            await asyncio.sleep(self.bind_delay)
        if self.bind_gate is not None:
            await self.bind_gate.wait()
        if self.fail_bind is not None:
            err = self.fail_bind(namespace, name, node_name)
            if err is not None:
                raise err
        key = f"{namespace}/{name}"
        pods = self._objects["pods"]
        pod = pods.get(key)
        if pod is None:
            raise NotFound(f'pods "{name}" not found')
        if uid and pod["metadata"].get("uid") != uid:
            raise Conflict(f"Precondition failed: UID in precondition: {uid}")
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            raise Conflict(f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if node_name not in self._objects["nodes"]:
            # The API server accepts a binding to a node it does not know; so do we.
            pass
        status = dict(pod.get("status") or {})
        # The v1.36 API server clears the nomination when it binds the pod.
        status.pop("nominatedNodeName", None)
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True"})
        status["conditions"] = conditions
        # What ``update`` stores, built at once (the object is new).
        meta = dict(pod["metadata"])
        meta["resourceVersion"] = self._next_rv()
        new = {**pod, "metadata": meta, "spec": {**spec, "nodeName": node_name}, "status": status}
        pods[key] = new
        self._emit("pods", "MODIFIED", new)

    async def create_event(self, *, event: Obj) -> None:
        self.events.append(event)
        reason = str(event.get("reason", ""))
        self.event_counts[reason] = self.event_counts.get(reason, 0) + 1

    async def patch_pod_status(self, *, namespace: str, name: str, patch: Obj) -> None:
        key = f"{namespace}/{name}"
        pod = self._objects["pods"].get(key)
        if pod is None:
            raise NotFound(f'pods "{name}" not found')
        status = dict(pod.get("status") or {})
        pstatus = patch.get("status") or {}
        for field, value in pstatus.items():
            if field == "conditions":
                by_type = {c.get("type"): c for c in status.get("conditions") or []}
                for c in value:
                    by_type[c.get("type")] = c
                status["conditions"] = list(by_type.values())
            else:
                status[field] = value
        self.update("pods", {**pod, "status": status})

    # ---- any kind ----------------------------------------------------------------

    def _stored(self, kind: Kind, namespace: str, name: str) -> Obj:
        key = f"{namespace}/{name}" if namespace else name
        obj = self._objects[kind].get(key)
        if obj is None:
            raise NotFound(f'{kind} "{name}" not found')
        return obj

    async def get_object(self, *, kind: Kind, namespace: str, name: str) -> Obj:
        return self._stored(kind, namespace, name)

    async def create_object(self, *, kind: Kind, obj: Obj) -> Obj:
        meta = dict(obj.get("metadata") or {})
        if not meta.get("name"):
            prefix = str(meta.get("generateName") or "")
            if not prefix:
                raise APIError(422, "Invalid", "metadata.name: Required value")
            # The API server appends 5 random characters from this alphabet.
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            meta["name"] = prefix + "".join(self._names_rng.choice(alphabet) for _ in range(5))
        new = {**obj, "metadata": meta}
        if kind in _STATUS_SUBRESOURCE:
            new.pop("status", None)
        try:
            return self.create(kind, new)
        except Conflict as exc:
            exc.reason = "AlreadyExists"
            raise

    async def delete_object(self, *, kind: Kind, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}" if namespace else name
        self.delete(kind, key)

    async def update_object(self, *, kind: Kind, obj: Obj, subresource: str = "") -> Obj:
        meta = obj.get("metadata") or {}
        current = self._stored(kind, str(meta.get("namespace") or ""), str(meta.get("name")))
        want = meta.get("resourceVersion")
        if want and want != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{current["metadata"]["name"]}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )
        if subresource == "status":
            new = {**current, "status": obj.get("status")}
        elif subresource:
            raise NotFound(f'{kind} "{meta.get("name")}" has no subresource {subresource!r}')
        else:
            new = dict(obj)
            new["metadata"] = {**meta, "uid": current["metadata"].get("uid")}
            if kind in _STATUS_SUBRESOURCE:
                if "status" in current:
                    new["status"] = current["status"]
                else:
                    new.pop("status", None)
        return self.update(kind, new)

    async def patch_object(
        self,
        *,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> Obj:
        current = self._stored(kind, namespace, name)
        try:
            if patch_type == "merge":
                patched = merge_patch(current, patch)
            elif patch_type == "json":
                patched = json_patch(current, patch)
            elif kind in SCHEMAS:
                patched = strategic_merge_patch(current, patch, SCHEMAS[kind])
            else:
                raise APIError(
                    415,
                    "UnsupportedMediaType",
                    f"the embedded cluster applies no strategic merge patch to {kind}",
                )
        except StrategicMergeError as exc:
            raise APIError(400, "BadRequest", str(exc)) from exc
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise APIError(422, "Invalid", f"{KIND_NAMES.get(kind, kind)} {name}: {exc}") from exc
        uid = (patched.get("metadata") or {}).get("uid")
        if uid and uid != current["metadata"].get("uid"):
            # The API server's ValidateObjectMetaUpdate: a patch's metadata.uid must be
            # the object's (DRA's Unreserve relies on it as a precondition).
            raise APIError(
                422,
                "Invalid",
                f'{_group_kind(kind)} "{name}" is invalid: metadata.uid: Invalid value: '
                f'"{uid}": field is immutable',
            )
        if subresource == "status":
            patched = {**current, "status": patched.get("status")}
        elif kind in _STATUS_SUBRESOURCE and not subresource:
            patched = {**patched, "status": current.get("status")}
            if patched["status"] is None:
                del patched["status"]
        meta = dict(patched.get("metadata") or {})
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        meta["uid"] = current["metadata"].get("uid")
        return self.update(kind, {**patched, "metadata": meta})

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        key = f"{namespace}/{name}"
        pod = self._objects["pods"].get(key)
        if pod is None:
            raise NotFound(f'pods "{name}" not found')
        if uid and pod["metadata"].get("uid") != uid:
            raise Conflict(f"Precondition failed: UID in precondition: {uid}")
        self.delete("pods", key)

    # ---- leases ------------------------------------------------------------------

    async def get_lease(self, *, namespace: str, name: str, kind: LeaseKind = "leases") -> Obj:
        lease = self._leases.get((kind, f"{namespace}/{name}"))
        if lease is None:
            raise NotFound(f'{kind} "{name}" not found')
        return lease

    async def create_lease(self, *, lease: Obj, kind: LeaseKind = "leases") -> Obj:
        key = (kind, _key(lease))
        if key in self._leases:
            err = Conflict(f'{kind} "{lease["metadata"].get("name")}" already exists')
            err.reason = "AlreadyExists"
            raise err
        stored = self._stamp(lease, new=True)
        self._leases[key] = stored
        self.lease_writes += 1
        return stored

    async def update_lease(self, *, lease: Obj, kind: LeaseKind = "leases") -> Obj:
        key = (kind, _key(lease))
        current = self._leases.get(key)
        if current is None:
            raise NotFound(f'{kind} "{lease["metadata"].get("name")}" not found')
        want = (lease.get("metadata") or {}).get("resourceVersion")
        if want and want != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{current["metadata"]["name"]}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )
        meta = {**lease.get("metadata", {}), "uid": current["metadata"].get("uid")}
        stored = self._stamp({**lease, "metadata": meta}, new=False)
        self._leases[key] = stored
        self.lease_writes += 1
        return stored

    # ---- reviews -----------------------------------------------------------------

    async def create_token_review(self, *, spec: Obj) -> Obj:
        user = self.tokens.get(str(spec.get("token") or ""))
        if user is None:
            return {"authenticated": False, "error": "invalid bearer token"}
        return {"authenticated": True, "user": user}

    async def create_subject_access_review(self, *, spec: Obj) -> Obj:
        allowed = self.authorize is not None and self.authorize(spec)
        return {"allowed": allowed} if allowed else {"allowed": False, "reason": "no rule"}
