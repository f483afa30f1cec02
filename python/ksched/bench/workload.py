"""Benchmark workloads: the YAML files of ``ksched/bench/workloads/`` (package data, so
``ksched bench`` works from an installed wheel; ``benches/workloads`` in the source tree
is a link to them), parsed and scaled.

A workload file mirrors one scheduler_perf test case (``workloadTemplate`` + the params
of one of its ``workloads``): a list of ops run in order — ``createNodes``,
``createPods`` (one of them the measured op, ``collectMetrics: true``) and background
``churn`` — plus the templates they instantiate from ``workloads/templates/``.
The same :class:`WorkloadSpec` drives the embedded cluster (:mod:`ksched.bench.embedded`)
and the real apiserver (:mod:`ksched.bench.e2e`), so both targets build byte-identical
objects: names are deterministic (``<generateName><index>``), node labels are assigned
round-robin, and pre-bound init pods go round-robin over the nodes.

Scaling (``--scale``, ``--nodes``/``--pods``/``--existing-pods``) rewrites the params
before any count is resolved; see :meth:`WorkloadSpec.scaled`.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
#: Every node a benchmark creates carries this label (cleanup selects on it).
BENCH_LABEL = "bench.ksched.io/workload"

#: ``--nodes``, ``--existing-pods`` and ``--pods`` set these params.
NODES_PARAM = "initNodes"
EXISTING_PARAM = "initPods"
PODS_PARAM = "measurePods"


class WorkloadError(ValueError):
    """A workload file is missing or malformed; the message names the file and field."""


@dataclass(frozen=True, slots=True)
class CreateNodes:
    count: int
    template: Obj
    label_key: str | None = None
    label_values: tuple[str, ...] = ()
    #: ``nodeAllocatableStrategy``: extra allocatable of every node, and the CSINode
    #: made for each (driver → ``allocatable.count``, migrated in-tree plugins).
    allocatable: Mapping[str, str] = field(default_factory=dict)
    csi_drivers: Mapping[str, int] = field(default_factory=dict)
    migrated_plugins: tuple[str, ...] = ()

    @property
    def has_csinode(self) -> bool:
        return bool(self.csi_drivers or self.migrated_plugins)


@dataclass(frozen=True, slots=True)
class CreatePods:
    count: int
    template: Obj
    namespace: str
    #: Created with ``spec.nodeName`` set (round-robin over the nodes), not scheduled.
    bound: bool = False
    collect_metrics: bool = False
    #: ``persistentVolumeTemplate`` / ``persistentVolumeClaimTemplate``: every pod gets
    #: its own claim ``pvc-<i>`` bound to its own PV ``<namespace>-vol-<i>``.
    pv_template: Obj | None = None
    pvc_template: Obj | None = None


@dataclass(frozen=True, slots=True)
class CreateResourceDriver:
    """``createResourceDriver``: a ResourceSlice of ``devices`` devices for every node
    whose name starts with ``node_prefix`` (upstream ``resourceSlice()``: A100 model,
    GPU family, driverVersion 1.2.3, a per-device ``dra.example.com/numa``, 1Gi memory;
    the slice and its pool named after the node)."""

    driver: str
    node_prefix: str
    devices: int


@dataclass(frozen=True, slots=True)
class CreateAny:
    """``createAny``: ``count`` objects of a cluster-scoped template (a DeviceClass),
    with ``{{.Index}}`` filled in."""

    template: Obj
    count: int


@dataclass(frozen=True, slots=True)
class Churn:
    mode: str  # "create" | "recreate"
    interval: float  # seconds
    templates: tuple[Obj, ...]
    namespace: str
    number: int = 1


Op = CreateNodes | CreatePods | Churn | CreateResourceDriver | CreateAny


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """One parsed workload file. Counts resolve against :attr:`params`."""

    name: str
    key: str  # the file stem, e.g. "scheduling-basic"
    description: str
    upstream: str
    params: Mapping[str, int]
    raw_ops: tuple[Mapping[str, Any], ...]
    templates: Mapping[str, Obj]
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    path: str = ""
    #: Params that are not counts of objects (``fixedParams``): never scaled.
    fixed: frozenset[str] = frozenset()

    # ---- scaling ------------------------------------------------------------------

    def scaled(
        self,
        scale: float = 1.0,
        *,
        nodes: int | None = None,
        existing_pods: int | None = None,
        pods: int | None = None,
    ) -> WorkloadSpec:
        """Every count param times ``scale`` (at least 1 when it was positive), then the
        explicit overrides."""
        params = {
            k: v if k in self.fixed else (max(1, round(v * scale)) if v > 0 else 0)
            for k, v in self.params.items()
        }
        for key, value in (
            (NODES_PARAM, nodes),
            (EXISTING_PARAM, existing_pods),
            (PODS_PARAM, pods),
        ):
            if value is not None:
                if key not in params:
                    raise WorkloadError(f"{self.key}: has no {key} param to override")
                params[key] = value
        return replace(self, params=params)

    # ---- ops ----------------------------------------------------------------------

    def _count(self, op: Mapping[str, Any], index: int) -> int:
        if "count" in op:
            return int(op["count"])
        ref = str(op.get("countParam", ""))
        if not ref.startswith("$") or ref[1:] not in self.params:
            raise WorkloadError(
                f"{self.path or self.key}: ops[{index}].countParam {ref!r} names no param"
            )
        return int(self.params[ref[1:]])

    def _template(self, name: Any, index: int, fld: str) -> Obj:
        if not isinstance(name, str) or name not in self.templates:
            raise WorkloadError(
                f"{self.path or self.key}: ops[{index}].{fld} {name!r} is not a template "
                f"(known: {', '.join(sorted(self.templates))})"
            )
        return self.templates[name]

    def _volume_templates(self, op: Mapping[str, Any], index: int) -> dict[str, Obj | None]:
        pv, pvc = op.get("persistentVolumeTemplate"), op.get("persistentVolumeClaimTemplate")
        if (pv is None) != (pvc is None):
            raise WorkloadError(
                f"{self.path or self.key}: ops[{index}] needs both persistentVolumeTemplate "
                "and persistentVolumeClaimTemplate, or neither"
            )
        if pv is None:
            return {"pv_template": None, "pvc_template": None}
        return {
            "pv_template": self._template(pv, index, "persistentVolumeTemplate"),
            "pvc_template": self._template(pvc, index, "persistentVolumeClaimTemplate"),
        }

    def ops(self) -> list[Op]:
        out: list[Op] = []
        for i, op in enumerate(self.raw_ops):
            code = op.get("opcode")
            if code == "createNodes":
                strategy = op.get("labelNodePrepareStrategy") or {}
                alloc = op.get("nodeAllocatableStrategy") or {}
                drivers = alloc.get("csiNodeAllocatable") or {}
                out.append(
                    CreateNodes(
                        count=self._count(op, i),
                        template=self._template(
                            op.get("nodeTemplate", "node-default"), i, "nodeTemplate"
                        ),
                        label_key=strategy.get("labelKey"),
                        label_values=tuple(str(v) for v in strategy.get("labelValues") or ()),
                        allocatable={
                            str(k): str(v) for k, v in (alloc.get("nodeAllocatable") or {}).items()
                        },
                        csi_drivers={
                            str(k): int((v or {}).get("count", 0)) for k, v in drivers.items()
                        },
                        migrated_plugins=tuple(str(p) for p in alloc.get("migratedPlugins") or ()),
                    )
                )
            elif code == "createPods":
                out.append(
                    CreatePods(
                        count=self._count(op, i),
                        template=self._template(
                            op.get("podTemplate", "pod-default"), i, "podTemplate"
                        ),
                        namespace=str(op.get("namespace", "default")),
                        bound=bool(op.get("bound", False)),
                        collect_metrics=bool(op.get("collectMetrics", False)),
                        **self._volume_templates(op, i),
                    )
                )
            elif code == "churn":
                mode = str(op.get("mode", "create"))
                if mode not in ("create", "recreate"):
                    raise WorkloadError(f"{self.path or self.key}: ops[{i}].mode {mode!r}")
                names = op.get("templates") or []
                out.append(
                    Churn(
                        mode=mode,
                        interval=float(op.get("intervalMilliseconds", 1000)) / 1000.0,
                        templates=tuple(self._template(n, i, "templates") for n in names),
                        namespace=str(op.get("namespace", "default")),
                        number=int(op.get("number", 1)),
                    )
                )
            elif code == "createResourceDriver":
                nodes = str(op.get("nodes", "*"))
                ref = op.get("maxClaimsPerNodeParam")
                devices = (
                    int(self.params[str(ref)[1:]])
                    if isinstance(ref, str) and ref[1:] in self.params
                    else int(op.get("maxClaimsPerNode", 1))
                )
                out.append(
                    CreateResourceDriver(
                        driver=str(op.get("driverName", "")),
                        node_prefix=nodes.rstrip("*"),
                        devices=devices,
                    )
                )
            elif code == "createAny":
                out.append(
                    CreateAny(
                        template=self._template(op.get("template"), i, "template"),
                        count=self._count(op, i) if ("count" in op or "countParam" in op) else 1,
                    )
                )
            else:
                raise WorkloadError(f"{self.path or self.key}: ops[{i}].opcode {code!r} unknown")
        measured = [o for o in out if isinstance(o, CreatePods) and o.collect_metrics]
        if len(measured) != 1:
            raise WorkloadError(
                f"{self.path or self.key}: exactly one createPods op needs collectMetrics: true"
            )
        return out

    def measured(self) -> CreatePods:
        return next(o for o in self.ops() if isinstance(o, CreatePods) and o.collect_metrics)

    def namespaces(self) -> list[str]:
        seen: dict[str, None] = {}
        for op in self.ops():
            if isinstance(op, CreatePods | Churn):
                seen[op.namespace] = None
        return list(seen)

    @property
    def label(self) -> str:
        """``Name/<nodes>Nodes_<pods>Pods`` as scheduler_perf names its workloads."""
        n = self.params.get(NODES_PARAM, 0)
        return f"{self.name}/{n}Nodes_{self.params.get(PODS_PARAM, 0)}Pods"

    # ---- objects ------------------------------------------------------------------

    def _nodes(self) -> Iterator[tuple[CreateNodes, Obj]]:
        index = 0
        for op in self.ops():
            if isinstance(op, CreateNodes):
                for i in range(op.count):
                    labels = {BENCH_LABEL: self.key}
                    if op.label_key and op.label_values:
                        labels[op.label_key] = op.label_values[i % len(op.label_values)]
                    node = instantiate(op.template, index, labels=labels)
                    if op.allocatable:  # upstream patches status.allocatable only
                        status = node.setdefault("status", {})
                        status["allocatable"] = {
                            **(status.get("allocatable") or {}),
                            **op.allocatable,
                        }
                    index += 1
                    yield op, node

    def node_objects(self) -> list[Obj]:
        """Every node of every createNodes op, in creation order (status included)."""
        return [node for _, node in self._nodes()]

    def csinode_objects(self) -> list[Obj]:
        """The CSINodes of the nodes whose op has a ``nodeAllocatableStrategy`` with CSI
        drivers or migrated plugins (upstream ``NodeAllocatableStrategy``)."""
        out: list[Obj] = []
        for op, node in self._nodes():
            if not op.has_csinode:
                continue
            name = node["metadata"]["name"]
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {
                        "name": name,
                        "labels": {BENCH_LABEL: self.key},
                        "annotations": {MIGRATED_PLUGINS: ",".join(op.migrated_plugins)},
                    },
                    "spec": {
                        "drivers": [
                            {"name": d, "nodeID": name, "allocatable": {"count": count}}
                            for d, count in op.csi_drivers.items()
                        ]
                    },
                }
            )
        return out

    def dra_objects(self) -> list[tuple[str, Obj]]:
        """``(kind, object)`` of the DRA objects: the DeviceClasses (``createAny``) and
        the ResourceSlices of the ``createResourceDriver`` ops, in creation order."""
        out: list[tuple[str, Obj]] = []
        node_names = [n["metadata"]["name"] for n in self.node_objects()]
        for op in self.ops():
            if isinstance(op, CreateAny):
                for i in range(op.count):
                    obj = fill_index(copy.deepcopy(op.template), i)
                    obj.setdefault("metadata", {}).setdefault("labels", {})[BENCH_LABEL] = self.key
                    out.append(("deviceclasses", obj))
            elif isinstance(op, CreateResourceDriver):
                for name in node_names:
                    if name.startswith(op.node_prefix):
                        out.append(("resourceslices", self._resource_slice(op, name)))
        return out

    def _resource_slice(self, op: CreateResourceDriver, node: str) -> Obj:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": node, "labels": {BENCH_LABEL: self.key}},
            "spec": {
                "driver": op.driver,
                "nodeName": node,
                "pool": {"name": node, "resourceSliceCount": 1, "generation": 0},
                "devices": [
                    {
                        "name": f"instance-{i}",
                        "attributes": {
                            "model": {"string": "A100"},
                            "family": {"string": "GPU"},
                            "driverVersion": {"version": "1.2.3"},
                            "dra.example.com/numa": {"int": i},
                        },
                        "capacity": {"memory": {"value": "1Gi"}},
                    }
                    for i in range(op.devices)
                ],
            },
        }

    def pod_objects(self, op: CreatePods, node_names: list[str]) -> Iterator[Obj]:
        """The pods of one createPods op (bound ones round-robin over ``node_names``); a
        pod of an op with volume templates mounts its claim ``pvc-<i>``."""
        if op.bound and not node_names:
            raise WorkloadError(f"{self.key}: bound pods need nodes")
        for i in range(op.count):
            node = node_names[i % len(node_names)] if op.bound else None
            pod = instantiate(op.template, i, namespace=op.namespace, node_name=node)
            if op.pvc_template is not None:
                pod.setdefault("spec", {})["volumes"] = [
                    {"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{i}"}}
                ]
            yield pod

    def volume_objects(self, op: CreatePods) -> Iterator[tuple[Obj, Obj]]:
        """``(claim, volume)`` of every pod of ``op`` (none without volume templates):
        bound to each other, with ``status.phase: Bound``, as upstream's
        ``CreatePodWithPersistentVolume`` makes them (the volume named
        ``<namespace>-vol-<i>``, a CSI handle or EBS volume ID of that name)."""
        if op.pv_template is None or op.pvc_template is None:
            return
        for i in range(op.count):
            claim_name = f"pvc-{i}"
            pv = copy.deepcopy(op.pv_template)
            name = f"{op.namespace}-vol-{i}"
            pv.setdefault("metadata", {})["name"] = name
            pv["metadata"]["labels"] = {
                **(pv["metadata"].get("labels") or {}),
                BENCH_LABEL: self.key,
            }
            spec = pv.setdefault("spec", {})
            if isinstance(spec.get("csi"), dict):
                spec["csi"]["volumeHandle"] = name
            elif isinstance(spec.get("awsElasticBlockStore"), dict):
                spec["awsElasticBlockStore"]["volumeID"] = name
            spec["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "namespace": op.namespace,
                "name": claim_name,
                "apiVersion": "v1",
            }
            pv["status"] = {"phase": "Bound"}
            pvc = copy.deepcopy(op.pvc_template)
            meta = pvc.setdefault("metadata", {})
            meta["name"] = claim_name
            meta["namespace"] = op.namespace
            pvc.setdefault("spec", {})["volumeName"] = name
            pvc["status"] = {"phase": "Bound"}
            yield pvc, pv


def instantiate(
    template: Obj,
    index: int,
    *,
    namespace: str | None = None,
    node_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    suffix: str = "",
) -> Obj:
    """A copy of ``template`` named ``<generateName><index><suffix>``."""
    obj: Obj = fill_index(copy.deepcopy(template), index)
    meta = obj.setdefault("metadata", {})
    prefix = meta.pop("generateName", None) or f"{str(obj.get('kind', 'obj')).lower()}-"
    meta["name"] = f"{prefix}{index}{suffix}"
    if labels:
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
    kind = obj.get("kind")
    if kind == "Node":
        meta.setdefault("labels", {})[HOSTNAME_LABEL] = meta["name"]
        status = obj.setdefault("status", {})
        if "capacity" in status and "allocatable" not in status:
            status["allocatable"] = dict(status["capacity"])
    elif namespace is not None:
        meta["namespace"] = namespace
    if node_name is not None:
        obj.setdefault("spec", {})["nodeName"] = node_name
    return obj


_MOD = re.compile(r"\{\{Mod \.Index (\d+)\}\}")


def _fill(text: str, index: int) -> str:
    if "{{" not in text:
        return text
    text = text.replace("{{.Index}}", str(index))
    return _MOD.sub(lambda m: str(index % int(m.group(1))), text)


def fill_index(obj: Any, index: int) -> Any:
    """scheduler_perf's template functions in keys and values: ``{{.Index}}`` and
    ``{{Mod .Index N}}``."""
    if isinstance(obj, dict):
        return {_fill(str(k), index): fill_index(v, index) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fill_index(v, index) for v in obj]
    if isinstance(obj, str):
        return _fill(obj, index)
    return obj


# --------------------------------------------------------------------------- loading


def workloads_dir() -> Path:
    """``$KSCHED_BENCH_WORKLOADS``, else the workload files shipped in the package
    (``ksched/bench/workloads/``; ``benches/workloads`` of the source tree links there)."""
    if env := os.environ.get("KSCHED_BENCH_WORKLOADS"):
        d = Path(env)
        if not d.is_dir():
            raise WorkloadError(f"KSCHED_BENCH_WORKLOADS={env}: not a directory")
        return d
    return Path(__file__).resolve().parent / "workloads"


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise WorkloadError(f"{path}: {exc}") from exc


def load_templates(directory: Path) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    tdir = directory / "templates"
    for p in sorted(tdir.glob("*.yaml")):
        doc = _load_yaml(p)
        if not isinstance(doc, dict) or "kind" not in doc:
            raise WorkloadError(f"{p}: not a Kubernetes object")
        out[p.stem] = doc
    return out


def load_workload(path: Path, templates: Mapping[str, Obj] | None = None) -> WorkloadSpec:
    doc = _load_yaml(path)
    if not isinstance(doc, dict):
        raise WorkloadError(f"{path}: expected a mapping")
    for required in ("name", "params", "ops"):
        if required not in doc:
            raise WorkloadError(f"{path}: missing field {required!r}")
    params = doc["params"]
    if not isinstance(params, dict) or not all(isinstance(v, int) for v in params.values()):
        raise WorkloadError(f"{path}: params must map names to integers")
    ops = doc["ops"]
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise WorkloadError(f"{path}: ops must be a list of mappings")
    spec = WorkloadSpec(
        name=str(doc["name"]),
        key=path.stem,
        description=str(doc.get("description", "")),
        upstream=str(doc.get("upstream", "")),
        params=dict(params),
        raw_ops=tuple(ops),
        templates=templates if templates is not None else load_templates(path.parent),
        priority_classes={str(k): int(v) for k, v in (doc.get("priorityClasses") or {}).items()},
        path=str(path),
        fixed=frozenset(str(p) for p in doc.get("fixedParams") or ()),
    )
    spec.ops()  # validate now, not in the middle of a run
    return spec


def load_all(directory: Path | None = None) -> dict[str, WorkloadSpec]:
    """Every workload file of ``directory`` (default :func:`workloads_dir`), by key."""
    d = directory if directory is not None else workloads_dir()
    templates = load_templates(d)
    return {p.stem: load_workload(p, templates) for p in sorted(d.glob("*.yaml"))}


def _norm(s: str) -> str:
    return "".join(c for c in s.lower() if c.isalnum())


def find(name: str, workloads: Mapping[str, WorkloadSpec]) -> WorkloadSpec:
    """A workload by file stem or scheduler_perf name, ignoring case and punctuation,
    with or without the ``Scheduling`` prefix (``scheduling-basic``, ``SchedulingBasic``,
    ``basic``)."""
    want = _norm(name)
    for spec in workloads.values():
        aliases = {_norm(spec.key), _norm(spec.name)}
        aliases |= {a.removeprefix("scheduling") for a in list(aliases)}
        if want in aliases:
            return spec
    raise WorkloadError(f"unknown workload {name!r} (known: {', '.join(sorted(workloads))})")


def resolve_priority(pod: Obj, classes: Mapping[str, int]) -> Obj:
    """What the Priority admission plugin does: ``priorityClassName`` → ``spec.priority``
    (for the embedded cluster, which has no admission)."""
    spec = pod.get("spec") or {}
    cls = spec.get("priorityClassName")
    if cls and "priority" not in spec and cls in classes:
        spec["priority"] = classes[cls]
    return pod
