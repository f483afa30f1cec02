"""A test provisioner: what a CSI external-provisioner does for WaitForFirstConsumer
claims, and nothing more. It stands in for a storage driver in the integration tests; it
is not code under test.

Every ``interval`` it lists the PVCs and, for each claim that

* has no ``spec.volumeName``,
* carries ``volume.kubernetes.io/selected-node`` (the scheduler's choice), and
* belongs to a StorageClass whose ``provisioner`` is this provisioner's name,

creates a PV ``pvc-<claim uid>``: the claim's requested storage and access modes, its
class, ``claimRef`` naming the claim (with its UID), a CSI source of ``driver`` with the
claim UID as handle, and a required node affinity on ``kubernetes.io/hostname`` of the
selected node. The PV controller (kube-controller-manager's
``persistentvolume-binder-controller``) then binds the claim to it, which is what
VolumeBinding's PreBind waits for. Nothing is ever deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ksched.cluster import APIError, ClusterAPI

__all__ = ["SELECTED_NODE", "TestProvisioner"]

log = logging.getLogger(__name__)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"
Obj = dict[str, Any]


class TestProvisioner:
    """``async with TestProvisioner(api, rest, "ksched.test/provisioner"):`` provisions
    while the block runs. ``rest`` is the client's REST client (``request_json``), for
    the PV creation the scheduler-side API does not offer."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        api: ClusterAPI,
        rest: Any,
        name: str,
        *,
        driver: str = "ksched.test.csi",
        interval: float = 0.2,
    ) -> None:
        self.api = api
        self.rest = rest
        self.name = name
        self.driver = driver
        self.interval = interval
        #: Names of the PVs created, in order.
        self.created: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> TestProvisioner:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.sync()
            except APIError as exc:
                log.warning("test provisioner: %s", exc)
            await asyncio.sleep(self.interval)

    async def _mine(self, class_name: str) -> bool:
        try:
            sc = await self.api.get_object(kind="storageclasses", namespace="", name=class_name)
        except APIError:
            return False
        return bool(sc.get("provisioner") == self.name)

    async def sync(self) -> None:
        """One pass over the claims."""
        claims = (await self.api.list(kind="persistentvolumeclaims")).items
        for claim in claims:
            meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
            node = (meta.get("annotations") or {}).get(SELECTED_NODE)
            class_name = spec.get("storageClassName")
            if spec.get("volumeName") or not node or not class_name:
                continue
            name = f"pvc-{meta['uid']}"
            if name in self.created or not await self._mine(class_name):
                continue
            await self._create(claim, name, node, class_name)

    async def _create(self, claim: Obj, name: str, node: str, class_name: str) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        pv: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": self.name},
            },
            "spec": {
                "capacity": {"storage": storage},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "storageClassName": class_name,
                "persistentVolumeReclaimPolicy": "Retain",
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": {"driver": self.driver, "volumeHandle": meta["uid"]},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": HOSTNAME, "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
        try:
            await self.rest.request_json("POST", "/api/v1/persistentvolumes", body=pv)
        except APIError as exc:
            if exc.status != 409:  # already exists: created by an earlier pass
                raise
        self.created.append(name)
        log.info("test provisioner: created %s for %s/%s on %s", name, *meta_of(claim), node)


def meta_of(obj: Obj) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace") or ""), str(m.get("name") or "")
