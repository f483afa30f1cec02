"""A pod's ResourceClaims as upstream's ``k8s.io/dynamic-resource-allocation/resourceclaim``
helpers read them, on the API's JSON dicts.

* :func:`claim_name` resolves ``spec.resourceClaims[i]`` to the claim's name: the
  ``resourceClaimName``, or for a ``resourceClaimTemplateName`` the name the
  resourceclaim controller recorded in ``status.resourceClaimStatuses`` (None when it
  decided no claim is needed); errors carry upstream's words ("ResourceClaim not
  created yet").
* :func:`is_for_pod`, :func:`is_reserved_for_pod`: ownership and reservation checks.

Every function takes dicts as the informers hold them and never modifies them.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

#: ``resourceapi.Finalizer``: the scheduler's finalizer on claims it allocated.
FINALIZER = "resource.kubernetes.io/delete-protection"

ERR_CLAIM_NOT_FOUND = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "none of the supported fields are set"


class ClaimError(Exception):
    """The pod cannot use its claims now; the text is upstream's error."""


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def key_of(obj: Obj) -> str:
    m = meta(obj)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"


def kobj(obj: Obj) -> str:
    """``klog.KObj`` of a namespaced object: ``namespace/name``."""
    m = meta(obj)
    ns = m.get("namespace") or ""
    return f"{ns}/{m.get('name') or ''}" if ns else str(m.get("name") or "")


def pod_claims(raw: Obj) -> list[Obj]:
    claims = _get(raw, "spec", "resourceClaims")
    return [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else []


def claim_name(raw: Obj, pod_claim: Obj) -> tuple[str | None, bool]:
    """Upstream ``resourceclaim.Name``: the claim's name (None: no claim was generated
    for a template, which is valid) and whether ownership must be checked."""
    m = meta(raw)
    ns, name = m.get("namespace") or "", m.get("name") or ""
    if pod_claim.get("resourceClaimName") is not None:
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName") is not None:
        statuses = _get(raw, "status", "resourceClaimStatuses") or []
        for st in statuses:
            if isinstance(st, dict) and st.get("name") == pod_claim.get("name"):
                value = st.get("resourceClaimName")
                return (None if value is None else str(value)), True
        raise ClaimError(f'pod "{ns}/{name}": {ERR_CLAIM_NOT_FOUND}')
    raise ClaimError(
        f'pod "{ns}/{name}", spec.resourceClaim "{pod_claim.get("name") or ""}": '
        f"{ERR_API_UNSUPPORTED}"
    )


def is_for_pod(raw: Obj, claim: Obj) -> None:
    """Upstream ``resourceclaim.IsForPod`` (PodGroup ownership off, as in v1.36)."""
    pm, cm = meta(raw), meta(claim)
    if (cm.get("namespace") or "") != (pm.get("namespace") or ""):
        raise ClaimError(
            f"ResourceClaim {cm.get('namespace')}/{cm.get('name')} is not in the same "
            f"namespace as Pod {pm.get('namespace')}/{pm.get('name')}"
        )
    for ref in cm.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("uid") == pm.get("uid"):
            return
    raise ClaimError(
        f"ResourceClaim {cm.get('namespace')}/{cm.get('name')} was not created for Pod "
        f"{pm.get('namespace')}/{pm.get('name')} (Pod is not owner)"
    )


def allocation(claim: Obj) -> Obj | None:
    a = _get(claim, "status", "allocation")
    return a if isinstance(a, dict) else None


def reserved_for(claim: Obj) -> list[Obj]:
    r = _get(claim, "status", "reservedFor")
    return [x for x in r if isinstance(x, dict)] if isinstance(r, list) else []


def is_reserved_for_pod(uid: str, claim: Obj) -> bool:
    return any(r.get("uid") == uid for r in reserved_for(claim))


def normalized(value: Any) -> Any:
    """A value with empty lists, maps and nulls dropped: ``equality.Semantic`` treats
    nil and empty alike."""
    if isinstance(value, dict):
        out = {k: normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value
