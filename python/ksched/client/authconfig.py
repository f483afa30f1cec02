"""The cluster's delegated-authentication settings: the ``extension-apiserver-authentication``
ConfigMap in ``kube-system``.

kube-apiserver publishes there the CA that signs client certificates (``client-ca-file``)
and the front-proxy settings (``requestheader-client-ca-file``,
``requestheader-allowed-names``, ``-username-headers``, ``-uid-headers``,
``-group-headers``, ``-extra-headers-prefix``, the list values as JSON arrays).
kube-scheduler looks them up when ``--client-ca-file`` or
``--requestheader-client-ca-file`` are not given (``--authentication-skip-lookup=false``,
the default) through its authentication kubeconfig; so does ``ksched run``, once at
start-up (upstream keeps watching the ConfigMap; ksched reads it again only when it
restarts).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from ksched.client.api import KubeClusterAPI
from ksched.cluster import NotFound

__all__ = ["AUTH_CONFIGMAP", "read_authentication_config"]

#: (namespace, name) of the ConfigMap.
AUTH_CONFIGMAP: Final = ("kube-system", "extension-apiserver-authentication")

_LISTS = (
    "requestheader-allowed-names",
    "requestheader-username-headers",
    "requestheader-uid-headers",
    "requestheader-group-headers",
    "requestheader-extra-headers-prefix",
)


async def read_authentication_config(api: KubeClusterAPI) -> dict[str, Any] | None:
    """The ConfigMap's data with the list keys decoded; None when it does not exist.
    Raises :class:`ksched.cluster.APIError` (or ``OSError``/``TimeoutError``) when it
    cannot be read."""
    ns, name = AUTH_CONFIGMAP
    try:
        doc = await api.lease_rest.request_json("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")
    except NotFound:
        return None
    data = dict((doc or {}).get("data") or {})
    for key in _LISTS:
        raw = data.get(key)
        if isinstance(raw, str):
            try:
                value = orjson.loads(raw) if raw else []
            except orjson.JSONDecodeError:
                value = [raw]
            data[key] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return data
