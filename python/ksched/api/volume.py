"""Pod volumes, claims and volumes as the volume plugins read them.

Objects stay the API's JSON dicts (as the shared informers hold them); this module
reads them with upstream's helpers' rules (``component-helpers/storage/volume`` and
``storage/ephemeral``):

* a claim's class is the beta ``volume.beta.kubernetes.io/storage-class`` annotation
  when present (even empty), else ``spec.storageClassName`` (``GetPersistentVolumeClaimClass``);
  a PV's likewise from its annotation or ``spec.storageClassName``;
* a generic ephemeral volume's claim is named ``<pod>-<volume>`` and must be controlled
  by the pod (``VolumeIsForPod``);
* a PV is bound to a claim when its ``claimRef`` names the claim's namespace and name,
  and the claim's UID when the ref carries one (``IsVolumeBoundToClaim``).

:func:`volume_spec` condenses a pod's ``spec.volumes`` into what the Rust kernels keep of
every pod (``CompiledPod(volumes=...)``): the claims it names, the in-tree disks
VolumeRestrictions compares, and the in-tree inline volumes NodeVolumeLimits counts as
CSI volumes. Malformed entries (not objects) are skipped: the API server validates
volumes, and a pod is never refused for one here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from ksched.api import csi_translation
from ksched.api.pod import Pod

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "MIGRATED_PLUGINS_ANNOTATION",
    "NOT_SUPPORTED_PROVISIONER",
    "Obj",
    "access_modes",
    "annotations_of",
    "check_node_affinity",
    "claim_class",
    "claim_csi_volume",
    "claim_key",
    "disks_conflict",
    "has_disk",
    "has_volumes",
    "is_volume_bound_to_claim",
    "label_selector_matches",
    "not_found",
    "pod_claim_names",
    "pod_disks",
    "pod_volumes",
    "pv_class",
    "storage_request_nanos",
    "volume_claim_name",
    "volume_is_for_pod",
    "volume_spec",
]

Obj = dict[str, Any]

ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION: Final = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"

#: Volume sources VolumeRestrictions checks for conflicts (``needsRestrictionsCheck``).
DISK_SOURCES: Final = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _spec(obj: Obj) -> Obj:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def annotations_of(obj: Obj) -> dict[str, Any]:
    a = _meta(obj).get("annotations")
    return a if isinstance(a, dict) else {}


def has_volumes(pod: Pod) -> bool:
    """Whether the pod lists any ``spec.volumes`` (the cheap test before
    :func:`pod_volumes`, on the path of every pod)."""
    return bool((pod.raw.get("spec") or {}).get("volumes"))


def pod_volumes(pod: Pod) -> Iterator[Obj]:
    """The pod's ``spec.volumes`` entries that are objects."""
    vols = (pod.raw.get("spec") or {}).get("volumes")
    if not isinstance(vols, list):
        return
    for v in vols:
        if isinstance(v, dict):
            yield v


def _source(vol: Obj, key: str) -> Obj | None:
    s = vol.get(key)
    return s if isinstance(s, dict) else None


def pvc_claim(vol: Obj) -> str | None:
    """``persistentVolumeClaim.claimName`` of a PVC volume (None for other volumes)."""
    src = _source(vol, "persistentVolumeClaim")
    if src is None:
        return None
    name = src.get("claimName")
    return name if isinstance(name, str) else ""


def volume_claim_name(pod: Pod, vol: Obj) -> str | None:
    """The claim a volume uses: a PVC volume's ``claimName``, a generic ephemeral
    volume's ``<pod>-<volume>`` (``ephemeral.VolumeClaimName``); None otherwise."""
    claim = pvc_claim(vol)
    if claim is not None:
        return claim
    if _source(vol, "ephemeral") is not None:
        return f"{pod.name}-{vol.get('name') or ''}"
    return None


def pod_claim_names(pod: Pod) -> list[str]:
    """Every claim name of the pod's PVC and ephemeral volumes, in spec order."""
    out: list[str] = []
    for vol in pod_volumes(pod):
        name = volume_claim_name(pod, vol)
        if name is not None:
            out.append(name)
    return out


def has_disk(vol: Obj) -> bool:
    return any(_source(vol, k) is not None for k in DISK_SOURCES)


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_class(pvc: Obj) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then the field."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    name = _spec(pvc).get("storageClassName")
    return name if isinstance(name, str) else ""


def claim_has_class_field(pvc: Obj) -> bool:
    return isinstance(_spec(pvc).get("storageClassName"), str)


def pv_class(pv: Obj) -> str:
    """``GetPersistentVolumeClass``: the beta annotation first, then the field."""
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    name = _spec(pv).get("storageClassName")
    return name if isinstance(name, str) else ""


def access_modes(obj: Obj) -> list[str]:
    modes = _spec(obj).get("accessModes")
    return [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []


def storage_request_nanos(pvc: Obj) -> int | None:
    """``spec.resources.requests.storage`` in nano-units, None when not requested."""
    from ksched.api.quantity import parse_quantity_nanos

    res = _spec(pvc).get("resources")
    reqs = res.get("requests") if isinstance(res, dict) else None
    if not isinstance(reqs, dict) or "storage" not in reqs:
        return None
    return parse_quantity_nanos(reqs["storage"], "spec.resources.requests.storage")


def is_volume_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    """``IsVolumeBoundToClaim``."""
    ref = _spec(pv).get("claimRef")
    if not isinstance(ref, dict):
        return False
    meta = _meta(pvc)
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    uid = ref.get("uid") or ""
    return not (uid and uid != meta.get("uid"))


def volume_is_for_pod(pod: Pod, pvc: Obj) -> str | None:
    """``ephemeral.VolumeIsForPod``: None when the claim is controlled by the pod, else
    upstream's error message."""
    meta = _meta(pvc)
    owners = meta.get("ownerReferences")
    controlled = isinstance(owners, list) and any(
        isinstance(o, dict) and o.get("controller") is True and o.get("uid") == pod.uid
        for o in owners
    )
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    if ns != pod.namespace or not controlled:
        return (
            f"PVC {ns}/{name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
        )
    return None


def not_found(resource: str, name: str) -> str:
    """An informer lister's NotFound message (``persistentvolumeclaim "x" not found``,
    ``storageclass.storage.k8s.io "x" not found``)."""
    return f'{resource} "{name}" not found'


def _disk(vol: Obj) -> tuple[str, str, list[str], str, str, bool] | None:
    gce = _source(vol, "gcePersistentDisk")
    if gce is not None:
        return ("gce", str(gce.get("pdName") or ""), [], "", "", gce.get("readOnly") is True)
    ebs = _source(vol, "awsElasticBlockStore")
    if ebs is not None:
        return ("ebs", str(ebs.get("volumeID") or ""), [], "", "", False)
    iscsi = _source(vol, "iscsi")
    if iscsi is not None:
        return ("iscsi", str(iscsi.get("iqn") or ""), [], "", "", iscsi.get("readOnly") is True)
    rbd = _source(vol, "rbd")
    if rbd is not None:
        mons = rbd.get("monitors")
        monitors = [str(m) for m in mons] if isinstance(mons, list) else []
        # The API server defaults pool to "rbd" (as the kubelet reads it too).
        pool = str(rbd.get("pool") or "rbd")
        return ("rbd", "", monitors, pool, str(rbd.get("image") or ""), rbd.get("readOnly") is True)
    return None


def volume_spec(pod: Pod) -> dict[str, Any] | None:
    """What the kernels keep of the pod's volumes (``CompiledPod(volumes=...)``), or
    None when nothing in ``spec.volumes`` concerns them."""
    claims: list[str] = []
    limit_claims: list[str] = []
    disks: list[tuple[str, str, list[str], str, str, bool]] = []
    inline: list[tuple[str, str]] = []
    for vol in pod_volumes(pod):
        claim = pvc_claim(vol)
        if claim is not None:
            claims.append(claim)
            limit_claims.append(claim)
            continue
        if _source(vol, "ephemeral") is not None:
            limit_claims.append(f"{pod.name}-{vol.get('name') or ''}")
            continue
        disk = _disk(vol)
        if disk is not None:
            disks.append(disk)
        counted = csi_translation.counted_inline_volume(vol)
        if counted is not None:
            inline.append(counted)
    if not (claims or limit_claims or disks or inline):
        return None
    return {"claims": claims, "limit_claims": limit_claims, "disks": disks, "inline": inline}


Disk = tuple[str, str, list[str], str, str, bool]


def pod_disks(pod: Pod) -> list[Disk]:
    """The pod's disks VolumeRestrictions checks, as ``(kind, key, monitors, pool,
    image, read_only)``."""
    return [d for d in (_disk(v) for v in pod_volumes(pod)) if d is not None]


def disks_conflict(a: Disk, b: Disk) -> bool:
    """Upstream ``isVolumeConflict`` for one pair of disks."""
    kind, key, mons, pool, image, ro = a
    if kind != b[0]:
        return False
    if kind in ("gce", "iscsi"):
        return key == b[1] and not (ro and b[5])
    if kind == "ebs":
        return key == b[1]
    return bool(set(mons) & set(b[2])) and pool == b[3] and image == b[4] and not (ro and b[5])


def claim_csi_volume(
    pvc: Obj,
    get_pv: Callable[[str], Obj | None],
    get_class: Callable[[str], Obj | None],
    handle_prefix: str,
) -> tuple[str, str] | None:
    """The ``(driver, volume handle)`` NodeVolumeLimits counts a claim as on a node that
    has a CSINode (upstream ``getCSIDriverInfo``), or None when it counts as none.

    A bound claim counts as its PV's CSI volume (an in-tree PV of a migrated plugin as
    its translation); an unbound one (or one whose PV is gone) as a volume of its
    class's provisioner, with a handle made of ``handle_prefix`` and the claim's name.
    """
    meta = _meta(pvc)
    pv_name = _spec(pvc).get("volumeName") or ""
    pv = get_pv(pv_name) if pv_name else None
    if pv is None:
        return _class_csi_volume(pvc, meta, get_class, handle_prefix)
    csi = _spec(pv).get("csi")
    if isinstance(csi, dict):
        driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
    else:
        plugin = csi_translation.pv_plugin(pv)
        if plugin is None or plugin not in csi_translation.MIGRATION_ON:
            return None
        try:
            driver, handle, _ = csi_translation.translate_pv(pv)
        except csi_translation.TranslationError:
            return None
    return (driver, handle) if driver and handle else None


def _class_csi_volume(
    pvc: Obj, meta: Obj, get_class: Callable[[str], Obj | None], prefix: str
) -> tuple[str, str] | None:
    class_name = claim_class(pvc)
    if not class_name:
        return None
    sc = get_class(class_name)
    if sc is None:
        return None
    handle = f"{prefix}-{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    provisioner = str(sc.get("provisioner") or "")
    if csi_translation.is_migratable_plugin(provisioner):
        if provisioner not in csi_translation.MIGRATION_ON:
            return None
        return csi_translation.csi_driver_of_plugin(provisioner), handle
    return (provisioner, handle) if provisioner else None


def _requirement_matches(key: str, op: str, values: list[str], labels: dict[str, str]) -> bool:
    """``labels.Requirement.Matches`` (operators already validated)."""
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    # Gt / Lt: both sides integers.
    if not present:
        return False
    try:
        have, want = int(labels[key]), int(values[0])
    except ValueError:
        return False
    return have > want if op == "Gt" else have < want


_NODE_OPS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _node_term(term: Obj) -> tuple[list[tuple[str, str, list[str]]], str | None]:
    """A node selector term's label requirements, or the reason it does not parse."""
    reqs: list[tuple[str, str, list[str]]] = []
    for r in term.get("matchExpressions") or []:
        if not isinstance(r, dict):
            return [], "invalid requirement"
        key, op = str(r.get("key") or ""), str(r.get("operator") or "")
        values = [str(v) for v in r.get("values") or []]
        if op not in _NODE_OPS:
            return [], f'operator: Unsupported value: "{op}"'
        if (op in ("In", "NotIn") and not values) or (op in ("Exists", "DoesNotExist") and values):
            return [], f"values: Invalid value for operator {op}"
        if op in ("Gt", "Lt"):
            try:
                if len(values) != 1:
                    raise ValueError
                int(values[0])
            except ValueError:
                return [], f"values: Invalid value for operator {op}"
        reqs.append((key, op, values))
    return reqs, None


def check_node_affinity(pv: Obj, node_labels: dict[str, str]) -> str | None:
    """``CheckNodeAffinity``: None when the PV's ``nodeAffinity.required`` admits a node
    with these labels, else why not. As upstream, the node has no name, so
    ``matchFields`` requirements are not compared."""
    na = _spec(pv).get("nodeAffinity")
    required = na.get("required") if isinstance(na, dict) else None
    if not isinstance(required, dict):
        return None
    errors: list[str] = []
    for term in required.get("nodeSelectorTerms") or []:
        if not isinstance(term, dict) or not (
            term.get("matchExpressions") or term.get("matchFields")
        ):
            continue
        reqs, err = _node_term(term)
        if err is not None:
            errors.append(err)
            continue
        if all(_requirement_matches(k, op, vs, node_labels) for k, op, vs in reqs):
            return None
    if errors:
        return errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
    return "no matching NodeSelectorTerms"


def label_selector_matches(selector: Obj, labels: dict[str, Any]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)``; raises ValueError for a
    selector that does not convert."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for r in selector.get("matchExpressions") or []:
        key, op = str(r.get("key") or ""), str(r.get("operator") or "")
        values = [str(v) for v in r.get("values") or []]
        if op in ("In", "NotIn"):
            if not values:
                raise ValueError(
                    "values: Invalid value: for 'in', 'notin' operators, values set can't be empty"
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise ValueError(
                    "values: Invalid value: values set must be empty for exists and does not exist"
                )
        else:
            raise ValueError(f'"{op}" is not a valid label selector operator')
        if not _requirement_matches(key, op, values, {str(a): str(b) for a, b in labels.items()}):
            return False
    return True
