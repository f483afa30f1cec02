"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36): a pod
asks for ``example.com/gpu: 1`` in a container's requests, no device plugin on the node
advertises it, and a DeviceClass maps that name to its devices.

Upstream splits the feature between the DRA manager's
``deviceclass/extendedresourcecache`` (which name maps to which class), NodeResourcesFit
(it leaves such a request to DRA on a node whose allocatable has none of it) and
DynamicResources (``extendeddynamicresources.go``: one claim per pod, built per node,
created in PreBind). This module holds the pieces that do not depend on the plugin's
state, with upstream's rules and quirks:

* :class:`ExtendedResourceCache`: ``spec.extendedResourceName`` and the implicit
  ``deviceclass.resource.kubernetes.io/<class>`` of every DeviceClass. When two classes
  claim one name the newer one wins (the lower name on a tie) and an update that loses
  such a tie changes nothing, not even the class's implicit name; a deleted class
  takes its explicit name with it even when another class held it. ksched keeps these.
* :func:`create_requests_and_mappings`: the device requests of the pod's claim for the
  resources a node must get from DRA, one per container (``container-<i>-request-<j>``,
  ``i`` over init containers then containers, ``j`` the resource's index among the
  container's sorted request names) and the ``status.extendedResourceClaimStatus``
  request mappings. Init containers that run before others reuse the requests of the
  long-lived containers after them and share the largest of their own.
* :func:`special_claim`: the in-memory claim (named ``<extended-resources>``, a random
  UID, ``generateName: <pod>-extended-resources-``, owned by the pod and annotated
  ``resource.kubernetes.io/extended-resource-claim: "true"``) that stands for the claim
  until PreBind creates it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ksched.api.errors import QuantityError
from ksched.api.quantity import parse_quantity
from ksched.api.resources import is_extended_resource_name

Obj = dict[str, Any]

__all__ = [
    "ANNOTATION",
    "ASSUME_TIMEOUT",
    "DEVICE_CLASS_PREFIX",
    "SPECIAL_CLAIM_NAME",
    "ExtendedResourceCache",
    "create_requests_and_mappings",
    "find_extended_resource_claim",
    "is_dra_extended_resource_name",
    "is_special_claim",
    "special_claim",
]

#: ``specialClaimInMemName``: not a valid object name, so no API claim has it.
SPECIAL_CLAIM_NAME: Final = "<extended-resources>"
#: ``resourceapi.ExtendedResourceClaimAnnotation``.
ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
#: ``resourceapi.ResourceDeviceClassPrefix``: every class's implicit resource name.
DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
#: ``AssumeExtendedResourceTimeoutDefaultSeconds``: how long PreBind waits for the
#: informer to deliver the claim it created.
ASSUME_TIMEOUT: Final = 120.0

_NANOS: Final = 1_000_000_000


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name or a class's
    implicit name."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _explicit_name(cls: Obj) -> str | None:
    spec = cls.get("spec")
    name = spec.get("extendedResourceName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else None


def _created(cls: Obj) -> str:
    """The creation timestamp as RFC 3339 text (seconds): comparable as a string."""
    return str(_meta(cls).get("creationTimestamp") or "")


class ExtendedResourceCache:
    """Upstream ``ExtendedResourceCache``: extended resource name → DeviceClass."""

    def __init__(self) -> None:
        self._by_resource: dict[str, Obj] = {}
        self._by_class: dict[str, str] = {}

    def get_device_class(self, resource: str) -> Obj | None:
        """The DeviceClass ``resource`` maps to, None when none does."""
        return self._by_resource.get(resource)

    def get_extended_resource(self, class_name: str) -> str:
        """The class's explicit ``extendedResourceName`` ("" when none)."""
        return self._by_class.get(class_name, "")

    def names(self) -> list[str]:
        """Every mapped resource name, sorted."""
        return sorted(self._by_resource)

    def __contains__(self, resource: object) -> bool:
        return resource in self._by_resource

    def on_add(self, cls: Obj) -> None:
        self._update_resources(cls, None)
        self._update_class(cls)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._update_resources(new, old)
        self._update_class(new)

    def on_delete(self, cls: Obj) -> None:
        name = str(_meta(cls).get("name") or "")
        self._by_resource.pop(DEVICE_CLASS_PREFIX + name, None)
        explicit = _explicit_name(cls)
        if explicit is not None:
            self._by_resource.pop(explicit, None)
        self._by_class.pop(name, None)

    def _update_resources(self, new: Obj, old: Obj | None) -> None:
        explicit = _explicit_name(new)
        name = str(_meta(new).get("name") or "")
        holder = self._by_resource.get(explicit) if explicit is not None else None
        if holder is not None:
            mine, theirs = _created(new), _created(holder)
            if mine < theirs:
                return  # the current holder is newer
            if mine == theirs and name >= str(_meta(holder).get("name") or ""):
                return  # equal: the lower name wins
        if old is not None:
            self._by_resource.pop(DEVICE_CLASS_PREFIX + str(_meta(old).get("name") or ""), None)
            old_explicit = _explicit_name(old)
            if old_explicit is not None:
                self._by_resource.pop(old_explicit, None)
        if explicit is not None:
            self._by_resource[explicit] = new
        self._by_resource[DEVICE_CLASS_PREFIX + name] = new

    def _update_class(self, cls: Obj) -> None:
        name = str(_meta(cls).get("name") or "")
        explicit = _explicit_name(cls)
        if explicit is None:
            self._by_class.pop(name, None)
        else:
            self._by_class[name] = explicit


def has_mapped_request(requests: Mapping[str, int], cache: ExtendedResourceCache) -> bool:
    """``hasDeviceClassMappedExtendedResource`` over the pod's effective requests."""
    return any(
        amount and is_dra_extended_resource_name(name) and name in cache
        for name, amount in requests.items()
    )


def special_claim(pod: Obj) -> Obj:
    """The in-memory claim for the pod's extended resources (no requests yet)."""
    meta = _meta(pod)
    name = str(meta.get("name") or "")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": str(meta.get("namespace") or ""),
            "name": SPECIAL_CLAIM_NAME,
            # A temporary UID for the in-flight bookkeeping until PreBind creates it.
            "uid": str(uuid.uuid4()),
            "generateName": f"{name}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": name,
                    "uid": str(meta.get("uid") or ""),
                    "controller": True,
                }
            ],
            "annotations": {ANNOTATION: "true"},
        },
        "spec": {},
    }


def is_special_claim(claim: Obj) -> bool:
    return _meta(claim).get("name") == SPECIAL_CLAIM_NAME


def find_extended_resource_claim(pod: Obj, claims: Iterable[Obj]) -> Obj | None:
    """``findExtendedResourceClaim``: the claim annotated as the pod's extended
    resource claim and controlled by the pod."""
    meta = _meta(pod)
    for c in claims:
        cm = _meta(c)
        if (cm.get("annotations") or {}).get(ANNOTATION) != "true":
            continue
        for ref in cm.get("ownerReferences") or []:
            if (
                isinstance(ref, dict)
                and ref.get("name") == meta.get("name")
                and ref.get("controller") is True
                and ref.get("uid") == meta.get("uid")
            ):
                return c
    return None


def claim_requests(claim: Obj) -> list[Obj]:
    spec = claim.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    return [r for r in reqs if isinstance(r, dict)] if isinstance(reqs, list) else []


def with_requests(claim: Obj, requests: list[Obj]) -> Obj:
    """A copy of ``claim`` whose ``spec.devices.requests`` are ``requests`` (none:
    the field is absent, as a nil list)."""
    out = copy.deepcopy(claim)
    spec = out.setdefault("spec", {})
    devices = spec.setdefault("devices", {})
    if requests:
        devices["requests"] = requests
    else:
        devices.pop("requests", None)
        if not devices:
            spec.pop("devices", None)
    return out


# ---- device requests and mappings ---------------------------------------------------------


def _containers(pod: Obj) -> tuple[list[Obj], int]:
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    app = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    return init + app, len(init)


def _requests_of(container: Obj) -> dict[str, Any] | None:
    res = container.get("resources")
    reqs = res.get("requests") if isinstance(res, dict) else None
    return reqs if isinstance(reqs, dict) else None


def _as_int64(value: Any) -> int | None:
    """``Quantity.AsInt64``: the value when it is a whole number (API quantities are
    canonical, so "1k" is 1000 and fractions are not whole)."""
    try:
        nanos = parse_quantity(value).nanos
    except (QuantityError, ValueError, TypeError):
        return None
    if nanos % _NANOS:
        return None
    v = nanos // _NANOS
    return v if -(1 << 63) <= v < (1 << 63) else None


def _request_and_mappings(
    index: int,
    container: Obj,
    resource: str,
    class_name: str,
    reusable: list[Obj | None],
) -> tuple[Obj | None, list[Obj]]:
    """``createResourceRequestAndMappings`` for one container and resource."""
    creqs = _requests_of(container)
    if creqs is None or resource not in creqs:
        return None, []
    crq = _as_int64(creqs[resource])
    if crq is None or crq == 0:
        return None, []
    name = str(container.get("name") or "")
    mappings: list[Obj] = []
    total = 0
    for r in reusable:
        if r is None:
            continue
        total += int(r["exactly"]["count"])
        mappings.append({"containerName": name, "resourceName": resource, "requestName": r["name"]})
        if total >= crq:
            return None, mappings
    keys = sorted(str(k) for k in creqs)
    ridx = keys.index(resource)
    req_name = f"container-{index}-request-{ridx}"
    request = {
        "name": req_name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": crq - total,
        },
    }
    mappings.append({"containerName": name, "resourceName": resource, "requestName": req_name})
    return request, mappings


def create_requests_and_mappings(
    pod: Obj, extended: Mapping[str, int], cache: ExtendedResourceCache
) -> tuple[list[Obj], list[Obj]]:
    """``createRequestsAndMappings``: the device requests (sorted by name) and the
    container request mappings for the resources in ``extended``."""
    containers, num_init = _containers(pod)
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, c in enumerate(containers):
        if i < num_init and c.get("restartPolicy") != "Always":
            short_lived.append(i)
        else:
            long_lived.append(i)
    requests: list[Obj] = []
    mappings: list[Obj] = []
    for resource in sorted(extended):
        cls = cache.get_device_class(resource)
        if cls is None:
            continue
        class_name = str(_meta(cls).get("name") or "")
        long_requests: list[Obj | None] = [None] * len(containers)
        long_mappings: list[Obj] = []
        for i in long_lived:
            req, maps = _request_and_mappings(i, containers[i], resource, class_name, [])
            long_requests[i] = req
            long_mappings.extend(maps)
        largest: Obj | None = None
        short_names: set[str] = set()
        short_mappings: list[Obj] = []
        for i in short_lived:
            req, maps = _request_and_mappings(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if req is not None:
                short_names.add(req["name"])
                if largest is None or largest["exactly"]["count"] < req["exactly"]["count"]:
                    largest = req
            short_mappings.extend(maps)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings
