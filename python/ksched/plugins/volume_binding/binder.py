"""The volume binder (upstream ``volumeBinder``): the API-object half of VolumeBinding.

What it does, in the order a pod meets it:

1. PreFilter: :meth:`Binder.pod_has_pvcs` checks the pod's claims exist, are not lost or
   being deleted (and, for generic ephemeral volumes, belong to the pod);
   :meth:`Binder.pod_volume_claims` splits them into bound claims, unbound claims of
   WaitForFirstConsumer classes ("delay binding") and unbound immediate ones (which
   reject the pod); :meth:`Binder.request` turns that into the kernel request: for each
   bound claim its PV's node affinity (and, for an in-tree PV that migrates to CSI, the
   translated one), for each delay claim the PVs that fit it whatever the node (upstream
   ``FindMatchingVolume``'s checks other than node affinity: claim ref, size, volume
   mode, attributes class, deletion, phase, selector, class, access modes), ordered as
   that function picks (a pre-bound PV decides alone, else the smallest, first in list
   order among equals), and whether its class can provision it (provisioner,
   ``allowedTopologies``, the CSIStorageCapacities big enough for it when the driver
   tracks capacity). The claims to match are ordered by ``sort.Sort(byPVCSize)``
   exactly as Go orders them (:mod:`.gosort`). The per-node part runs in Rust
   (``rust/plugins/volume_binding``).
2. Reserve: the node's plan (which PV each claim takes, which claims are provisioned)
   comes back from the kernel; :meth:`Binder.assume_pod_volumes` assumes the PVs with
   their new ``claimRef`` and the claims with ``volume.kubernetes.io/selected-node`` in
   the assume caches (:mod:`.assume_cache`), so the next pods see them.
3. PreBind: :meth:`Binder.bind_pod_volumes` writes them (``update_object``: every PV/PVC
   write goes through the scheduler's API object) and polls every second, up to
   ``bindTimeoutSeconds``, until the PV controller (and the provisioner) completed every
   binding, failing at once when a binding was undone.

Messages are upstream's, word for word.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ksched._core import VolumeBindingRequest
from ksched.api import csi_translation
from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod
from ksched.api.quantity import nanos_to_value, parse_quantity_nanos
from ksched.api.resources import is_label_value, is_qualified_name
from ksched.api.volume import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    MIGRATED_PLUGINS_ANNOTATION,
    NOT_SUPPORTED_PROVISIONER,
    access_modes,
    annotations_of,
    check_node_affinity,
    claim_class,
    claim_key,
    is_volume_bound_to_claim,
    label_selector_matches,
    not_found,
    pod_volumes,
    pv_class,
    pvc_claim,
    volume_claim_name,
    volume_is_for_pod,
)
from ksched.cluster import APIError
from ksched.plugins.volume_binding.assume_cache import AssumeCache, AssumeError
from ksched.plugins.volume_binding.gosort import go_sort

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

__all__ = ["Binder", "BinderError", "PodVolumeClaims", "PodVolumes", "PreFilterData"]

Obj = dict[str, Any]

#: The poll period of PreBind's wait (upstream ``time.Second``).
POLL_INTERVAL: Final = 1.0


class BinderError(Exception):
    """A binder step failed; the message is upstream's error text."""


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _spec(obj: Obj) -> Obj:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _key(obj: Obj) -> str:
    return claim_key(str(_meta(obj).get("namespace") or ""), _name(obj))


def _rv(obj: Obj) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def _nanos(value: Any, what: str, obj: Obj) -> int:
    try:
        return parse_quantity_nanos(value, what)
    except (InvalidObjectError, ValueError) as exc:
        raise BinderError(f"{_key(obj) or _name(obj)}: {what}: {exc}") from None


def _request_nanos(pvc: Obj) -> int:
    """``spec.resources.requests[storage]`` (zero when not set, as a missing map entry)."""
    res = _spec(pvc).get("resources")
    reqs = res.get("requests") if isinstance(res, dict) else None
    if not isinstance(reqs, dict) or "storage" not in reqs:
        return 0
    return _nanos(reqs["storage"], "spec.resources.requests.storage", pvc)


def _capacity_nanos(pv: Obj) -> int:
    cap = _spec(pv).get("capacity")
    if not isinstance(cap, dict) or "storage" not in cap:
        return 0
    return _nanos(cap["storage"], "spec.capacity.storage", pv)


def _volume_mode(spec: Obj) -> str:
    return str(spec.get("volumeMode") or "Filesystem")


def _fully_bound(pvc: Obj) -> bool:
    """``isPVCFullyBound``."""
    return bool(_spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def _required_affinity(pv: Obj) -> Obj | None:
    na = _spec(pv).get("nodeAffinity")
    req = na.get("required") if isinstance(na, dict) else None
    return req if isinstance(req, dict) else None


def _compare_rv(a: Obj, b: Obj) -> int:
    """``APIObjectVersioner.CompareResourceVersion`` (0 when either does not parse)."""
    try:
        x, y = int(_rv(a)), int(_rv(b))
    except ValueError:
        return 0
    return (x > y) - (x < y)


def _topology_terms(sc: Obj) -> list[list[tuple[str, list[str]]] | None]:
    """``allowedTopologies`` as ``(key, values)`` requirements per term; an empty or
    invalid term (``TopologySelectorRequirementsAsSelector`` fails) is None."""
    out: list[list[tuple[str, list[str]]] | None] = []
    for term in sc.get("allowedTopologies") or []:
        exprs = (term or {}).get("matchLabelExpressions") or [] if isinstance(term, dict) else []
        reqs: list[tuple[str, list[str]]] | None = []
        for e in exprs:
            key = str((e or {}).get("key") or "") if isinstance(e, dict) else ""
            values = [str(v) for v in (e or {}).get("values") or []] if isinstance(e, dict) else []
            if not values or not is_qualified_name(key) or not all(map(is_label_value, values)):
                reqs = None
                break
            assert reqs is not None
            reqs.append((key, values))
        out.append(reqs if reqs else None)
    return out


@dataclass(slots=True)
class PodVolumeClaims:
    """upstream ``PodVolumeClaims``."""

    bound: list[Obj] = field(default_factory=list)
    unbound_delay: list[Obj] = field(default_factory=list)
    unbound_immediate: list[Obj] = field(default_factory=list)
    #: class → the PVs of that class (assumed versions included).
    unbound_volumes: dict[str, list[Obj]] = field(default_factory=dict)


@dataclass(slots=True)
class PodVolumes:
    """upstream ``PodVolumes`` for the chosen node: ``(claim, PV)`` bindings and the
    claims to provision (with the CSIStorageCapacity they fit in, when checked)."""

    static: list[tuple[Obj, Obj]] = field(default_factory=list)
    dynamic: list[tuple[Obj, Obj | None]] = field(default_factory=list)


@dataclass(slots=True)
class PreFilterData:
    """What PreFilter found: the kernel request and the objects its indices name."""

    request: VolumeBindingRequest
    delay: list[Obj]
    pvs: list[Obj]
    capacities: list[Obj]

    def pod_volumes(
        self, plan: tuple[list[tuple[int, int]], list[tuple[int, int | None]]]
    ) -> PodVolumes:
        bindings, provisions = plan
        return PodVolumes(
            static=[(self.delay[c], self.pvs[p]) for c, p in bindings],
            dynamic=[
                (self.delay[c], None if cap is None else self.capacities[cap])
                for c, cap in provisions
            ],
        )


class Binder:
    """The binder of one VolumeBinding instance (one per profile, as upstream)."""

    def __init__(self, handle: Handle, bind_timeout: float) -> None:
        self._handle = handle
        self.bind_timeout = bind_timeout
        self.pvcs = handle.informer("persistentvolumeclaims")
        self.pvs = handle.informer("persistentvolumes")
        self.classes = handle.informer("storageclasses")
        self.csinodes = handle.informer("csinodes")
        self.csidrivers = handle.informer("csidrivers")
        self.capacities = handle.informer("csistoragecapacities")
        self.pvc_cache = AssumeCache(self.pvcs, "persistentvolumeclaims")
        self.pv_cache = AssumeCache(self.pvs, "persistentvolumes", index=pv_class)

    # ---- PreFilter -------------------------------------------------------------------

    def pod_has_pvcs(self, pod: Pod) -> tuple[bool, str | None]:
        """upstream ``podHasPVCs``: whether the pod has claims, and the error that makes
        it unschedulable (a missing, lost or deleted claim, or an ephemeral claim that
        is not the pod's)."""
        has = False
        for vol in pod_volumes(pod):
            name = volume_claim_name(pod, vol)
            if name is None:
                continue
            has = True
            ephemeral = pvc_claim(vol) is None
            pvc = self.pvcs.get(pod.namespace, name)
            if pvc is None:
                if ephemeral:
                    return has, (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"'
                    )
                return has, not_found("persistentvolumeclaim", name)
            if ((pvc.get("status") or {}).get("phase")) == "Lost":
                return has, (
                    f'persistentvolumeclaim "{_name(pvc)}" bound to non-existent '
                    f'persistentvolume "{_spec(pvc).get("volumeName") or ""}"'
                )
            if _meta(pvc).get("deletionTimestamp"):
                return has, f'persistentvolumeclaim "{_name(pvc)}" is being deleted'
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    return has, err
        return has, None

    def _volume_bound(self, pod: Pod, vol: Obj) -> tuple[bool, Obj | None]:
        """upstream ``isVolumeBound``: a claim read from the assume cache."""
        name = volume_claim_name(pod, vol)
        if name is None:
            return True, None
        key = claim_key(pod.namespace, name)
        pvc = self.pvc_cache.get(key)
        if pvc is None:
            raise BinderError(f'error getting PVC "{key}": {self.pvc_cache.not_found(key)}')
        if pvc_claim(vol) is None:
            err = volume_is_for_pod(pod, pvc)
            if err is not None:
                raise BinderError(err)
        return _fully_bound(pvc), pvc

    def _delay_binding(self, pvc: Obj) -> bool:
        """``IsDelayBindingMode``."""
        class_name = claim_class(pvc)
        if not class_name:
            return False
        sc = self.classes.get("", class_name)
        if sc is None:
            return False
        mode = sc.get("volumeBindingMode")
        if mode is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return bool(mode == "WaitForFirstConsumer")

    def pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """upstream ``GetPodVolumeClaims``."""
        out = PodVolumeClaims()
        for vol in pod_volumes(pod):
            bound, pvc = self._volume_bound(pod, vol)
            if pvc is None:
                continue
            if bound:
                out.bound.append(pvc)
            elif self._delay_binding(pvc) and not _spec(pvc).get("volumeName"):
                out.unbound_delay.append(pvc)
            else:
                out.unbound_immediate.append(pvc)
        for pvc in out.unbound_delay:
            cls = claim_class(pvc)
            out.unbound_volumes[cls] = self.pv_cache.by_index(cls)
        return out

    def _bound_entry(self, pvc: Obj) -> Obj | None:
        pv = self.pv_cache.get(str(_spec(pvc).get("volumeName") or ""))
        if pv is None:
            return None
        entry: Obj = {"affinity": _required_affinity(pv)}
        plugin = csi_translation.pv_plugin(pv)
        if plugin is not None and plugin in csi_translation.MIGRATION_ON:
            entry["migrated_plugin"] = plugin
            try:
                entry["migrated_affinity"] = csi_translation.translate_pv(pv)[2]
            except csi_translation.TranslationError as exc:
                entry["migrated_error"] = f"could not translate pv: {exc}"
        return entry

    def _candidates(
        self, pvc: Obj, volumes: list[Obj], pv_index: dict[str, int], pvs: list[Obj]
    ) -> tuple[Obj | None, list[Obj]]:
        """``FindMatchingVolume`` without the node: the pre-bound PV, or the PVs that
        fit, smallest first (list order among equals)."""
        spec = _spec(pvc)
        requested = _request_nanos(pvc)
        requested_class = claim_class(pvc)
        claim_vac = spec.get("volumeAttributesClassName") or ""
        claim_modes = access_modes(pvc)
        selector = spec.get("selector")
        fitting: list[tuple[int, int, Obj]] = []

        def index_of(pv: Obj) -> int:
            name = _name(pv)
            if name not in pv_index:
                pv_index[name] = len(pvs)
                pvs.append(pv)
            return pv_index[name]

        for order, pv in enumerate(volumes):
            pv_spec = _spec(pv)
            if pv_spec.get("claimRef") is not None and not is_volume_bound_to_claim(pv, pvc):
                continue
            size = _capacity_nanos(pv)
            if size < requested:
                continue
            if _volume_mode(spec) != _volume_mode(pv_spec):
                continue
            if claim_vac != (pv_spec.get("volumeAttributesClassName") or ""):
                continue
            if _meta(pv).get("deletionTimestamp"):
                continue
            if is_volume_bound_to_claim(pv, pvc):
                return {"pv": index_of(pv), "affinity": _required_affinity(pv)}, []
            if (pv.get("status") or {}).get("phase") != "Available":
                continue
            if isinstance(selector, dict):
                try:
                    if not label_selector_matches(selector, _meta(pv).get("labels") or {}):
                        continue
                except ValueError as exc:
                    raise BinderError(
                        f"error creating internal label selector for claim: {_key(pvc)}: {exc}"
                    ) from None
            if pv_class(pv) != requested_class:
                continue
            modes = set(access_modes(pv))
            if any(m not in modes for m in claim_modes):
                continue
            fitting.append((size, order, pv))
        fitting.sort(key=lambda t: (t[0], t[1]))
        return None, [
            {"pv": index_of(pv), "affinity": _required_affinity(pv)} for _, _, pv in fitting
        ]

    def _provision(self, pvc: Obj, caps: list[Obj], cap_index: dict[str, int]) -> Obj:
        """``checkVolumeProvisions`` without the node."""
        class_name = claim_class(pvc)
        if not class_name:
            return {"error": f'no class for claim "{_key(pvc)}"'}
        sc = self.classes.get("", class_name)
        if sc is None:
            return {"error": f'failed to find storage class "{class_name}"'}
        provisioner = str(sc.get("provisioner") or "")
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return {"supported": False}
        out: Obj = {"supported": True, "topologies": _topology_terms(sc)}
        capacity = self._capacities_for(pvc, sc, provisioner, caps, cap_index)
        if capacity is not None:
            out["capacity"] = capacity
        return out

    def _capacities_for(
        self, pvc: Obj, sc: Obj, provisioner: str, caps: list[Obj], cap_index: dict[str, int]
    ) -> list[tuple[int, Obj | None]] | None:
        """``hasEnoughCapacity`` without the node: None when capacity is not checked,
        else the CSIStorageCapacities of the class big enough for the claim."""
        res = _spec(pvc).get("resources")
        reqs = res.get("requests") if isinstance(res, dict) else None
        if not isinstance(reqs, dict) or "storage" not in reqs:
            return None
        driver = self.csidrivers.get("", provisioner)
        if driver is None or _spec(driver).get("storageCapacity") is not True:
            return None
        size = nanos_to_value(_nanos(reqs["storage"], "spec.resources.requests.storage", pvc))
        out: list[tuple[int, Obj | None]] = []
        for key, cap in self.capacities.store.items():
            if cap.get("storageClassName") != _name(sc):
                continue
            limit = cap.get("maximumVolumeSize")
            if limit is None:
                limit = cap.get("capacity")
            if limit is None or nanos_to_value(_nanos(limit, "capacity", cap)) < size:
                continue
            if key not in cap_index:
                cap_index[key] = len(caps)
                caps.append(cap)
            topology = cap.get("nodeTopology")
            out.append((cap_index[key], topology if isinstance(topology, dict) else None))
        return out

    def request(self, pod: Pod, claims: PodVolumeClaims) -> PreFilterData:
        """The kernel request for the pod's claims (see the module docstring)."""
        pvs: list[Obj] = []
        pv_index: dict[str, int] = {}
        caps: list[Obj] = []
        cap_index: dict[str, int] = {}
        delay: list[Obj] = []
        to_match: list[int] = []
        for i, pvc in enumerate(claims.unbound_delay):
            ann = annotations_of(pvc)
            entry: Obj = {
                "request": nanos_to_value(_request_nanos(pvc)),
                "class": str(_spec(pvc).get("storageClassName") or ""),
                "provision": self._provision(pvc, caps, cap_index),
            }
            if ANN_SELECTED_NODE in ann:
                entry["selected_node"] = str(ann[ANN_SELECTED_NODE])
            else:
                to_match.append(i)
                prebound, candidates = self._candidates(
                    pvc, claims.unbound_volumes.get(claim_class(pvc), []), pv_index, pvs
                )
                entry["prebound"] = prebound
                entry["candidates"] = candidates
            delay.append(entry)
        sizes = {i: _request_nanos(claims.unbound_delay[i]) for i in to_match}
        go_sort(to_match, lambda a, b: sizes[a] < sizes[b])
        request = VolumeBindingRequest(
            bound=[self._bound_entry(pvc) for pvc in claims.bound],
            delay=delay,
            match_order=to_match,
            pvs=[
                (
                    _name(pv),
                    str(_spec(pv).get("storageClassName") or ""),
                    nanos_to_value(_capacity_nanos(pv)),
                )
                for pv in pvs
            ],
            capacities=[
                nanos_to_value(_nanos(c["capacity"], "capacity", c))
                if c.get("capacity") is not None
                else 0
                for c in caps
            ],
        )
        return PreFilterData(request, list(claims.unbound_delay), pvs, caps)

    # ---- Reserve ---------------------------------------------------------------------

    def _all_bound(self, pod: Pod) -> bool:
        """``arePodVolumesBound`` (a lookup error counts as not bound)."""
        for vol in pod_volumes(pod):
            try:
                bound, _ = self._volume_bound(pod, vol)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    @staticmethod
    def bind_volume_to_claim(pv: Obj, pvc: Obj) -> tuple[Obj, bool]:
        """``GetBindVolumeToClaim``: the PV bound to the claim, and whether it changed."""
        should_annotate = not is_volume_bound_to_claim(pv, pvc)
        spec = dict(_spec(pv))
        meta = dict(_meta(pv))
        dirty = False
        ref = spec.get("claimRef")
        cmeta = _meta(pvc)
        if (
            not isinstance(ref, dict)
            or ref.get("name") != cmeta.get("name")
            or ref.get("namespace") != cmeta.get("namespace")
            or (ref.get("uid") or "") != (cmeta.get("uid") or "")
        ):
            spec["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "namespace": cmeta.get("namespace") or "",
                "name": cmeta.get("name") or "",
                "uid": cmeta.get("uid") or "",
                "apiVersion": "v1",
                "resourceVersion": cmeta.get("resourceVersion") or "",
            }
            dirty = True
        anns = dict(meta.get("annotations") or {})
        if should_annotate and ANN_BOUND_BY_CONTROLLER not in anns:
            anns[ANN_BOUND_BY_CONTROLLER] = "yes"
            meta["annotations"] = anns
            dirty = True
        return {**pv, "metadata": meta, "spec": spec}, dirty

    def _revert_pvs(self, bindings: list[tuple[Obj, Obj]]) -> None:
        for _, pv in bindings:
            self.pv_cache.restore(pv)

    def _revert_pvcs(self, claims: list[Obj]) -> None:
        for pvc in claims:
            self.pvc_cache.restore(pvc)

    def assume_pod_volumes(self, pod: Pod, node: str, pv: PodVolumes) -> bool:
        """upstream ``AssumePodVolumes``: True when every claim is bound already; else
        assume the bindings and the claims to provision, rewriting ``pv`` with the
        assumed objects. Raises :class:`BinderError` (after undoing what it assumed)."""
        if self._all_bound(pod):
            return True
        bindings: list[tuple[Obj, Obj]] = []
        for pvc, volume in pv.static:
            new_pv, dirty = self.bind_volume_to_claim(volume, pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except AssumeError as exc:
                    self._revert_pvs(bindings)
                    raise BinderError(str(exc)) from None
            bindings.append((pvc, new_pv))
        provisioned: list[Obj] = []
        for pvc, _ in pv.dynamic:
            meta = dict(_meta(pvc))
            meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node}
            clone = {**pvc, "metadata": meta}
            try:
                self.pvc_cache.assume(clone)
            except AssumeError as exc:
                self._revert_pvs(bindings)
                self._revert_pvcs(provisioned)
                raise BinderError(str(exc)) from None
            provisioned.append(clone)
        pv.static = bindings
        pv.dynamic = [(c, None) for c in provisioned]
        return False

    def revert_assumed_pod_volumes(self, pv: PodVolumes) -> None:
        """upstream ``RevertAssumedPodVolumes``."""
        self._revert_pvs(pv.static)
        self._revert_pvcs([c for c, _ in pv.dynamic])

    # ---- PreBind ---------------------------------------------------------------------

    async def bind_pod_volumes(self, pod: Pod, node: str, pv: PodVolumes) -> None:
        """upstream ``BindPodVolumes``: write the bindings and the claims to provision,
        then wait until all are bound. Raises :class:`BinderError`."""
        bindings = list(pv.static)
        claims = [c for c, _ in pv.dynamic]
        await self._bind_api_update(bindings, claims)
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + self.bind_timeout
        tick = 1
        while True:
            at = start + tick * POLL_INTERVAL
            if at >= deadline:
                await asyncio.sleep(max(0.0, deadline - loop.time()))
                raise BinderError("binding volumes: context deadline exceeded")
            await asyncio.sleep(max(0.0, at - loop.time()))
            tick += 1
            try:
                if self.check_bindings(pod, node, bindings, claims):
                    return
            except BinderError as exc:
                raise BinderError(f"binding volumes: {exc}") from None

    async def _bind_api_update(self, bindings: list[tuple[Obj, Obj]], claims: list[Obj]) -> None:
        api = self._handle.api
        done_bindings = done_claims = 0
        try:
            for i, (pvc, volume) in enumerate(bindings):
                new_pv = await api.update_object(kind="persistentvolumes", obj=volume)
                bindings[i] = (pvc, new_pv)
                done_bindings += 1
            for i, claim in enumerate(claims):
                claims[i] = await api.update_object(kind="persistentvolumeclaims", obj=claim)
                done_claims += 1
        except APIError as exc:
            raise BinderError(exc.message) from None
        finally:
            # Only what was not written is taken back from the assume caches.
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs(claims[done_claims:])

    def _translated(self, volume: Obj, csinode: Obj | None) -> Obj:
        """``tryTranslatePVToCSI``: the PV as the node's CSI driver sees it."""
        plugin = csi_translation.pv_plugin(volume)
        if plugin is None or plugin not in csi_translation.MIGRATION_ON:
            return volume
        ann = str(annotations_of(csinode or {}).get(MIGRATED_PLUGINS_ANNOTATION) or "")
        if csinode is None or plugin not in (ann.split(",") if ann else []):
            return volume
        try:
            affinity = csi_translation.translate_pv(volume)[2]
        except csi_translation.TranslationError as exc:
            raise BinderError(f"could not translate pv: {exc}") from None
        spec = dict(_spec(volume))
        spec["nodeAffinity"] = None if affinity is None else {"required": affinity}
        return {**volume, "spec": spec}

    def check_bindings(
        self, pod: Pod, node_name: str, bindings: list[tuple[Obj, Obj]], claims: list[Obj]
    ) -> bool:
        """upstream ``checkBindings``: True when every binding and provisioning is
        complete; raises :class:`BinderError` when one was undone or went wrong."""
        info = self._handle.node_info(node_name)
        if info.node is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = dict(info.node.labels)
        csinode = self.csinodes.get("", node_name)
        if self._handle.get_pod(pod.namespace, pod.name) is None:
            raise BinderError(f'pod does not exist any more: pod "{pod.name}" not found')
        for pvc, volume in bindings:
            name = _name(volume)
            stored = self.pv_cache.get_api_obj(name)
            if stored is None:
                raise BinderError(f"failed to check binding: {self.pv_cache.not_found(name)}")
            key = _key(pvc)
            claim = self.pvc_cache.get_api_obj(key)
            if claim is None:
                raise BinderError(f"failed to check binding: {self.pvc_cache.not_found(key)}")
            if _compare_rv(volume, stored) > 0:
                return False
            try:
                translated = self._translated(stored, csinode)
            except BinderError as exc:
                raise BinderError(f"failed to translate pv to csi: {exc}") from None
            err = check_node_affinity(translated, labels)
            if err is not None:
                raise BinderError(
                    f'pv "{name}" node affinity doesn\'t match node "{node_name}": {err}'
                )
            ref = _spec(stored).get("claimRef")
            if not isinstance(ref, dict) or not ref.get("uid"):
                raise BinderError(f'ClaimRef got reset for pv "{name}"')
            if not _fully_bound(claim):
                return False
        for pvc in claims:
            key = _key(pvc)
            claim = self.pvc_cache.get_api_obj(key)
            if claim is None:
                raise BinderError(
                    f"failed to check provisioning pvc: {self.pvc_cache.not_found(key)}"
                )
            if _compare_rv(pvc, claim) > 0:
                return False
            ann = _meta(claim).get("annotations")
            if not isinstance(ann, dict):
                raise BinderError(f'selectedNode annotation reset for PVC "{_name(claim)}"')
            if ann.get(ANN_SELECTED_NODE, "") != node_name:
                raise BinderError(f'provisioning failed for PVC "{_name(claim)}"')
            volume_name = str(_spec(claim).get("volumeName") or "")
            if volume_name:
                stored = self.pv_cache.get_api_obj(volume_name)
                if stored is None:
                    return False  # the PV may not have reached the informer yet
                translated = self._translated(stored, csinode)
                err = check_node_affinity(translated, labels)
                if err is not None:
                    raise BinderError(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": {err}'
                    )
            if not _fully_bound(claim):
                return False
        return True
