"""The ``ClusterAPI`` protocol: everything ksched asks of a Kubernetes API server.

Only two packages implement it: :mod:`ksched.client` talks to a real kube-apiserver, and
:mod:`ksched.sim` is the embedded in-memory cluster used by ``ksched simulate``, unit
tests and core benchmarks. The scheduler, the cache, the queue and the informers receive
an object of this protocol and never know which one they have, so the whole scheduler
runs unchanged on either.

Objects travel as the API's JSON, decoded into plain dicts (``orjson.loads``); parsing
them into :class:`ksched.api.pod.Pod` and :class:`ksched.api.node.Node` is the informer's
job. Resource versions are opaque strings, as in the API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Kind = Literal[
    "pods",
    "nodes",
    "namespaces",
    "services",
    "replicationcontrollers",
    "replicasets",
    "statefulsets",
    "poddisruptionbudgets",
    # Volume scheduling (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits).
    "persistentvolumes",
    "persistentvolumeclaims",
    "storageclasses",
    "csinodes",
    "csidrivers",
    "csistoragecapacities",
    "volumeattachments",
    # Dynamic resource allocation (DynamicResources), resource.k8s.io/v1.
    "resourceslices",
    "deviceclasses",
    "resourceclaims",
    # Workload-aware scheduling: scheduling.k8s.io/v1alpha2 PodGroups (GangScheduling),
    # and the scheduler-plugins CRDs (scheduling.x-k8s.io/v1alpha1), whose keys carry
    # their group: the in-tree PodGroup and the CRD one are different resources.
    "podgroups",
    "podgroups.scheduling.x-k8s.io",
    "elasticquotas.scheduling.x-k8s.io",
    # PriorityClasses: ``ksched explain -f`` resolves a new pod's priorityClassName.
    "priorityclasses",
]

#: Where each kind lives in the API: ``(group/version path prefix, namespaced)``.
#: ``/api/v1`` is the core group. The real client builds its URLs from this, the
#: embedded cluster its namespacing.
KIND_PATHS: dict[str, tuple[str, bool]] = {
    "pods": ("/api/v1", True),
    "nodes": ("/api/v1", False),
    "namespaces": ("/api/v1", False),
    "services": ("/api/v1", True),
    "replicationcontrollers": ("/api/v1", True),
    "replicasets": ("/apis/apps/v1", True),
    "statefulsets": ("/apis/apps/v1", True),
    "poddisruptionbudgets": ("/apis/policy/v1", True),
    "persistentvolumes": ("/api/v1", False),
    "persistentvolumeclaims": ("/api/v1", True),
    "storageclasses": ("/apis/storage.k8s.io/v1", False),
    "csinodes": ("/apis/storage.k8s.io/v1", False),
    "csidrivers": ("/apis/storage.k8s.io/v1", False),
    "csistoragecapacities": ("/apis/storage.k8s.io/v1", True),
    "volumeattachments": ("/apis/storage.k8s.io/v1", False),
    "resourceslices": ("/apis/resource.k8s.io/v1", False),
    "deviceclasses": ("/apis/resource.k8s.io/v1", False),
    "resourceclaims": ("/apis/resource.k8s.io/v1", True),
    "podgroups": ("/apis/scheduling.k8s.io/v1alpha2", True),
    "podgroups.scheduling.x-k8s.io": ("/apis/scheduling.x-k8s.io/v1alpha1", True),
    "elasticquotas.scheduling.x-k8s.io": ("/apis/scheduling.x-k8s.io/v1alpha1", True),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1", False),
}

#: The ``Kind`` of each kind's objects (``kind`` field), for messages and events.
KIND_NAMES: dict[str, str] = {
    "pods": "Pod",
    "nodes": "Node",
    "namespaces": "Namespace",
    "services": "Service",
    "replicationcontrollers": "ReplicationController",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
    "resourceclaims": "ResourceClaim",
    "podgroups": "PodGroup",
    "podgroups.scheduling.x-k8s.io": "PodGroup",
    "elasticquotas.scheduling.x-k8s.io": "ElasticQuota",
    "priorityclasses": "PriorityClass",
}

#: Cluster-event resource names that are not the kind's ``KIND_NAMES`` entry: plugins
#: name the events of custom resources by ``<plural>.<version>.<group>``, as
#: scheduler-plugins registers them (``fwk.EventResource``).
EVENT_RESOURCES: dict[str, str] = {
    "podgroups.scheduling.x-k8s.io": "podgroups.v1alpha1.scheduling.x-k8s.io",
    "elasticquotas.scheduling.x-k8s.io": "elasticquotas.v1alpha1.scheduling.x-k8s.io",
}


def resource_of(kind: str) -> str:
    """The kind's resource in URLs: its key up to the first dot (``podgroups`` for
    ``podgroups.scheduling.x-k8s.io``)."""
    return kind.partition(".")[0]


#: Patch content types for :meth:`ClusterAPI.patch_object`.
PatchType = Literal["merge", "strategic", "json"]
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
#: Coordination objects leader election reads and writes: ``coordination.k8s.io/v1``
#: Leases and (coordinated leader election) ``coordination.k8s.io/v1beta1``
#: LeaseCandidates.
LeaseKind = Literal["leases", "leasecandidates"]


@dataclass(slots=True, frozen=True)
class WatchEvent:
    """One watch event: the type and the object after (or, for DELETED, at) the change."""

    type: EventType
    object: dict[str, Any]


@dataclass(slots=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str


class APIError(Exception):
    """An API call failed; ``status`` is the HTTP status code (0 when none was received)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class NotFound(APIError):
    def __init__(self, message: str) -> None:
        super().__init__(404, "NotFound", message)


class Conflict(APIError):
    def __init__(self, message: str) -> None:
        super().__init__(409, "Conflict", message)


class Gone(APIError):
    """The requested resource version is too old (410): the watcher must relist."""

    def __init__(self, message: str) -> None:
        super().__init__(410, "Gone", message)


class Fenced(APIError):
    """A write refused before it was sent: this replica's Lease renewal is too old for
    it to write (:mod:`ksched.leaderelection.fencing`). Callers treat it like any failed
    write (the pod goes back to the queue, the victim is kept)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Fenced", message)


class ClusterAPI(Protocol):
    """What the scheduler needs from the API server. All calls are keyword-only."""

    async def list(self, *, kind: Kind) -> ListResult:
        """Every object of ``kind`` and the resource version of the listing."""
        ...

    def watch(self, *, kind: Kind, resource_version: str) -> AsyncIterator[WatchEvent]:
        """Changes to ``kind`` after ``resource_version``. Raises :class:`Gone` when that
        version has been compacted away."""
        ...

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        """POST a Binding of the pod to ``node_name`` (``pods/{name}/binding``)."""
        ...

    async def create_event(self, *, event: dict[str, Any]) -> None:
        """Record an ``events.k8s.io/v1`` Event."""
        ...

    async def patch_pod_status(self, *, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Strategic-merge patch of the pod's status (conditions, nominatedNodeName)."""
        ...

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        """Delete the pod (preemption), with a UID precondition."""
        ...

    # ---- any kind (plugins' PreBind: PV claimRef, PVC annotation, claims) ------------------

    async def get_object(self, *, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        """One object, read from the API (not a cache). Raises :class:`NotFound`."""
        ...

    async def create_object(self, *, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        """Create the object (POST; namespace from its metadata, name or
        ``generateName``); returns it as stored. Raises :class:`Conflict` (reason
        AlreadyExists) when the name is taken."""
        ...

    async def delete_object(self, *, kind: Kind, namespace: str, name: str) -> None:
        """Delete the object. Raises :class:`NotFound`."""
        ...

    async def update_object(
        self, *, kind: Kind, obj: dict[str, Any], subresource: str = ""
    ) -> dict[str, Any]:
        """Replace the object (PUT), or its ``status`` with ``subresource="status"``;
        returns it as stored. ``metadata.resourceVersion`` is the precondition: a stale
        one raises :class:`Conflict`; a missing object raises :class:`NotFound`."""
        ...

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
        """Patch the object (JSON merge, strategic merge or JSON patch); returns it as
        stored. Raises :class:`NotFound`."""
        ...

    # ---- leader election (:mod:`ksched.leaderelection`) ------------------------------

    async def get_lease(
        self, *, namespace: str, name: str, kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        """The Lease (or LeaseCandidate) object. Raises :class:`NotFound`."""
        ...

    async def create_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        """Create the object (namespace and name from its metadata); returns it as stored.
        Raises :class:`Conflict` (reason AlreadyExists) when it exists."""
        ...

    async def update_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        """Replace the object (PUT). Its ``metadata.resourceVersion`` is the optimistic
        concurrency precondition: a stale one raises :class:`Conflict`."""
        ...


class ReviewAPI(Protocol):
    """Delegated authentication and authorization for ksched's HTTPS endpoints
    (:mod:`ksched.server`): the API server reviews tokens and access, as it does for
    kube-scheduler. Both calls take the review's ``spec`` and return its ``status``."""

    async def create_token_review(self, *, spec: dict[str, Any]) -> dict[str, Any]:
        """POST an ``authentication.k8s.io/v1`` TokenReview."""
        ...

    async def create_subject_access_review(self, *, spec: dict[str, Any]) -> dict[str, Any]:
        """POST an ``authorization.k8s.io/v1`` SubjectAccessReview."""
        ...
