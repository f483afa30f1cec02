"""What kube-controller-manager's PV controller and a dynamic provisioner do for the
claims a scheduler binds, on the embedded cluster (:class:`~ksched.sim.InMemoryCluster`).

VolumeBinding's PreBind only *starts* a volume binding (upstream too): it writes the
chosen PersistentVolume's ``claimRef``, or the ``volume.kubernetes.io/selected-node``
annotation of a claim to provision, and then waits until the claim is fully bound
(``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``). A real cluster's
controllers finish the job; the embedded cluster has none, so
:class:`~ksched.testing.EmbeddedScheduler` and ``ksched replay`` run :func:`run` (a
:func:`sync` every few milliseconds) beside the scheduler:

* a claim whose StorageClass names a provisioner (anything but
  ``kubernetes.io/no-provisioner``) and that carries the selected-node annotation gets a
  PV ``pvc-<claim uid>``: the claim's requested storage, access modes and class, a
  ``claimRef`` with the claim's uid, a ``hostPath`` source and a required node affinity
  on ``kubernetes.io/hostname`` of the selected node (as a node-local CSI driver would
  provision it);
* a PV whose ``claimRef`` names a claim that exists (with that uid, when it has one)
  binds it: the claim gets ``spec.volumeName``, ``pv.kubernetes.io/bind-completed`` and
  ``pv.kubernetes.io/bound-by-controller`` and phase ``Bound``; the PV gets the claim's
  uid and phase ``Bound``.

Nothing is deleted or released; a claim bound already is left alone.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from ksched.sim.cluster import InMemoryCluster

__all__ = ["NO_PROVISIONER", "run", "sync"]

Obj = dict[str, Any]

NO_PROVISIONER = "kubernetes.io/no-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
HOSTNAME = "kubernetes.io/hostname"


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _spec(obj: Obj) -> Obj:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def _provisioned_volume(claim: Obj, node: str) -> Obj:
    meta, spec = _meta(claim), _spec(claim)
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pvc-{meta.get('uid')}"},
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": spec.get("storageClassName") or "",
            "persistentVolumeReclaimPolicy": "Delete",
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta.get("namespace"),
                "name": meta.get("name"),
                "uid": meta.get("uid"),
            },
            "hostPath": {"path": f"/mnt/pvc-{meta.get('uid')}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
        "status": {"phase": "Available"},
    }


def sync(api: InMemoryCluster) -> int:
    """One pass of provisioning and binding (see the module docstring); returns the
    number of objects written."""
    written = 0
    classes = {_meta(sc).get("name"): sc for sc in api.objects("storageclasses")}
    volumes = {_meta(pv).get("name"): pv for pv in api.objects("persistentvolumes")}
    claims = {
        f"{_meta(c).get('namespace')}/{_meta(c).get('name')}": c
        for c in api.objects("persistentvolumeclaims")
    }
    for claim in claims.values():
        spec = _spec(claim)
        node = (_meta(claim).get("annotations") or {}).get(SELECTED_NODE)
        sc = classes.get(spec.get("storageClassName"))
        if spec.get("volumeName") or not node or sc is None:
            continue
        if sc.get("provisioner") in ("", None, NO_PROVISIONER):
            continue
        pv = _provisioned_volume(claim, str(node))
        if _meta(pv)["name"] not in volumes:
            volumes[_meta(pv)["name"]] = api.create("persistentvolumes", pv)
            written += 1
    for name, pv in volumes.items():
        ref = _spec(pv).get("claimRef")
        if not isinstance(ref, dict):
            continue
        bound = claims.get(f"{ref.get('namespace')}/{ref.get('name')}")
        if bound is None:
            continue
        claim = bound
        uid = _meta(claim).get("uid")
        if ref.get("uid") not in (None, "", uid):
            continue  # a claim of that name that is not the one the volume was bound to
        cspec = _spec(claim)
        if cspec.get("volumeName") not in (None, "", name):
            continue  # the claim is bound to another volume
        annotations = _meta(claim).get("annotations") or {}
        if (
            cspec.get("volumeName") != name
            or BIND_COMPLETED not in annotations
            or (claim.get("status") or {}).get("phase") != "Bound"
        ):
            updated = copy.deepcopy(claim)
            updated["spec"]["volumeName"] = name
            anns = updated["metadata"].setdefault("annotations", {})
            anns[BIND_COMPLETED] = "yes"
            anns.setdefault(BOUND_BY_CONTROLLER, "yes")
            updated.setdefault("status", {})["phase"] = "Bound"
            api.update("persistentvolumeclaims", updated)
            written += 1
        if ref.get("uid") != uid or (pv.get("status") or {}).get("phase") != "Bound":
            updated = copy.deepcopy(pv)
            updated["spec"]["claimRef"]["uid"] = uid
            updated.setdefault("status", {})["phase"] = "Bound"
            api.update("persistentvolumes", updated)
            written += 1
    return written


async def run(api: InMemoryCluster, interval: float = 0.005) -> None:
    """:func:`sync` every ``interval`` seconds, until cancelled."""
    while True:
        sync(api)
        await asyncio.sleep(interval)
