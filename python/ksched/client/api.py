"""The real :class:`ksched.cluster.ClusterAPI`: a kube-apiserver over HTTPS.

:class:`KubeClusterAPI` behaves like the embedded cluster (:mod:`ksched.sim.cluster`) so
the scheduler runs unchanged on either:

* ``list`` pages through the collection (``limit``/``continue``, as client-go's pager;
  an expired continue token falls back to one full list) and returns the listing's
  resource version;
* ``watch`` streams events after a version (:mod:`ksched.client.watching`), raising
  :class:`~ksched.cluster.Gone` on 410;
* ``bind`` POSTs a ``Binding`` to ``pods/{name}/binding`` with the pod's UID;
* ``create_event`` POSTs an ``events.k8s.io/v1`` Event through a rate limiter of its
  own, as kube-scheduler gives its event recorder a client of its own;
* ``patch_pod_status`` sends a strategic-merge patch to ``pods/{name}/status`` and
  retries as upstream's ``util.PatchPodStatus`` (``retry.DefaultBackoff`` on internal
  errors, unavailability, refused connections; also on conflicts);
* ``delete_pod`` deletes with a UID precondition;
* ``set_write_guard`` installs a check run right before every write of the
  scheduler's own connection is sent (:mod:`ksched.client.rest`; ``ksched run`` puts
  the lease fence there); leases, reviews, lists and watches are never guarded;
* ``get_lease``/``create_lease``/``update_lease`` read and write
  ``coordination.k8s.io/v1`` Leases (and ``v1beta1`` LeaseCandidates) for leader
  election; an update is a PUT carrying the object's resourceVersion, so a stale one
  fails with :class:`~ksched.cluster.Conflict`;
* ``create_token_review``/``create_subject_access_review`` (the
  :class:`~ksched.cluster.ReviewAPI`) POST reviews for the HTTPS endpoints' delegated
  authentication and authorization.

The pod collection is listed and watched with kube-scheduler's field selector
``status.phase!=Succeeded,status.phase!=Failed``: a pod that finishes leaves the watch
as DELETED, which frees its resources exactly as the scheduler's handling of a terminal
pod would.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

import orjson

from ksched.client.kubeconfig import ClientConfig, load_client_config
from ksched.client.ratelimit import TokenBucket
from ksched.client.rest import MAX_CONNECTIONS, STRATEGIC_MERGE_PATCH, RestClient, WriteGuard
from ksched.client.watching import watch
from ksched.cluster import (
    KIND_PATHS,
    APIError,
    Gone,
    Kind,
    LeaseKind,
    ListResult,
    PatchType,
    WatchEvent,
    resource_of,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: kube-scheduler's pod informer excludes finished pods.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
#: client-go's pager page size.
PAGE_SIZE = 500

#: The cluster-wide collection of each kind (list and watch across namespaces).
_PATHS: dict[str, str] = {
    kind: f"{prefix}/{resource_of(kind)}" for kind, (prefix, _) in KIND_PATHS.items()
}

_PATCH_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": STRATEGIC_MERGE_PATCH,
    "json": "application/json-patch+json",
}


def object_path(kind: Kind, namespace: str, name: str, subresource: str = "") -> str:
    """The URL path of one object (and its subresource)."""
    prefix, namespaced = KIND_PATHS[kind]
    path = prefix
    if namespaced:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{resource_of(kind)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path


_LEASE_PATHS: dict[str, str] = {
    "leases": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    "leasecandidates": "/apis/coordination.k8s.io/v1beta1/namespaces/{ns}/leasecandidates",
}

# retry.DefaultBackoff: 4 steps from 10ms, factor 5, jitter 0.1.
_PATCH_BACKOFF = (0.01, 0.05, 0.25, 1.25)


def _pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def _status_retriable(exc: APIError) -> bool:
    """upstream ``util.Retriable`` (internal error, unavailable, refused) plus conflicts."""
    return exc.status in (0, 409, 500, 503)


async def retry_on(
    fn: Callable[[], Awaitable[T]],
    retriable: Callable[[APIError], bool],
    backoff: tuple[float, ...] = _PATCH_BACKOFF,
) -> T:
    """``retry.OnError``: call ``fn`` until it succeeds, fails for good, or steps run out."""
    for delay in backoff:
        try:
            return await fn()
        except APIError as exc:
            if not retriable(exc):
                raise
            log.debug("retrying after %s", exc)
        await asyncio.sleep(delay * (1.0 + 0.1 * random.random()))
    return await fn()


class KubeClusterAPI:
    """A ClusterAPI over one API server. Use in one event loop; :meth:`close` at the end."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        page_size: int = PAGE_SIZE,
        pod_field_selector: str = POD_FIELD_SELECTOR,
        min_watch_timeout: float | None = None,
        request_timeout: float | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.config = config
        kwargs: dict[str, Any] = {}
        if request_timeout is not None:
            kwargs["request_timeout"] = request_timeout
        #: Bindings, events, status patches, deletions, lists; watches have their own
        #: connections (:mod:`ksched.client.rest`).
        self.rest = RestClient(config, max_connections=max_connections, **kwargs)
        #: kube-scheduler's event recorder uses a client (and a rate limit) of its own.
        self.event_limiter = TokenBucket(config.qps, config.burst)
        #: So does leader election (upstream's "leader-election" client): lease renewals
        #: never queue behind a backlog of bindings, in the rate limiter or for a
        #: connection. Reviews of the endpoints' requests use it too.
        self.lease_rest = RestClient(
            config,
            limiter=TokenBucket(config.qps, config.burst),
            max_connections=8,
            **kwargs,
        )
        self.page_size = page_size
        self.pod_field_selector = pod_field_selector
        self.min_watch_timeout = min_watch_timeout
        self.binds = 0

    def set_write_guard(self, guard: WriteGuard | None) -> None:
        """Check every binding, event, status patch, deletion and object write (not the
        leader election client's) with ``guard(method, path)`` just before it is sent;
        a guard that raises stops the write, and its exception reaches the caller."""
        self.rest.write_guard = guard

    async def close(self) -> None:
        await self.rest.close()
        await self.lease_rest.close()

    async def __aenter__(self) -> KubeClusterAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _selector(self, kind: Kind) -> dict[str, str]:
        if kind == "pods" and self.pod_field_selector:
            return {"fieldSelector": self.pod_field_selector}
        return {}

    # ---- ClusterAPI: reads ---------------------------------------------------------

    async def list(self, *, kind: Kind) -> ListResult:
        path = _PATHS[kind]
        base = self._selector(kind)
        items: list[dict[str, Any]] = []
        resource_version = ""
        cont = ""
        while True:
            params = dict(base)
            if self.page_size > 0:
                params["limit"] = str(self.page_size)
            if cont:
                params["continue"] = cont
            try:
                page = await self.rest.request_json("GET", path, params=params)
            except Gone:
                if not cont:
                    raise
                # The continue token expired mid-listing: one full list instead.
                log.info("%s list: continue token expired; listing without pages", kind)
                page = await self.rest.request_json("GET", path, params=base)
                items = []
                cont = ""
            if not isinstance(page, dict):
                raise APIError(0, "DecodeError", f"GET {path}: the answer is not a List")
            meta = page.get("metadata") or {}
            if not resource_version or not cont:
                resource_version = str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or ())
            cont = str(meta.get("continue") or "")
            if not cont:
                return ListResult(items=items, resource_version=resource_version)

    def watch(self, *, kind: Kind, resource_version: str) -> AsyncIterator[WatchEvent]:
        kwargs: dict[str, Any] = {}
        if self.min_watch_timeout is not None:
            kwargs["timeout_seconds"] = max(
                1, int(self.min_watch_timeout * (1.0 + random.random()))
            )
        return watch(
            self.rest,
            _PATHS[kind],
            resource_version=resource_version,
            params=self._selector(kind),
            **kwargs,
        )

    # ---- ClusterAPI: writes --------------------------------------------------------

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        binding: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        if uid:
            binding["metadata"]["uid"] = uid
        self.binds += 1
        await self.rest.request("POST", _pod_path(namespace, name, "binding"), json_body=binding)

    async def create_event(self, *, event: dict[str, Any]) -> None:
        namespace = (event.get("metadata") or {}).get("namespace") or "default"
        await self.rest.request(
            "POST",
            f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events",
            json_body=event,
            limiter=self.event_limiter,
        )

    async def patch_pod_status(self, *, namespace: str, name: str, patch: dict[str, Any]) -> None:
        body = orjson.dumps(patch)
        path = _pod_path(namespace, name, "status")

        async def send() -> bytes:
            return await self.rest.request(
                "PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH
            )

        await retry_on(send, _status_retriable)

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            options["preconditions"] = {"uid": uid}
        await self.rest.request("DELETE", _pod_path(namespace, name), json_body=options)

    # ---- ClusterAPI: any kind ------------------------------------------------------

    async def _object_json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        doc = await self.rest.request_json(method, path, **kwargs)
        if not isinstance(doc, dict):
            raise APIError(0, "DecodeError", f"{method} {path}: the answer is not an object")
        return doc

    async def get_object(self, *, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        return await self._object_json("GET", object_path(kind, namespace, name))

    async def create_object(self, *, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        prefix, namespaced = KIND_PATHS[kind]
        path = prefix
        if namespaced:
            path += f"/namespaces/{quote(str(meta.get('namespace') or ''), safe='')}"
        path += f"/{resource_of(kind)}"
        return await self._object_json("POST", path, body=obj)

    async def delete_object(self, *, kind: Kind, namespace: str, name: str) -> None:
        await self.rest.request("DELETE", object_path(kind, namespace, name))

    async def update_object(
        self, *, kind: Kind, obj: dict[str, Any], subresource: str = ""
    ) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        path = object_path(
            kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""), subresource
        )
        return await self._object_json("PUT", path, body=obj)

    async def patch_object(
        self,
        *,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> dict[str, Any]:
        path = object_path(kind, namespace, name, subresource)
        raw = await self.rest.request(
            "PATCH", path, body=orjson.dumps(patch), content_type=_PATCH_TYPES[patch_type]
        )
        doc = orjson.loads(raw) if raw else {}
        if not isinstance(doc, dict):
            raise APIError(0, "DecodeError", f"PATCH {path}: the answer is not an object")
        return doc

    # ---- ClusterAPI: leader election -----------------------------------------------

    @staticmethod
    def _lease_path(kind: LeaseKind, namespace: str, name: str = "") -> str:
        path = _LEASE_PATHS[kind].format(ns=quote(namespace, safe=""))
        return f"{path}/{quote(name, safe='')}" if name else path

    async def _lease_json(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        doc = await self.lease_rest.request_json(method, path, body=body)
        if not isinstance(doc, dict):
            raise APIError(0, "DecodeError", f"{method} {path}: the answer is not an object")
        return doc

    async def get_lease(
        self, *, namespace: str, name: str, kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        return await self._lease_json("GET", self._lease_path(kind, namespace, name))

    async def create_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        meta = lease.get("metadata") or {}
        return await self._lease_json(
            "POST", self._lease_path(kind, str(meta.get("namespace") or "")), lease
        )

    async def update_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        meta = lease.get("metadata") or {}
        path = self._lease_path(kind, str(meta.get("namespace") or ""), str(meta.get("name")))
        return await self._lease_json("PUT", path, lease)

    # ---- ReviewAPI -----------------------------------------------------------------

    async def _review(self, path: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
        group = path.split("/")[2]
        body = {"apiVersion": f"{group}/v1", "kind": kind, "spec": spec}
        doc = await self._lease_json("POST", path, body)
        status = doc.get("status")
        return status if isinstance(status, dict) else {}

    async def create_token_review(self, *, spec: dict[str, Any]) -> dict[str, Any]:
        return await self._review(
            "/apis/authentication.k8s.io/v1/tokenreviews", "TokenReview", spec
        )

    async def create_subject_access_review(self, *, spec: dict[str, Any]) -> dict[str, Any]:
        return await self._review(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews", "SubjectAccessReview", spec
        )


def connect(
    *,
    kubeconfig: str = "",
    master: str = "",
    context: str | None = None,
    qps: float = 50.0,
    burst: int = 100,
    **kwargs: Any,
) -> KubeClusterAPI:
    """A :class:`KubeClusterAPI` configured as kube-scheduler's ``--kubeconfig``/``--master``."""
    config = load_client_config(
        kubeconfig=kubeconfig, master=master, context=context, qps=qps, burst=burst
    )
    return KubeClusterAPI(config, **kwargs)
