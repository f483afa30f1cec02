"""Cluster recordings: what the scheduler reads from a cluster, saved to one file.

``ksched record -o cluster.json.zst`` lists, through a :class:`~ksched.cluster.ClusterAPI`
(the read-only one: :mod:`ksched.readonly`), every kind the scheduler and its plugins
watch — the kinds of :data:`ksched.cluster.KIND_PATHS`: nodes, pods, namespaces, the
workload controllers, PodDisruptionBudgets, the volume kinds (PVs, PVCs, StorageClasses,
CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), the DRA kinds
(ResourceSlices, DeviceClasses, ResourceClaims), the pod groups (scheduling.k8s.io
PodGroups, scheduler-plugins' PodGroups and ElasticQuotas), PriorityClasses —
and, with ``duration``, follows the pod and node watches for that long and keeps the
arrivals (a pod or node added) and departures (deleted) with their time offsets. A
kind the API server does not serve (or the recording identity may not list) is left
out and named in :attr:`Recording.skipped`. Secrets (and ConfigMaps) are not among
those kinds: they are never read.

Pods are stripped to what scheduling uses (:func:`strip_pod`): the fields
:class:`ksched.api.pod.Pod` parses, the owner references that give default spreading
its selector, the volume sources the volume plugins and ImageLocality read, the resource
claims and the pod group (``spec.schedulingGroup``).
Containers keep their name, image, resources, host ports and restart policy; commands,
environment, probes, mounts, annotations and the like are dropped. Every object loses
``metadata.managedFields`` and the ``kubectl.kubernetes.io/last-applied-configuration``
annotation (which would carry the whole manifest, env included).

The file is JSON (orjson) compressed with zstd (the ``zstandard`` package); a path
not ending in ``.zst`` is written as plain JSON. Its document::

    {"apiVersion": "ksched.io/v1alpha1", "kind": "ClusterRecording",
     "recordedAt": "2026-01-01T00:00:00Z", "source": "https://...", "duration": 600.0,
     "objects": {"nodes": [...], "pods": [...], ...},
     "arrivals": [{"t": 1.25, "type": "ADDED", "kind": "pods", "object": {...}}, ...],
     "skipped": {"resourceslices": "404 NotFound: ..."}, "notes": [...]}
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import orjson
import zstandard

from ksched.api.csi_translation import PLUGINS as CSI_PLUGINS
from ksched.api.volume import DISK_SOURCES
from ksched.cluster import KIND_PATHS, APIError, ClusterAPI, Gone, Kind

__all__ = [
    "API_VERSION",
    "RECORDED_KINDS",
    "Arrival",
    "Recording",
    "RecordingError",
    "record",
    "strip_object",
    "strip_pod",
]

Obj = dict[str, Any]

API_VERSION = "ksched.io/v1alpha1"
KIND = "ClusterRecording"
#: Every kind the scheduler may read (never Secrets or ConfigMaps: they are not here).
RECORDED_KINDS: tuple[Kind, ...] = tuple(k for k in get_args(Kind) if k in KIND_PATHS)
#: Kinds whose additions and deletions are followed during ``duration``.
FOLLOWED_KINDS: tuple[Kind, ...] = ("pods", "nodes")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class RecordingError(ValueError):
    """A recording cannot be read or written; the message names the file and why."""


@dataclass(slots=True)
class Arrival:
    """An object added (``ADDED``) or deleted (``DELETED``) ``t`` seconds into the
    recording window."""

    t: float
    type: str
    kind: str
    object: Obj


@dataclass(slots=True)
class Recording:
    """Objects by kind at the start of the window, and what changed during it."""

    objects: dict[str, list[Obj]]
    arrivals: list[Arrival] = field(default_factory=list)
    recorded_at: str = ""
    source: str = ""
    duration: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    # ---- queries -----------------------------------------------------------------

    def of(self, kind: str) -> list[Obj]:
        return self.objects.get(kind, [])

    @property
    def pending_pods(self) -> list[Obj]:
        """Pods not bound at the start of the window."""
        return [p for p in self.of("pods") if not (p.get("spec") or {}).get("nodeName")]

    @property
    def bound_pods(self) -> list[Obj]:
        return [p for p in self.of("pods") if (p.get("spec") or {}).get("nodeName")]

    def priority_classes(self) -> dict[str, int]:
        """PriorityClass name → value; ``""`` → the value of the ``globalDefault`` one."""
        out: dict[str, int] = {}
        for pc in self.of("priorityclasses"):
            name = (pc.get("metadata") or {}).get("name")
            value = pc.get("value")
            if isinstance(name, str) and isinstance(value, int):
                out[name] = value
                if pc.get("globalDefault"):
                    out[""] = value
        return out

    # ---- (de)serialization -------------------------------------------------------

    def as_dict(self) -> Obj:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "recordedAt": self.recorded_at,
            "source": self.source,
            "duration": self.duration,
            "objects": self.objects,
            "arrivals": [
                {"t": a.t, "type": a.type, "kind": a.kind, "object": a.object}
                for a in self.arrivals
            ],
            "skipped": self.skipped,
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "recording") -> Recording:
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise RecordingError(f"{source}: not a ksched {KIND} (kind {_kind_of(doc)!r})")
        if doc.get("apiVersion") != API_VERSION:
            raise RecordingError(
                f"{source}: apiVersion {doc.get('apiVersion')!r} is not {API_VERSION!r}"
            )
        objects = doc.get("objects")
        if not isinstance(objects, dict) or not all(
            isinstance(k, str) and isinstance(v, list) for k, v in objects.items()
        ):
            raise RecordingError(f"{source}: objects must map kinds to lists of objects")
        for kind, items in objects.items():
            for i, obj in enumerate(items):
                if not isinstance(obj, dict) or not isinstance(
                    (obj.get("metadata") or {}).get("name"), str
                ):
                    raise RecordingError(f"{source}: objects.{kind}[{i}] has no metadata.name")
        arrivals = []
        for i, a in enumerate(doc.get("arrivals") or []):
            if (
                not isinstance(a, dict)
                or not isinstance(a.get("t"), int | float)
                or a.get("type") not in ("ADDED", "DELETED")
                or a.get("kind") not in FOLLOWED_KINDS
                or not isinstance(a.get("object"), dict)
            ):
                raise RecordingError(
                    f"{source}: arrivals[{i}] must have t (seconds), type ADDED|DELETED, "
                    f"kind {'|'.join(FOLLOWED_KINDS)} and an object"
                )
            arrivals.append(Arrival(float(a["t"]), a["type"], a["kind"], a["object"]))
        arrivals.sort(key=lambda a: a.t)
        return cls(
            objects={k: list(v) for k, v in objects.items()},
            arrivals=arrivals,
            recorded_at=str(doc.get("recordedAt") or ""),
            source=str(doc.get("source") or ""),
            duration=float(doc.get("duration") or 0.0),
            skipped={str(k): str(v) for k, v in (doc.get("skipped") or {}).items()},
            notes=[str(n) for n in doc.get("notes") or []],
        )

    def save(self, path: str | Path) -> None:
        data = orjson.dumps(self.as_dict())
        p = Path(path)
        if p.suffix == ".zst":
            data = zstandard.ZstdCompressor(level=10).compress(data)
        p.write_bytes(data)

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise RecordingError(f"{p}: {exc.strerror or exc}") from exc
        if data[:4] == b"\x28\xb5\x2f\xfd":  # the zstd frame magic number
            try:
                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 34)
            except zstandard.ZstdError as exc:
                raise RecordingError(f"{p}: not a valid zstd file: {exc}") from exc
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise RecordingError(f"{p}: not JSON: {exc}") from exc
        return cls.from_dict(doc, source=str(p))


def _kind_of(doc: Any) -> Any:
    return doc.get("kind") if isinstance(doc, dict) else type(doc).__name__


# ---- stripping -----------------------------------------------------------------------

_POD_META = ("name", "namespace", "uid", "labels", "ownerReferences", "creationTimestamp",
             "deletionTimestamp", "resourceVersion", "generation")  # fmt: skip
_POD_SPEC = (
    "nodeName",
    "schedulerName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "schedulingGates",
    "overhead",
    "resources",
    "runtimeClassName",
    "resourceClaims",
    "schedulingGroup",
    "terminationGracePeriodSeconds",
    "hostNetwork",
)
_CONTAINER = ("name", "image", "resources", "restartPolicy")
_PORT = ("containerPort", "hostPort", "hostIP", "protocol")
_POD_STATUS = ("phase", "conditions", "nominatedNodeName", "startTime",
               "resourceClaimStatuses", "extendedResourceClaimStatus")  # fmt: skip
_CONTAINER_STATUS = ("name", "allocatedResources", "resources")
#: Volume sources whose contents the scheduler reads: claims and generic ephemeral
#: volumes, inline CSI, the in-tree disks VolumeRestrictions compares and the in-tree
#: sources CSI translation counts (NodeVolumeLimits, VolumeZone), image volumes
#: (ImageLocality); other sources keep only their type.
_VOLUME_SOURCES_KEPT = frozenset(
    {
        "persistentVolumeClaim",
        "ephemeral",
        "csi",
        "image",
        *DISK_SOURCES,
        *(source for source, _ in CSI_PLUGINS.values()),
    }
)


def _pick(obj: Mapping[str, Any], keys: Iterable[str]) -> Obj:
    return {k: copy.deepcopy(obj[k]) for k in keys if k in obj}


def _container(c: Any) -> Any:
    if not isinstance(c, dict):
        return c
    out = _pick(c, _CONTAINER)
    ports = [_pick(p, _PORT) for p in c.get("ports") or () if isinstance(p, dict)]
    if ports:
        out["ports"] = ports
    return out


def _volume(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    out: Obj = {"name": v.get("name")}
    for key, source in v.items():
        if key == "name":
            continue
        out[key] = copy.deepcopy(source) if key in _VOLUME_SOURCES_KEPT else {}
    return out


def strip_pod(obj: Obj) -> Obj:
    """``obj`` reduced to what scheduling reads (see the module docstring)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    out_spec = _pick(spec, _POD_SPEC)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            out_spec[key] = [_container(c) for c in spec[key]]
    if isinstance(spec.get("volumes"), list):
        out_spec["volumes"] = [_volume(v) for v in spec["volumes"]]
    out_status = _pick(status, _POD_STATUS)
    for key in ("containerStatuses", "initContainerStatuses"):
        if isinstance(status.get(key), list):
            out_status[key] = [
                _pick(cs, _CONTAINER_STATUS) for cs in status[key] if isinstance(cs, dict)
            ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _pick(meta, _POD_META),
        "spec": out_spec,
        "status": out_status,
    }


def strip_object(kind: str, obj: Obj) -> Obj:
    """Pods through :func:`strip_pod`; any other object without its managed fields and
    last-applied configuration."""
    if kind == "pods":
        return strip_pod(obj)
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("managedFields", None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    out["metadata"] = meta
    return out


# ---- recording -----------------------------------------------------------------------


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def record(
    api: ClusterAPI,
    *,
    duration: float = 0.0,
    kinds: Sequence[Kind] = RECORDED_KINDS,
    source: str = "",
    clock: Callable[[], float] = time.monotonic,
    on_progress: Callable[[str], None] | None = None,
) -> Recording:
    """List ``kinds`` through ``api`` and, for ``duration`` seconds, follow pod and node
    additions and deletions. ``api`` should be read-only: nothing here writes."""
    if "secrets" in kinds or "configmaps" in kinds:  # pragma: no cover - not in Kind
        raise RecordingError("Secrets and ConfigMaps are never recorded")
    rec = Recording(objects={}, recorded_at=_now_rfc3339(), source=source, duration=duration)
    versions: dict[str, str] = {}
    for kind in kinds:
        try:
            listed = await api.list(kind=kind)
        except APIError as exc:
            if exc.status in (403, 404):
                rec.skipped[kind] = str(exc)
                continue
            raise
        rec.objects[kind] = [strip_object(kind, o) for o in listed.items]
        versions[kind] = listed.resource_version
        if on_progress is not None:
            on_progress(f"{kind}: {len(listed.items)}")
    if duration > 0:
        start = clock()
        followed = [k for k in FOLLOWED_KINDS if k in versions]
        tasks = [
            asyncio.create_task(_follow(api, kind, versions[kind], start, clock, rec))
            for kind in followed
        ]
        try:
            await asyncio.sleep(duration)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        rec.arrivals.sort(key=lambda a: a.t)
    return rec


async def _follow(
    api: ClusterAPI,
    kind: Kind,
    resource_version: str,
    start: float,
    clock: Callable[[], float],
    rec: Recording,
) -> None:
    """Additions and deletions of ``kind`` after ``resource_version``; a watch that
    ends is resumed from the last version seen."""
    rv = resource_version
    while True:
        try:
            async for ev in api.watch(kind=kind, resource_version=rv):
                meta = ev.object.get("metadata") or {}
                rv = str(meta.get("resourceVersion") or rv)
                if ev.type in ("ADDED", "DELETED"):
                    rec.arrivals.append(
                        Arrival(clock() - start, ev.type, kind, strip_object(kind, ev.object))
                    )
        except Gone:
            rec.notes.append(
                f"the {kind} watch expired at {clock() - start:.1f}s: changes after it are "
                "not recorded"
            )
            return
        except (APIError, OSError) as exc:
            rec.notes.append(f"the {kind} watch failed at {clock() - start:.1f}s: {exc}")
            await asyncio.sleep(1.0)
