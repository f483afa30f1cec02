"""The scheduler's view of a Node, parsed once from API-server JSON.

``Node.from_dict`` keeps what the snapshot columns need: labels, taints, the
unschedulable flag, allocatable resources in scheduler units and the image list (names
and sizes, for ImageLocality), and ``status.declaredFeatures`` as given (a list of
strings; NodeDeclaredFeatures maps it onto the feature registry,
:mod:`ksched.api.declared_features`). The original object stays in ``raw``; nothing is deep
copied, so treat ``raw`` and the parsed maps as read-only.

Allocatable follows what kube-scheduler sees: ``status.allocatable``, or a copy of
``status.capacity`` when allocatable is absent/null (the API server's
``SetDefaults_NodeStatus`` does that before any client sees the node; an explicitly
empty ``allocatable: {}`` is kept as empty). Amounts are converted with
``framework.Resource.Add`` rules (cpu in millicores, the rest in whole units; names the
scheduler does not track are dropped). Zero amounts are *kept*: a resource the node
reports with 0 is different from one it does not report at all (DRA-backed extended
resources are only considered for names absent from allocatable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ksched.api._parse import (
    FieldError,
    json_type,
    opt_bool,
    opt_int64,
    opt_list,
    opt_obj,
    opt_str,
    opt_str_or_none,
    quantity_error_message,
    resource_nanos,
    str_list,
    str_map,
)
from ksched.api.declared_features import declared_features
from ksched.api.errors import InvalidObjectError, QuantityError
from ksched.api.resources import amount_from_nanos, is_tracked_resource_name

__all__ = ["Node", "Taint"]


@dataclass(slots=True)
class Taint:
    """One entry of ``spec.taints``; ``time_added`` is the RFC 3339 text or None."""

    key: str
    value: str
    effect: str
    time_added: str | None = None


@dataclass(slots=True, eq=False, repr=False)
class Node:
    """A parsed node. Build with :meth:`from_dict`; treat every field as read-only."""

    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    taints: list[Taint]
    unschedulable: bool
    #: Allocatable in scheduler units (cpu: millicores, others: bytes/counts).
    allocatable: dict[str, int]
    #: ``(names, size_bytes)`` per entry of ``status.images``.
    images: list[tuple[tuple[str, ...], int]]
    raw: dict[str, Any]
    #: ``status.declaredFeatures`` as the node gives it (kube-apiserver keeps it sorted).
    declared_features: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Node({self.name!r}, uid={self.uid!r})"

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Node:
        """Parse a Node from its decoded JSON.

        Raises:
            InvalidObjectError: any field has the wrong shape or an invalid quantity;
                the error names the node and the field's JSON path.
        """
        try:
            return _parse_node(cls, obj)
        except FieldError as err:
            raise InvalidObjectError("Node", _node_name(obj), err.field, err.message) from None
        except QuantityError as err:  # pragma: no cover - parsers convert these already
            raise InvalidObjectError(
                "Node", _node_name(obj), err.field, quantity_error_message(err)
            ) from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
            raise InvalidObjectError(
                "Node", _node_name(obj), "", f"malformed node: {err!r}"
            ) from None


def _node_name(obj: object) -> str:
    meta = obj.get("metadata") if type(obj) is dict else None
    name = meta.get("name") if type(meta) is dict else None
    return name if type(name) is str else "<unknown>"


def _parse_taints(value: object, path: str) -> list[Taint]:
    items = opt_list(value, path)
    if not items:
        return []
    out: list[Taint] = []
    for i, t in enumerate(items):
        tp = f"{path}[{i}]"
        if type(t) is not dict:
            raise FieldError(tp, f"expected an object, got {json_type(t)}")
        out.append(
            Taint(
                opt_str(t.get("key"), tp + ".key"),
                opt_str(t.get("value"), tp + ".value"),
                opt_str(t.get("effect"), tp + ".effect"),
                opt_str_or_none(t.get("timeAdded"), tp + ".timeAdded"),
            )
        )
    return out


def _parse_images(value: object, path: str) -> list[tuple[tuple[str, ...], int]]:
    items = opt_list(value, path)
    if not items:
        return []
    out: list[tuple[tuple[str, ...], int]] = []
    for i, image in enumerate(items):
        ip = f"{path}[{i}]"
        if type(image) is not dict:
            raise FieldError(ip, f"expected an object, got {json_type(image)}")
        names = tuple(str_list(image.get("names"), ip + ".names"))
        size = opt_int64(image.get("sizeBytes"), ip + ".sizeBytes") or 0
        out.append((names, size))
    return out


def _parse_node(cls: type[Node], obj: dict[str, Any]) -> Node:
    if type(obj) is not dict:
        raise FieldError("", f"expected a JSON object, got {json_type(obj)}")
    meta = opt_obj(obj.get("metadata"), "metadata") or {}
    spec = opt_obj(obj.get("spec"), "spec") or {}
    status = opt_obj(obj.get("status"), "status") or {}

    raw_allocatable = status.get("allocatable")
    if raw_allocatable is None:
        nanos = resource_nanos(status.get("capacity"), "status.capacity")
    else:
        nanos = resource_nanos(raw_allocatable, "status.allocatable")
    allocatable: dict[str, int] = {}
    if nanos:
        for name, n in nanos.items():
            if is_tracked_resource_name(name):
                allocatable[name] = amount_from_nanos(name, n)

    return cls(
        name=opt_str(meta.get("name"), "metadata.name"),
        uid=opt_str(meta.get("uid"), "metadata.uid"),
        resource_version=opt_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        labels=str_map(meta.get("labels"), "metadata.labels"),
        taints=_parse_taints(spec.get("taints"), "spec.taints"),
        unschedulable=opt_bool(spec.get("unschedulable"), "spec.unschedulable"),
        allocatable=allocatable,
        images=_parse_images(status.get("images"), "status.images"),
        raw=obj,
        declared_features=declared_features(status.get("declaredFeatures")),
    )
