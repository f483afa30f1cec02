"""Where the API server is and who we are: kubeconfig and in-cluster configuration.

Reading kubeconfig files is the ``kubernetes`` package's job and we let it do all of it
(contexts, embedded or file certificates and CA, bearer tokens and token files, basic
auth, ``exec`` credential plugins, auth providers, ``insecure-skip-tls-verify``,
``tls-server-name``, ``proxy-url``; the in-cluster service-account token and CA). What
comes out is a ``kubernetes.client.Configuration``; we turn it into an
:class:`ssl.SSLContext` and a :class:`Credentials` object for our own aiohttp client,
and never use the package's (synchronous, model-class) API client.

The choice of source follows kube-scheduler's ``clientcmd.BuildConfigFromFlags``:
neither a kubeconfig nor a master URL → in-cluster configuration; otherwise the explicit
kubeconfig file (no ``$KUBECONFIG``/``~/.kube/config`` fallback, as upstream), with the
master URL, when given, overriding the cluster's server.

Credentials that expire (in-cluster tokens are re-read from the projected file, exec
plugins are re-run when their token expires) are refreshed through the loader's
``refresh_api_key_hook`` at most every :data:`REFRESH_INTERVAL` seconds and after a
``401``, in a worker thread, so an exec plugin never blocks the event loop. Client
certificates from an exec plugin are read once at start-up (no rotation).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from ksched import __version__

log = logging.getLogger(__name__)

#: Seconds between two runs of the credential refresh hook (when one is installed).
REFRESH_INTERVAL = 30.0

USER_AGENT = f"ksched/{__version__} (kube-scheduler compatible)"


class ClientConfigError(Exception):
    """The API server connection could not be configured (bad or missing kubeconfig)."""


class Credentials:
    """The ``Authorization`` header of our requests, kept fresh.

    ``conf`` is the ``kubernetes.client.Configuration`` a loader filled in. Its
    ``api_key["BearerToken"]`` already carries the scheme (``Bearer …`` or ``Basic …``),
    and its ``refresh_api_key_hook``, when set, reloads an expiring token.
    """

    def __init__(self, conf: Any = None, *, header: str | None = None) -> None:
        self._conf = conf
        self._header = header if conf is None else self._read()
        self._refreshed = time.monotonic()
        self._lock = asyncio.Lock()

    def _read(self) -> str | None:
        # get_api_key_with_prefix runs the refresh hook first (may exec a plugin).
        value = self._conf.get_api_key_with_prefix("BearerToken")
        return str(value).strip() if value else None

    @property
    def refreshable(self) -> bool:
        return self._conf is not None and self._conf.refresh_api_key_hook is not None

    async def header(self, *, force: bool = False) -> str | None:
        """The current header value (``None``: authenticate with a client certificate)."""
        if not self.refreshable:
            return self._header
        if force or time.monotonic() - self._refreshed > REFRESH_INTERVAL:
            async with self._lock:
                if force or time.monotonic() - self._refreshed > REFRESH_INTERVAL:
                    try:
                        self._header = await asyncio.to_thread(self._read)
                    except Exception as exc:  # keep the old token; the server will say 401
                        log.warning("could not refresh API credentials: %s", exc)
                    self._refreshed = time.monotonic()
        return self._header


@dataclass(slots=True)
class ClientConfig:
    """Everything the HTTP client needs to reach and authenticate to the API server."""

    host: str
    ssl_context: ssl.SSLContext | None = None
    credentials: Credentials = field(default_factory=Credentials)
    server_hostname: str | None = None
    proxy: str | None = None
    #: clientConnection.qps / burst (client-side token bucket; qps < 0: unlimited).
    qps: float = 50.0
    burst: int = 100
    user_agent: str = USER_AGENT
    #: Where this came from, for logs ("kubeconfig /path", "in-cluster").
    source: str = ""


def ssl_context_from(conf: Any) -> ssl.SSLContext:
    """TLS settings of a ``kubernetes.client.Configuration`` as an SSLContext."""
    ctx = ssl.create_default_context(cafile=conf.ssl_ca_cert or None)
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, conf.key_file or None)
    if not conf.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def client_config_from(
    conf: Any, *, qps: float = 50.0, burst: int = 100, source: str = ""
) -> ClientConfig:
    """A :class:`ClientConfig` from a filled-in ``kubernetes.client.Configuration``."""
    host = str(conf.host or "").rstrip("/")
    if not host:
        raise ClientConfigError(f"{source or 'configuration'}: no API server address")
    if "://" not in host:
        host = "https://" + host
    try:
        ctx = ssl_context_from(conf) if host.startswith("https://") else None
    except (OSError, ssl.SSLError) as exc:
        raise ClientConfigError(f"{source}: TLS configuration: {exc}") from exc
    return ClientConfig(
        host=host,
        ssl_context=ctx,
        credentials=Credentials(conf),
        server_hostname=getattr(conf, "tls_server_name", None) or None,
        proxy=conf.proxy or None,
        qps=qps,
        burst=burst,
        source=source,
    )


def load_client_config(
    *,
    kubeconfig: str = "",
    master: str = "",
    context: str | None = None,
    qps: float = 50.0,
    burst: int = 100,
) -> ClientConfig:
    """Configure the connection as kube-scheduler does from ``--kubeconfig``/``--master``.

    Raises :class:`ClientConfigError` with the loader's reason when nothing usable is
    found.
    """
    # The kubernetes package is slow to import (every model class); only load it here.
    from kubernetes import client as kclient
    from kubernetes import config as kconfig

    conf = kclient.Configuration()
    if not kubeconfig and not master:
        log.warning(
            "neither --kubeconfig nor --master was specified; using the in-cluster "
            "configuration, which might not work"
        )
        try:
            kconfig.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        except kconfig.ConfigException as exc:
            raise ClientConfigError(
                f"no --kubeconfig or --master given and the in-cluster configuration failed: {exc}"
            ) from exc
        return client_config_from(conf, qps=qps, burst=burst, source="in-cluster")
    if kubeconfig:
        try:
            kconfig.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig,
                context=context,
                client_configuration=conf,
                persist_config=False,
            )
        except Exception as exc:  # the loader raises whatever a bad file provokes
            raise ClientConfigError(f"kubeconfig {kubeconfig}: {exc}") from exc
    if master:
        conf.host = master
    source = f"kubeconfig {kubeconfig}" if kubeconfig else f"master {master}"
    return client_config_from(conf, qps=qps, burst=burst, source=source)
