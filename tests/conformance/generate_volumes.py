"""The volume objects of a generated case: what VolumeBinding, VolumeRestrictions,
VolumeZone and NodeVolumeLimits read.

Design. As in :mod:`tests.conformance.generate`, the vocabulary is small so that objects
collide: one CSI driver of our own (``csi.example.com``) and the CSI drivers the in-tree
AWS EBS and GCE PD plugins migrate to; four StorageClasses (immediate and
WaitForFirstConsumer binding, with and without a provisioner, with and without
``allowedTopologies``, one in-tree provisioner); a handful of PersistentVolumes (CSI,
AWS EBS, GCE PD and local sources; zone labels for VolumeZone; node affinity on zones
or host names; every access mode incl. ReadWriteOncePod; bound, pre-bound or
available); claims in the pod's namespace (bound and fully bound, bound to a missing
volume, unbound with immediate binding, WaitForFirstConsumer with and without matching
volumes, ephemeral ones owned by the pod or not); CSINodes with allocatable counts and
the migrated-plugins annotation; CSIDrivers with ``storageCapacity``;
CSIStorageCapacities per zone. The pod to schedule and some bound pods use claims,
ephemeral volumes and inline in-tree disks (GCE PD, AWS EBS, RBD, iSCSI), so that
VolumeRestrictions' conflicts, ReadWriteOncePod's exclusivity and the volume limits'
counts all happen.

:func:`volume_objects` is the :class:`~tests.conformance.generate.PluginSpec` hook of
VolumeBinding: it returns the objects and sets the volumes of the pod and of bound pods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.conformance.generate import Gen

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ["z1", "z2", "z3"]
DRIVER = "csi.example.com"
EBS_DRIVER = "ebs.csi.aws.com"
PD_DRIVER = "pd.csi.storage.gke.io"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SIZES = ["1Gi", "5Gi", "10Gi", "50Gi"]
ACCESS_MODES = [
    ["ReadWriteOnce"],
    ["ReadWriteOnce"],
    ["ReadWriteMany"],
    ["ReadOnlyMany"],
    ["ReadWriteOncePod"],
]

#: name -> (provisioner, volumeBindingMode)
CLASSES = {
    "sc-immediate": (DRIVER, "Immediate"),
    "sc-wffc": (DRIVER, "WaitForFirstConsumer"),
    "sc-static": ("kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
    "sc-ebs": ("kubernetes.io/aws-ebs", "WaitForFirstConsumer"),
}


def storage_classes(g: Gen) -> list[Obj]:
    out = []
    for name, (provisioner, mode) in CLASSES.items():
        if not g.chance(0.9):
            g.tag("volume:storageclass-missing")
            continue
        sc: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
        }
        if mode == "WaitForFirstConsumer" and g.chance(0.3):
            sc["allowedTopologies"] = [
                {"matchLabelExpressions": [{"key": ZONE, "values": g.some(ZONES, 1, 2)}]}
            ]
            g.tag("volume:storageclass.allowedTopologies")
        out.append(sc)
    return out


def csi_objects(g: Gen, nodes: list[Obj]) -> list[Obj]:
    """CSIDrivers, a CSINode per node (mostly) and CSIStorageCapacities."""
    capacity_tracked = g.chance(0.4)
    out: list[Obj] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": DRIVER},
            "spec": {"attachRequired": g.chance(0.7), "storageCapacity": capacity_tracked},
        }
    ]
    if capacity_tracked:
        g.tag("volume:csidriver.storageCapacity")
    if g.chance(0.3):
        out.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": EBS_DRIVER},
                "spec": {"attachRequired": True},
            }
        )
    for n in nodes:
        name = n["metadata"]["name"]
        if not g.chance(0.85):
            g.tag("volume:csinode-missing")
            continue
        drivers = []
        if g.chance(0.85):
            d: Obj = {"name": DRIVER, "nodeID": name, "topologyKeys": [ZONE]}
            if g.chance(0.6):
                d["allocatable"] = {"count": g.pick([0, 1, 1, 2, 3, 8])}
                g.tag("volume:csinode.allocatable")
            drivers.append(d)
        meta: Obj = {"name": name}
        migrated = []
        for driver, plugin in (
            (EBS_DRIVER, "kubernetes.io/aws-ebs"),
            (PD_DRIVER, "kubernetes.io/gce-pd"),
        ):
            if g.chance(0.35):
                d = {"name": driver, "nodeID": name, "topologyKeys": [ZONE]}
                if g.chance(0.7):
                    d["allocatable"] = {"count": g.pick([1, 2, 3])}
                drivers.append(d)
                if g.chance(0.8):
                    migrated.append(plugin)
                    g.tag("volume:csinode.migrated-plugins")
        if migrated:
            meta["annotations"] = {MIGRATED: ",".join(migrated)}
        out.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": meta,
                "spec": {"drivers": drivers},
            }
        )
    return out


def storage_capacities(g: Gen, namespace: str) -> list[Obj]:
    out = []
    for i, zone in enumerate(g.some(ZONES, 0, 3)):
        c: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"cap-{i}", "namespace": g.pick([namespace, "default"])},
            "storageClassName": g.pick(["sc-wffc", "sc-wffc", "sc-immediate"]),
            "nodeTopology": {"matchLabels": {ZONE: zone}},
            "capacity": g.pick(["0", "2Gi", "20Gi", "100Gi"]),
        }
        if g.chance(0.3):
            c["maximumVolumeSize"] = g.pick(["1Gi", "10Gi"])
            g.tag("volume:capacity.maximumVolumeSize")
        out.append(c)
        g.tag("volume:csistoragecapacity")
    return out


def node_affinity(g: Gen, nodes: list[Obj]) -> Obj:
    if g.chance(0.5):
        expr = {"key": ZONE, "operator": "In", "values": g.some(ZONES, 1, 2)}
    else:
        names = [n["metadata"]["name"] for n in nodes]
        expr = {"key": HOSTNAME, "operator": "In", "values": g.some(names, 1, 2)}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def persistent_volume(g: Gen, i: int, nodes: list[Obj], claim: Obj | None) -> Obj:
    """PV ``pv-<i>``: bound to ``claim`` when given (claimRef with its uid), else
    available (sometimes pre-bound to a claim by name)."""
    source = g.pick(["csi", "csi", "csi", "ebs", "pd", "local"])
    spec: Obj = {
        "capacity": {"storage": g.pick(SIZES)},
        "accessModes": g.pick(ACCESS_MODES),
        "persistentVolumeReclaimPolicy": "Retain",
    }
    labels: dict[str, str] = {}
    if source == "csi":
        spec["csi"] = {"driver": DRIVER, "volumeHandle": f"handle-{i}"}
    elif source == "ebs":
        spec["awsElasticBlockStore"] = {"volumeID": f"vol-ebs-{i}"}
    elif source == "pd":
        spec["gcePersistentDisk"] = {"pdName": f"pd-{i}"}
    else:
        spec["local"] = {"path": f"/mnt/disk{i}"}
    g.tag(f"volume:pv.{source}")
    if source == "local" or g.chance(0.5):
        spec["nodeAffinity"] = node_affinity(g, nodes)
        g.tag("volume:pv.nodeAffinity")
    if (source in ("ebs", "pd") or g.chance(0.2)) and g.chance(0.8):
        key = ZONE if g.chance(0.7) else "failure-domain.beta.kubernetes.io/zone"
        labels[key] = g.pick([*ZONES, "z1__z2"])
        g.tag(f"volume:pv.label.{key.split('/')[0]}")
    spec["storageClassName"] = g.pick(["sc-static", "sc-wffc", "sc-static", "sc-ebs", ""])
    status = "Available"
    if claim is not None:
        meta = claim["metadata"]
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
        spec["storageClassName"] = claim["spec"].get("storageClassName", "")
        status = "Bound"
    elif g.chance(0.1):
        spec["claimRef"] = {"namespace": "default", "name": "claim-prebound"}
        g.tag("volume:pv.prebound")
    pv: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{i}"},
        "spec": spec,
        "status": {"phase": status},
    }
    if labels:
        pv["metadata"]["labels"] = labels
    return pv


def claim(g: Gen, name: str, namespace: str, cls: str | None, *, size: str | None = None) -> Obj:
    spec: Obj = {
        "accessModes": g.pick(ACCESS_MODES),
        "resources": {"requests": {"storage": size or g.pick(["1Gi", "1Gi", "5Gi", "20Gi"])}},
    }
    if cls is not None:
        spec["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pvc-{namespace}-{name}"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def bind(claim_obj: Obj, pv: Obj, *, completed: bool) -> None:
    claim_obj["spec"]["volumeName"] = pv["metadata"]["name"]
    claim_obj["status"] = {
        "phase": "Bound",
        "accessModes": list(pv["spec"]["accessModes"]),
        "capacity": dict(pv["spec"]["capacity"]),
    }
    if completed:
        claim_obj["metadata"]["annotations"] = {BIND_COMPLETED: "yes"}


def inline_disk(g: Gen, i: int) -> Obj:
    """An in-tree inline volume of the kinds VolumeRestrictions compares."""
    kind = g.pick(["gce", "ebs", "rbd", "iscsi"])
    g.tag(f"volume:inline.{kind}")
    ro = g.chance(0.4)
    if kind == "gce":
        src: Obj = {"gcePersistentDisk": {"pdName": g.pick(["pd-a", "pd-b"]), "readOnly": ro}}
    elif kind == "ebs":
        src = {"awsElasticBlockStore": {"volumeID": g.pick(["vol-a", "vol-b"])}}
    elif kind == "rbd":
        src = {
            "rbd": {
                "monitors": g.some(["10.0.0.1:6789", "10.0.0.2:6789"], 1, 2),
                "image": g.pick(["img-a", "img-b"]),
                "pool": g.pick(["rbd", "kube"]),
                "readOnly": ro,
            }
        }
    else:
        src = {
            "iscsi": {
                "targetPortal": "10.0.0.9:3260",
                "iqn": g.pick(["iqn.2026-01.example:a", "iqn.2026-01.example:b"]),
                "lun": g.pick([0, 1]),
                "readOnly": ro,
            }
        }
    return {"name": f"disk-{i}", **src}


def volume_objects(g: Gen, nodes: list[Obj], pod: Obj) -> list[Obj]:
    """The volume objects of a case (see the module docstring); sets the volumes of
    ``pod`` and of the bound pods in ``g.existing``."""
    if not g.chance(0.9 if g.gates.get("StorageCapacityScoring") else 0.45):
        return []
    g.tag("scenario:volumes")
    ns = pod["metadata"]["namespace"]
    objects: list[Obj] = [*storage_classes(g), *csi_objects(g, nodes)]
    objects += storage_capacities(g, ns)
    claims: list[Obj] = []
    pvs: list[Obj] = []
    # Bound claims (some not fully bound, some bound to a volume that does not exist).
    for i in range(g.rng.randint(0, 3)):
        c = claim(g, f"bound-{i}", ns, g.pick(["sc-static", "sc-wffc", "sc-ebs", ""]))
        pv = persistent_volume(g, len(pvs), nodes, c)
        complete = g.chance(0.85)
        bind(c, pv, completed=complete)
        g.tag("volume:pvc.bound" if complete else "volume:pvc.bound-incomplete")
        claims.append(c)
        if g.chance(0.93):
            pvs.append(pv)
        else:
            g.tag("volume:pvc.bound-to-missing-pv")
            pvs.append({**pv, "metadata": {**pv["metadata"], "name": f"pv-{len(pvs)}-other"}})
    # Unbound claims: immediate, delayed with a provisioner, delayed without one.
    for i in range(g.rng.randint(0, 3)):
        cls = g.pick(["sc-immediate", "sc-wffc", "sc-static", "sc-static", "sc-ebs", "sc-missing"])
        claims.append(claim(g, f"claim-{i}", ns, cls))
        g.tag(f"volume:pvc.unbound.{cls}")
    # Available volumes for the delayed claims, some made to match one.
    delayed = [
        c
        for c in claims
        if c["spec"].get("storageClassName") in ("sc-static", "sc-wffc", "sc-ebs")
        and not c["spec"].get("volumeName")
    ]
    for _ in range(g.rng.randint(0, 4)):
        pv = persistent_volume(g, len(pvs), nodes, None)
        if delayed and g.chance(0.6):
            c = g.pick(delayed)
            pv["spec"]["storageClassName"] = c["spec"]["storageClassName"]
            pv["spec"]["accessModes"] = list(c["spec"]["accessModes"])
            pv["spec"]["capacity"] = {"storage": g.pick(["20Gi", "50Gi", "100Gi"])}
            pv["spec"].pop("claimRef", None)
            g.tag("volume:pv.matches-a-claim")
        pvs.append(pv)
    # The pod's volumes.
    volumes: list[Obj] = []
    used = g.some(claims, 0, min(3, len(claims)))
    for c in used:
        v: Obj = {
            "name": f"v-{c['metadata']['name']}",
            "persistentVolumeClaim": {"claimName": c["metadata"]["name"]},
        }
        if g.chance(0.2):
            v["persistentVolumeClaim"]["readOnly"] = True
        volumes.append(v)
    if g.chance(0.15):
        volumes.append({"name": "v-missing", "persistentVolumeClaim": {"claimName": "nowhere"}})
        g.tag("volume:pvc.missing")
    if g.chance(0.2):
        cls = g.pick(["sc-wffc", "sc-static", "sc-immediate"])
        volumes.append(
            {
                "name": "scratch",
                "ephemeral": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "storageClassName": cls,
                            "resources": {"requests": {"storage": "1Gi"}},
                        }
                    }
                },
            }
        )
        g.tag("volume:ephemeral")
        if g.chance(0.8):
            e = claim(g, f"{pod['metadata']['name']}-scratch", ns, cls, size="1Gi")
            e["spec"]["accessModes"] = ["ReadWriteOnce"]
            if g.chance(0.85):
                e["metadata"]["ownerReferences"] = [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                    }
                ]
            else:
                g.tag("volume:ephemeral.not-owned")
            claims.append(e)
        else:
            g.tag("volume:ephemeral.not-created")
    for i in range(g.rng.randint(0, 2) if g.chance(0.4) else 0):
        volumes.append(inline_disk(g, i))
    if volumes:
        pod["spec"].setdefault("volumes", []).extend(volumes)
        g.tag("pod:volumes")
    # Bound pods using the same claims and disks.
    for p in g.existing:
        if p["metadata"]["namespace"] != ns or not g.chance(0.3):
            continue
        pv_vols: list[Obj] = []
        if claims and g.chance(0.6):
            c = g.pick(claims)
            pv_vols.append(
                {"name": "data", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
            )
            g.tag("existing:pvc")
        if g.chance(0.4):
            pv_vols.append(inline_disk(g, 9))
            g.tag("existing:inline-disk")
        if pv_vols:
            p["spec"]["volumes"] = pv_vols
    return [*objects, *pvs, *claims]


def volume_binding_args(g: Gen) -> Obj:
    g.tag("args:VolumeBinding.bindTimeoutSeconds")
    args: Obj = {"bindTimeoutSeconds": g.pick([0, 1, 30, 600])}
    if g.chance(0.4):
        # The storage capacity score (alpha in v1.36: the case turns its gate on), with
        # the default shape or one of its own.
        g.gates["StorageCapacityScoring"] = True
        g.tag("gate:StorageCapacityScoring")
        if g.chance(0.6):
            points = sorted(g.rng.sample(range(0, 101), g.rng.randint(1, 3)))
            args["shape"] = [{"utilization": u, "score": g.rng.randint(0, 10)} for u in points]
            g.tag("args:VolumeBinding.shape")
    return args
