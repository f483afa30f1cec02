"""upstream volumebinding test fixtures (binder_test.go, test_utils.go), as API dicts.

Names follow the Go variables (``unboundPVC`` is :data:`UNBOUND_PVC`...), so a ported
table reads like the original. Every claim is in ``testns`` with UID ``pvc-uid`` and
filesystem volume mode; PVs carry node affinity on the ``nodeKey`` label.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.plugins.volume_harness import storage_class

Obj = dict[str, Any]

PROVISIONER = "test-provisioner"
NODE_LABEL_KEY = "nodeKey"
NODE_LABEL_VALUE = "node1"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"

WAIT_CLASS = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
WAIT_CLASS_WITH_PROVISIONER = "waitClassWithProvisioner"
TOPO_MISMATCH_CLASS = "topoMismatchClass"

PVC_UNBOUND, PVC_PREBOUND, PVC_BOUND, PVC_SELECTED_NODE = range(4)


def make_test_pvc(
    name: str,
    size: str,
    node: str,
    state: int,
    pv_name: str,
    rv: str,
    class_name: str | None,
    *,
    namespace: str = "testns",
) -> Obj:
    """upstream ``makeTestPVC``."""
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": "pvc-uid",
        "resourceVersion": rv,
    }
    spec: Obj = {"resources": {"requests": {"storage": size}}, "volumeMode": "Filesystem"}
    if class_name is not None:
        spec["storageClassName"] = class_name
    annotations: dict[str, str] = {}
    if state == PVC_SELECTED_NODE:
        annotations[SELECTED_NODE] = node
    if state == PVC_BOUND:
        annotations[BIND_COMPLETED] = "yes"
    if state in (PVC_BOUND, PVC_PREBOUND):
        spec["volumeName"] = pv_name
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def node_affinity(node: str, key: str = NODE_LABEL_KEY) -> Obj:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [node]}]}
            ]
        }
    }


def make_test_pv(
    name: str, node: str, capacity: str, rv: str, bound_to: Obj | None, class_name: str
) -> Obj:
    """upstream ``makeTestPV``."""
    meta: Obj = {"name": name, "resourceVersion": rv}
    spec: Obj = {
        "capacity": {"storage": capacity},
        "storageClassName": class_name,
        "volumeMode": "Filesystem",
    }
    if node:
        spec["nodeAffinity"] = node_affinity(node)
    if bound_to is not None:
        m = bound_to["metadata"]
        spec["claimRef"] = {
            "kind": bound_to.get("kind", ""),
            "apiVersion": bound_to.get("apiVersion", ""),
            "resourceVersion": m.get("resourceVersion", ""),
            "name": m["name"],
            "namespace": m["namespace"],
            "uid": m.get("uid", ""),
        }
        meta["annotations"] = {BOUND_BY_CONTROLLER: "yes"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Available"},
    }


def with_rv(obj: Obj, rv: str) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = rv
    return out


def selected(pvc: Obj, node: str = NODE_LABEL_VALUE) -> Obj:
    """upstream ``addProvisionAnn`` / ``pvcSetSelectedNode``."""
    out = copy.deepcopy(pvc)
    out["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node
    return out


def empty_annotations(pvc: Obj) -> Obj:
    out = copy.deepcopy(pvc)
    out["metadata"]["annotations"] = {}
    return out


def without_claim_uid(pv: Obj) -> Obj:
    out = copy.deepcopy(pv)
    out["spec"]["claimRef"]["uid"] = ""
    return out


UNBOUND_PVC = make_test_pvc("unbound-pvc", "1G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
UNBOUND_PVC2 = make_test_pvc("unbound-pvc2", "5G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
PREBOUND_PVC = make_test_pvc("prebound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1", WAIT_CLASS)
PREBOUND_PVC_NODE1A = make_test_pvc(
    "unbound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1", WAIT_CLASS
)
BOUND_PVC = make_test_pvc("bound-pvc", "1G", "", PVC_BOUND, "pv-bound", "1", WAIT_CLASS)
BOUND_PVC_NODE1A = make_test_pvc("unbound-pvc", "1G", "", PVC_BOUND, "pv-node1a", "1", WAIT_CLASS)
IMMEDIATE_UNBOUND_PVC = make_test_pvc(
    "immediate-unbound-pvc", "1G", "", PVC_UNBOUND, "", "1", IMMEDIATE_CLASS
)
IMMEDIATE_BOUND_PVC = make_test_pvc(
    "immediate-bound-pvc", "1G", "", PVC_BOUND, "pv-bound-immediate", "1", IMMEDIATE_CLASS
)
PROVISIONED_PVC = make_test_pvc(
    "provisioned-pvc", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
PROVISIONED_PVC2 = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
PROVISIONED_PVC_HIGHER_VERSION = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "", "2", WAIT_CLASS_WITH_PROVISIONER
)
PROVISIONED_PVC_BOUND = make_test_pvc(
    "provisioned-pvc", "1Gi", "", PVC_BOUND, "pv-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)
NO_PROVISIONER_PVC = make_test_pvc(
    "no-provisioner-pvc", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS
)
TOPO_MISMATCH_PVC = make_test_pvc(
    "topo-mismatch-pvc", "1Gi", "", PVC_UNBOUND, "", "1", TOPO_MISMATCH_CLASS
)
SELECTED_NODE_PVC = make_test_pvc(
    "provisioned-pvc",
    "1Gi",
    NODE_LABEL_VALUE,
    PVC_SELECTED_NODE,
    "",
    "1",
    WAIT_CLASS_WITH_PROVISIONER,
)
BOUND_MIGRATION_PVC = make_test_pvc(
    "pvc-migration-bound", "1G", "", PVC_BOUND, "pv-migration-bound", "1", WAIT_CLASS
)
PROV_MIGRATION_PVC_BOUND = make_test_pvc(
    "pvc-migration-provisioned",
    "1Gi",
    "",
    PVC_BOUND,
    "pv-migration-bound",
    "1",
    WAIT_CLASS_WITH_PROVISIONER,
)


def generic_ephemeral_pvc(volume: str, owned: bool) -> Obj:
    """upstream ``makeGenericEphemeralPVC`` (for pod ``test-pod`` in ``testns``)."""
    pvc = make_test_pvc(f"test-pod-{volume}", "1G", "", PVC_BOUND, "pv-bound", "1", IMMEDIATE_CLASS)
    if owned:
        pvc["metadata"]["ownerReferences"] = [
            {"name": "test-pod", "uid": "uid-testns-test-pod", "controller": True}
        ]
    return pvc


CONFLICTING_GENERIC_PVC = generic_ephemeral_pvc("test-volume", False)
CORRECT_GENERIC_PVC = generic_ephemeral_pvc("test-volume", True)
PV_BOUND_GENERIC = make_test_pv("pv-bound", "node1", "1G", "1", CORRECT_GENERIC_PVC, WAIT_CLASS)

PV_NODE1A = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
PV_NODE1B = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
PV_NODE1C = make_test_pv("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
PV_NODE2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
PV_BOUND = make_test_pv("pv-bound", "node1", "1G", "1", BOUND_PVC, WAIT_CLASS)
PV_NODE1A_BOUND = make_test_pv("pv-node1a", "node1", "5G", "1", UNBOUND_PVC, WAIT_CLASS)
PV_NODE1B_BOUND = make_test_pv("pv-node1b", "node1", "10G", "1", UNBOUND_PVC2, WAIT_CLASS)
PV_NODE1B_BOUND_HIGHER_VERSION = make_test_pv(
    "pv-node1b", "node1", "10G", "2", UNBOUND_PVC2, WAIT_CLASS
)
PV_BOUND_IMMEDIATE = make_test_pv(
    "pv-bound-immediate", "node1", "1G", "1", IMMEDIATE_BOUND_PVC, IMMEDIATE_CLASS
)
PV_BOUND_IMMEDIATE_NODE2 = make_test_pv(
    "pv-bound-immediate", "node2", "1G", "1", IMMEDIATE_BOUND_PVC, IMMEDIATE_CLASS
)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def migration_pv(labels: dict[str, str], pvc: Obj, migration: bool) -> Obj:
    """upstream ``makeTestPVForCSIMigration``: GCE PD (migrates) or RBD (does not)."""
    pv = make_test_pv("pv-migration-bound", "node1", "1G", "1", pvc, WAIT_CLASS)
    del pv["spec"]["nodeAffinity"]
    pv["metadata"]["labels"] = dict(labels)
    if migration:
        pv["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4"}
    else:
        pv["spec"]["rbd"] = {"image": "test-disk"}
    return pv


MIGRATION_PV_BOUND = migration_pv(ZONE1_LABELS, BOUND_MIGRATION_PVC, True)
MIGRATION_PV_BOUND_TO_UNBOUND = migration_pv(ZONE1_LABELS, UNBOUND_PVC, True)
NONMIGRATION_PV_BOUND_TO_UNBOUND = migration_pv(ZONE1_LABELS, UNBOUND_PVC, False)


def make_node(name: str, labels: dict[str, str] | None = None) -> Obj:
    """A harness node carrying only ``labels`` (upstream's binder nodes have no
    hostname label)."""
    from tests.plugins.harness import node

    return node(name, labels or {})


NODE1 = {NODE_LABEL_KEY: "node1"}
NODE2 = {NODE_LABEL_KEY: "node2"}
NODE1_ZONE1 = {"topology.gke.io/zone": "us-east-1"}
NODE1_ZONE2 = {"topology.gke.io/zone": "us-east-2"}


def csi_node_migrated(name: str, plugin: str) -> Obj:
    """upstream ``makeCSINode``: only the migrated-plugins annotation."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": plugin},
        },
        "spec": {"drivers": []},
    }


CSI_NODE1_MIGRATED = csi_node_migrated("node1", "kubernetes.io/gce-pd")
CSI_NODE1_NOT_MIGRATED = csi_node_migrated("node1", "")


def binder_classes() -> list[Obj]:
    """The classes upstream's ``newTestBinder`` adds."""
    allowed = [
        {
            "matchLabelExpressions": [
                {"key": NODE_LABEL_KEY, "values": [NODE_LABEL_VALUE, "reference-value"]}
            ]
        }
    ]
    mismatch = [{"matchLabelExpressions": [{"key": NODE_LABEL_KEY, "values": ["reference-value"]}]}]
    return [
        storage_class(
            WAIT_CLASS_WITH_PROVISIONER,
            mode="WaitForFirstConsumer",
            provisioner=PROVISIONER,
            allowed_topologies=allowed,
        ),
        storage_class(IMMEDIATE_CLASS, mode="Immediate", provisioner=""),
        storage_class(WAIT_CLASS, mode="WaitForFirstConsumer"),
        storage_class(
            TOPO_MISMATCH_CLASS,
            mode="WaitForFirstConsumer",
            provisioner=PROVISIONER,
            allowed_topologies=mismatch,
        ),
    ]


def make_capacity(
    name: str, class_name: str, node: dict[str, str] | None, capacity: str, max_size: str
) -> Obj:
    """upstream ``makeCapacity``: ``node`` is the node's labels (None: network
    attached, an empty selector)."""
    topology: Obj = {}
    if node is not None:
        topology["matchLabels"] = {NODE_LABEL_KEY: node[NODE_LABEL_KEY]}
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": class_name,
        "nodeTopology": topology,
    }
    if capacity:
        obj["capacity"] = capacity
    if max_size:
        obj["maximumVolumeSize"] = max_size
    return obj


NETWORK_ATTACHED_CAPACITY = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi", "")
NODE1_CAPACITY = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Gi", "")
NODE2_CAPACITY = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE2, "1Gi", "")


def csi_driver(name: str, storage_capacity: bool) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity},
    }
