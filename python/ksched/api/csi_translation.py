"""In-tree volume plugins and the CSI drivers they migrate to (``k8s.io/csi-translation-lib``).

kube-scheduler translates in-tree volumes to CSI in two places, and this module
reproduces exactly what those two places read of the translation:

* NodeVolumeLimits counts in-tree volumes (inline, or through their PV or their class's
  provisioner) against the CSI driver they migrate to, as ``driver/volumeHandle``, for the
  plugins it considers migrated (``isCSIMigrationOn``: AWS EBS, GCE PD, Azure Disk,
  Cinder, Portworx);
* VolumeBinding checks a bound in-tree PV's node affinity *after* translation on nodes
  whose CSINode lists the plugin in ``storage.alpha.kubernetes.io/migrated-plugins``:
  GCE PD, AWS EBS and Cinder rewrite the zone key (``topology.gke.io/zone``,
  ``topology.ebs.csi.aws.com/zone``, ``topology.cinder.csi.openstack.org/zone``), taking
  it from the PV's zone label when the affinity has none, and move a beta region key to
  the GA one.

Only the parts that decide those values are ported (driver names, volume handles, node
affinity), with the library's error messages; storage class parameter translation and
the reverse direction are not needed by the scheduler. Hand-written because no Python
package carries these rules; the code follows the Go source function by function.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlparse

__all__ = [
    "MIGRATION_ON",
    "PLUGINS",
    "TranslationError",
    "counted_inline_volume",
    "csi_driver_of_plugin",
    "inline_plugin",
    "is_migratable_plugin",
    "pv_plugin",
    "translate_inline",
    "translate_pv",
]

Obj = dict[str, Any]

LABEL_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_REGION: Final = "topology.kubernetes.io/region"
LABEL_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
_MULTI_ZONE_DELIMITER: Final = "__"

GCE_PD: Final = "kubernetes.io/gce-pd"
AWS_EBS: Final = "kubernetes.io/aws-ebs"
CINDER: Final = "kubernetes.io/cinder"
AZURE_DISK: Final = "kubernetes.io/azure-disk"
AZURE_FILE: Final = "kubernetes.io/azure-file"
VSPHERE: Final = "kubernetes.io/vsphere-volume"
PORTWORX: Final = "kubernetes.io/portworx-volume"

#: In-tree plugin → ``(volume source field, CSI driver)``, as the library's table.
PLUGINS: Final[Mapping[str, tuple[str, str]]] = {
    GCE_PD: ("gcePersistentDisk", "pd.csi.storage.gke.io"),
    AWS_EBS: ("awsElasticBlockStore", "ebs.csi.aws.com"),
    CINDER: ("cinder", "cinder.csi.openstack.org"),
    AZURE_DISK: ("azureDisk", "disk.csi.azure.com"),
    AZURE_FILE: ("azureFile", "file.csi.azure.com"),
    VSPHERE: ("vsphereVolume", "csi.vsphere.vmware.com"),
    PORTWORX: ("portworxVolume", "pxd.portworx.com"),
}

#: The plugins kube-scheduler treats as migrated (``isCSIMigrationOn`` in
#: nodevolumelimits, ``isCSIMigrationOnForPlugin`` in volumebinding).
MIGRATION_ON: Final = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX})

_TOPOLOGY_KEYS: Final = {
    GCE_PD: "topology.gke.io/zone",
    AWS_EBS: "topology.ebs.csi.aws.com/zone",
    CINDER: "topology.cinder.csi.openstack.org/zone",
}

_GCE_ZONAL: Final = "projects/{}/zones/{}/disks/{}"
_GCE_REGIONAL: Final = "projects/{}/regions/{}/disks/{}"
_UNSPECIFIED: Final = "UNSPECIFIED"
_AWS_VOLUME_RE: Final = re.compile(r"^vol-[^/]*$")


class TranslationError(Exception):
    """The library's translation failed; the message is its error text."""


def _source(obj: Obj, key: str) -> Obj | None:
    s = obj.get(key)
    return s if isinstance(s, dict) else None


def is_migratable_plugin(name: str) -> bool:
    """``IsMigratableIntreePluginByName``."""
    return name in PLUGINS


def csi_driver_of_plugin(name: str) -> str:
    """``GetCSINameFromInTreeName`` (the plugin must be migratable)."""
    return PLUGINS[name][1]


def inline_plugin(vol: Obj) -> str | None:
    """The in-tree plugin of an inline volume, when it migrates (``IsInlineMigratable``)."""
    for plugin, (field, _) in PLUGINS.items():
        if _source(vol, field) is not None:
            return plugin
    return None


def pv_plugin(pv: Obj) -> str | None:
    """The in-tree plugin of a PV, when it migrates (``IsPVMigratable``)."""
    spec = pv.get("spec")
    if not isinstance(spec, dict):
        return None
    for plugin, (field, _) in PLUGINS.items():
        if _source(spec, field) is not None:
            return plugin
    return None


def _ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {exc}") from None
    if url.scheme != "aws":
        raise TranslationError(f"Invalid scheme for AWS volume ({kubernetes_id})")
    aws_id = url.path.strip("/")
    if not _AWS_VOLUME_RE.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _ebs_handle(volume_id: str) -> str:
    try:
        return _ebs_volume_id(volume_id)
    except TranslationError as exc:
        raise TranslationError(
            f"failed to translate Kubernetes ID to EBS Volume ID {exc}"
        ) from None


def _azure_managed(src: Obj) -> None:
    kind = src.get("kind")
    if kind is not None and str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


def translate_inline(vol: Obj) -> tuple[str, str]:
    """``(driver, volumeHandle)`` of an inline volume of a migratable plugin
    (``TranslateInTreeInlineVolumeToCSI``); raises :class:`TranslationError`."""
    plugin = inline_plugin(vol)
    if plugin is None:
        raise TranslationError(
            f"could not find in-tree plugin translation logic for {vol.get('name')!r}"
        )
    field, driver = PLUGINS[plugin]
    src = _source(vol, field) or {}
    if plugin == GCE_PD:
        return driver, _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, src.get("pdName") or "")
    if plugin == AWS_EBS:
        return driver, _ebs_handle(str(src.get("volumeID") or ""))
    if plugin == AZURE_DISK:
        _azure_managed(src)
        return driver, str(src.get("diskURI") or "")
    if plugin in (CINDER, PORTWORX):
        return driver, str(src.get("volumeID") or "")
    if plugin == VSPHERE:
        return driver, str(src.get("volumePath") or "")
    # Azure File: "#<account>#<share>#<volume>#<secret namespace>"; only its driver is
    # ever read by the scheduler (azure-file is not counted as migrated).
    return driver, ""


def counted_inline_volume(vol: Obj) -> tuple[str, str] | None:
    """``(driver, handle)`` NodeVolumeLimits counts for an inline volume on a node with a
    CSINode, or None (not migratable, not counted, or its translation fails: see
    :func:`translate_inline` for the error)."""
    plugin = inline_plugin(vol)
    if plugin is None or plugin not in MIGRATION_ON:
        return None
    try:
        return translate_inline(vol)
    except TranslationError:
        return None


# ---- PVs -------------------------------------------------------------------------------


def _gce_region(zones: list[str]) -> str:
    regions: set[str] = set()
    if not zones:
        raise TranslationError("no zones specified")
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        shown = " ".join(f"{r}:{{}}" for r in sorted(regions))
        raise TranslationError(f"multiple or no regions gotten from zones, got: map[{shown}]")
    return next(iter(regions))


def _labels(pv: Obj) -> dict[str, Any]:
    meta = pv.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _gce_handle(pv: Obj, src: Obj) -> str:
    labels = _labels(pv)
    zones_label = str(labels.get(LABEL_BETA_ZONE) or "") or str(labels.get(LABEL_ZONE) or "")
    zones = zones_label.split(_MULTI_ZONE_DELIMITER)
    name = src.get("pdName") or ""
    if len(zones) == 1 and zones[0]:
        return _GCE_ZONAL.format(_UNSPECIFIED, zones[0], name)
    if len(zones) > 1:
        try:
            region = _gce_region(zones)
        except TranslationError as exc:
            raise TranslationError(f"failed to get region from zones: {exc}") from None
        return _GCE_REGIONAL.format(_UNSPECIFIED, region, name)
    return _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, name)


def _required_terms(pv: Obj) -> list[Obj] | None:
    spec = pv.get("spec") or {}
    na = spec.get("nodeAffinity") if isinstance(spec, dict) else None
    req = na.get("required") if isinstance(na, dict) else None
    if not isinstance(req, dict):
        return None
    terms = req.get("nodeSelectorTerms")
    return terms if isinstance(terms, list) else None


def _key_exists(pv: Obj, key: str) -> bool:
    """``TopologyKeyExist`` on the PV's node affinity."""
    for term in _required_terms(pv) or []:
        for r in (term or {}).get("matchExpressions") or []:
            if isinstance(r, dict) and r.get("key") == key:
                return True
    return False


def _topology_label(pv: Obj) -> tuple[str, str]:
    """``getTopologyLabel``: the zone and region keys the PV uses."""
    if _key_exists(pv, LABEL_ZONE):
        return LABEL_ZONE, LABEL_REGION
    if _key_exists(pv, LABEL_BETA_ZONE):
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    labels = _labels(pv)
    if LABEL_ZONE in labels:
        return LABEL_ZONE, LABEL_REGION
    if LABEL_BETA_ZONE in labels:
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    return LABEL_ZONE, LABEL_REGION


def _topology_values(terms: list[Obj] | None, key: str) -> list[str]:
    values: set[str] = set()
    for term in terms or []:
        for r in (term or {}).get("matchExpressions") or []:
            if isinstance(r, dict) and r.get("key") == key:
                values.update(str(v) for v in r.get("values") or [])
    return sorted(values)


def _replace_key(terms: list[Obj], old: str, new: str) -> list[Obj]:
    out: list[Obj] = []
    for term in terms:
        t = dict(term or {})
        exprs = []
        for r in t.get("matchExpressions") or []:
            if isinstance(r, dict) and r.get("key") == old:
                r = {**r, "key": new}
            exprs.append(r)
        if "matchExpressions" in t:
            t["matchExpressions"] = exprs
        out.append(t)
    return out


def _translated_affinity(pv: Obj, csi_key: str) -> Obj | None:
    """``translateTopologyFromInTreeToCSI``: the PV's ``nodeAffinity.required`` after
    translation (None: the PV has none)."""
    terms = _required_terms(pv)
    zone_label, region_label = _topology_label(pv)
    zones = _topology_values(terms, zone_label)
    if zones:
        terms = _replace_key(terms or [], zone_label, csi_key)
    else:
        label = _labels(pv).get(zone_label)
        if label is not None:
            parts = str(label).split(_MULTI_ZONE_DELIMITER)
            kept = sorted({z.strip() for z in parts if z.strip()})
            if kept:  # addTopology ignores an empty list (it only returns an error)
                terms = [dict(t or {}) for t in terms] if terms else [{}]
                for t in terms:
                    t["matchExpressions"] = [
                        *(t.get("matchExpressions") or []),
                        {"key": csi_key, "operator": "In", "values": kept},
                    ]
    if region_label == LABEL_BETA_REGION and _topology_values(terms, region_label):
        terms = _replace_key(terms or [], region_label, LABEL_REGION)
    return None if terms is None else {"nodeSelectorTerms": terms}


def translate_pv(pv: Obj) -> tuple[str, str, Obj | None]:
    """``(driver, volumeHandle, nodeAffinity.required)`` of a migratable in-tree PV after
    ``TranslateInTreePVToCSI``; raises :class:`TranslationError`."""
    plugin = pv_plugin(pv)
    name = (pv.get("metadata") or {}).get("name")
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {name!r}")
    field, driver = PLUGINS[plugin]
    src = _source(pv.get("spec") or {}, field) or {}
    required = pv.get("spec", {}).get("nodeAffinity", {}) or {}
    affinity = required.get("required") if isinstance(required, dict) else None
    if plugin == GCE_PD:
        return driver, _gce_handle(pv, src), _translated_affinity(pv, _TOPOLOGY_KEYS[GCE_PD])
    if plugin == AWS_EBS:
        handle = _ebs_handle(str(src.get("volumeID") or ""))
        return driver, handle, _translated_affinity(pv, _TOPOLOGY_KEYS[AWS_EBS])
    if plugin == CINDER:
        handle = str(src.get("volumeID") or "")
        return driver, handle, _translated_affinity(pv, _TOPOLOGY_KEYS[CINDER])
    if plugin == AZURE_DISK:
        _azure_managed(src)
        return driver, str(src.get("diskURI") or ""), affinity
    if plugin == PORTWORX:
        return driver, str(src.get("volumeID") or ""), affinity
    if plugin == VSPHERE:
        return driver, str(src.get("volumePath") or ""), affinity
    return driver, "", affinity
