"""Async HTTP to the API server: one aiohttp session, JSON bytes in and out.

Every request goes through the client-side rate limit (:mod:`ksched.client.ratelimit`)
and carries ``Accept: application/json``; bodies are bytes the caller encoded with
orjson, and responses come back as raw bytes for ``orjson.loads`` (never decoded to
``str`` first, never turned into the ``kubernetes`` package's model classes). Protobuf
(kube-scheduler's default ``clientConnection.contentType``) is not implemented: ksched
always speaks JSON.

Failures become the exceptions of :mod:`ksched.cluster`: a ``Status`` body is mapped by
its code (404 → :class:`NotFound`, 409 → :class:`Conflict`, 410 → :class:`Gone`, others
→ :class:`APIError` with the server's reason and message); a connection that fails or
breaks becomes ``APIError(0, "ConnectionError", …)`` and a timeout stays a
:class:`TimeoutError`, so callers handle exactly ``(TimeoutError, APIError, OSError)``.

Retries follow client-go's ``rest.Request``: a ``429`` or ``5xx`` answer that carries
``Retry-After`` is retried after that many seconds (at most :data:`MAX_RETRIES` times,
any verb); a GET whose connection was reset or closed early is retried (writes are not:
they may have happened); a ``401`` re-reads expiring credentials once and retries.
A connection that could not be opened because uvloop still maps the new socket's file
descriptor to a closed transport (``RuntimeError: File descriptor N is used by
transport``, MagicStack/uvloop#653, raised while connecting, before anything is sent)
is a connection error like any other, and is retried for every verb.

Writes on a lean client. A request that is not a GET, to a server reached without a
proxy, with no query parameters and a path that needs no quoting (every binding, Event,
status patch and object write the scheduler makes) is sent by the small HTTP/1.1
keep-alive client of :mod:`ksched.client.http1` instead of aiohttp: the same method,
target, headers (``User-Agent``, ``Accept``, ``Authorization``, ``Content-Type``) and
body, at a fraction of the CPU (~250 → ~150 µs per write against a real apiserver on
the test machine, most of what is left being the socket and TLS work). Everything
around the send is shared: slots, rate limit, credentials, retries, metrics, error
mapping and the write guard. GETs (lists, gets, watches) stay on aiohttp, which also
brings gzip for large lists. ``RestClient(..., lean_writes=False)`` sends everything by
aiohttp.

Write guard (fencing). :attr:`RestClient.write_guard`, when set, is called with the
method and path of every request that is not a GET, at the last moment aiohttp offers:
once the request holds a slot, has passed the rate limiter and has a connection, just
before its headers are serialized, and again just before its bytes are handed to the
transport (aiohttp's ``on_request_headers_sent`` and ``on_request_chunk_sent`` trace
signals, which run before the write; on the lean client, once, right before the single
write of headers and body). A guard that raises stops the request there:
nothing of it is sent, and its exception reaches the caller as raised (unwrapped from
the connection error aiohttp turns a failed body write into). ``ksched run`` installs
the lease fence's check (:mod:`ksched.leaderelection.fencing`), so a write that waited
in the backlog while the lease lapsed is never sent; watches and lists are GETs and
never guarded.

Connections. Requests share a small pool of keep-alive connections
(:data:`MAX_CONNECTIONS`): at most that many are in flight, and the rest wait in the
client — on a semaphore taken *before* aiohttp builds the request, so a backlog of
thousands of bindings costs a coroutine each, not a connection, a TLS handshake (CPU on
the apiserver too) and a built request. An HTTP/1.1 connection carries one request at a
time, so the bound is also the concurrency: a few dozen keep the apiserver busy on a
small machine (client-go gets the same effect from HTTP/2 multiplexing one
connection). Sleeps between retries release the slot; the request timeout counts from
the moment a slot is held, so queueing behind a backlog never fails a request. Watches
(long-lived streams) use a session of their own without that bound, so they neither
starve requests of slots nor wait for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp
import orjson

from ksched.client import http1
from ksched.client.kubeconfig import ClientConfig
from ksched.client.metrics import REST_METRICS, host_of
from ksched.client.ratelimit import TokenBucket
from ksched.cluster import APIError, Conflict, Gone, NotFound

log = logging.getLogger(__name__)

loop_time = time.monotonic

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

#: client-go's maxRetries for Retry-After answers.
MAX_RETRIES = 10
#: Retries of a GET whose connection broke (reset, closed before the answer).
GET_CONNECTION_RETRIES = 3
#: Upper bound on one Retry-After wait, in seconds.
MAX_RETRY_AFTER = 60.0
#: Default timeout of a request that is not a watch, in seconds.
REQUEST_TIMEOUT = 60.0
#: Default bound on requests in flight (and keep-alive connections), watches aside.
MAX_CONNECTIONS = 32

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_error(code: int, reason: str, message: str) -> APIError:
    """The :mod:`ksched.cluster` exception for a ``Status`` with this code."""
    exc: APIError
    if code == 404:
        exc = NotFound(message)
    elif code == 409:
        exc = Conflict(message)
    elif code == 410:
        exc = Gone(message)
    else:
        return APIError(code, reason or _REASONS.get(code, "Unknown"), message)
    if reason:
        exc.reason = reason  # e.g. AlreadyExists (409), Expired (410)
    return exc


def error_from_response(status: int, body: bytes) -> APIError:
    """Map a non-2xx answer (usually a ``Status`` object) to an exception."""
    reason, message, code = "", "", status
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        reason = str(doc.get("reason") or "")
        message = str(doc.get("message") or "")
        if isinstance(doc.get("code"), int) and doc["code"] >= 400:
            code = doc["code"]
    else:
        message = body[:1000].decode("utf-8", errors="replace").strip()
    return status_error(code, reason, message or _REASONS.get(code, f"HTTP {status}"))


def _retry_after_value(status: int, value: str | None) -> float | None:
    """Seconds to wait before a retry: a 429 or 5xx answer's ``Retry-After``, or None."""
    if status != 429 and status < 500:
        return None
    if value is None:
        return None
    try:
        seconds = float(int(value.strip()))
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _fd_still_mapped(exc: BaseException) -> bool:
    """uvloop's "File descriptor N is used by transport" while opening a connection: the
    request was not sent (uvloop#653: a transport of a cancelled connect keeps the fd)."""
    return isinstance(exc, RuntimeError) and "is used by transport" in str(exc)


def _connection_broke(exc: BaseException) -> bool:
    """A reset or early close: the request may be repeated if it was a read."""
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return True
    if isinstance(exc, aiohttp.ClientOSError) and not isinstance(exc, aiohttp.ClientConnectorError):
        return True
    return isinstance(exc, ConnectionResetError)


#: Paths the lean client sends as they are: nothing that aiohttp would quote or split.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9\-._~/%:@!$&'()*+,;=]*")


def _header_lines(headers: Mapping[str, str]) -> bytes | None:
    """The header lines of a lean request, or None for a header aiohttp must check (a
    CR or LF in it, a character outside Latin-1): aiohttp then refuses it as before."""
    block = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    if block.count("\r") != len(headers) or block.count("\n") != len(headers):
        return None
    try:
        return block.encode("latin-1")
    except UnicodeEncodeError:
        return None


def _lean_pool(config: ClientConfig) -> tuple[http1.Pool, str] | None:
    """The lean pool of writes to ``config.host`` and the path prefix of its server URL,
    or None when aiohttp must carry them (a proxy, a scheme other than http/https)."""
    if config.proxy:
        return None
    url = urlsplit(config.host)
    if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
        return None
    prefix = url.path.rstrip("/")
    if prefix and not _PLAIN_PATH.fullmatch(prefix):
        return None
    secure = url.scheme == "https"
    try:
        port = url.port or (443 if secure else 80)
    except ValueError:
        return None
    fixed = (
        b"User-Agent: "
        + config.user_agent.encode("latin-1", errors="replace")
        + b"\r\nAccept: "
        + JSON.encode()
        + b"\r\n"
    )
    pool = http1.Pool(
        url.hostname,
        port,
        ssl_context=(config.ssl_context or ssl.create_default_context()) if secure else None,
        server_hostname=config.server_hostname,
        host_header=url.netloc.rpartition("@")[2],
        fixed_headers=fixed,
    )
    return pool, prefix


#: ``write_guard(method, path)``: raises to stop a write before any of it is sent.
WriteGuard = Callable[[str, str], None]


class _Guarded(Exception):
    """Carries a guard's exception through aiohttp's body writer, which wraps anything
    raised there into a connection error (see :func:`_guard_error`)."""


def _guard_error(exc: BaseException) -> BaseException | None:
    """The write guard's exception behind ``exc`` (raised as is or wrapped by aiohttp),
    or None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, _Guarded):
            cause = seen.args[0]
            return cause if isinstance(cause, BaseException) else None
        seen = seen.__cause__ or seen.__context__
    return None


def connection_error(method: str, path: str, exc: BaseException) -> APIError:
    return APIError(0, "ConnectionError", f"{method} {path}: {type(exc).__name__}: {exc}")


class RestClient:
    """The HTTP client of one :class:`ClientConfig`. Create and use it in one event loop."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        limiter: TokenBucket | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        lean_writes: bool = True,
    ) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.config = config
        self.limiter = limiter if limiter is not None else TokenBucket(config.qps, config.burst)
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        #: Requests in flight; the others wait here (see the module docstring).
        self._slots = asyncio.Semaphore(max_connections)
        self._session: aiohttp.ClientSession | None = None
        self._stream_session: aiohttp.ClientSession | None = None
        #: Called for every request but GETs right before it is sent (module docstring).
        self.write_guard: WriteGuard | None = None
        #: Requests sent (attempts, watches included) and retries, for tests and metrics.
        self.requests = 0
        #: The same per HTTP method (shadow mode's tests check it has only GETs).
        self.requests_by_method: Counter[str] = Counter()
        self.retries = 0
        #: Requests holding a slot now, and the most that ever did (tests, metrics).
        self.in_flight = 0
        self.max_in_flight = 0
        #: The ``host`` label of the ``rest_client_*`` metrics.
        self.metrics_host = host_of(config.host)
        #: Writes go through the lean HTTP/1.1 client (:mod:`ksched.client.http1`) when
        #: the server is reached directly (module docstring); ``lean_writes=False`` sends
        #: every request by aiohttp.
        lean = _lean_pool(config) if lean_writes else None
        self._lean_pool = lean[0] if lean else None
        self._lean_prefix = lean[1] if lean else ""

    # ---- sessions ------------------------------------------------------------------

    def _new_session(self, limit: int, *, guarded: bool = False) -> aiohttp.ClientSession:
        ctx = self.config.ssl_context
        connector = aiohttp.TCPConnector(
            ssl=ctx if ctx is not None else True,
            limit=limit,
            limit_per_host=0,
            enable_cleanup_closed=True,
        )
        traces: list[aiohttp.TraceConfig] = []
        if guarded:
            trace = aiohttp.TraceConfig()
            trace.on_request_headers_sent.append(self._guard_headers)
            trace.on_request_chunk_sent.append(self._guard_chunk)
            traces.append(trace)
        return aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self.config.user_agent, "Accept": JSON},
            skip_auto_headers=("Content-Type",),
            auto_decompress=True,
            trace_configs=traces or None,
        )

    def _check_write(self, method: str, path: str) -> None:
        guard = self.write_guard
        if guard is not None and method != "GET":
            try:
                guard(method, path)
            except Exception as exc:
                raise _Guarded(exc) from exc

    def _write_check(self, method: str, path: str) -> Callable[[], None] | None:
        """The write guard's check of one lean request (run right before it is sent)."""
        if self.write_guard is None or method == "GET":
            return None
        url_path = unquote(self._lean_prefix + path)  # as aiohttp's trace gives it
        return lambda: self._check_write(method, url_path)

    async def _guard_headers(
        self,
        session: aiohttp.ClientSession,
        ctx: SimpleNamespace,
        params: aiohttp.TraceRequestHeadersSentParams,
    ) -> None:
        self._check_write(params.method, params.url.path)

    async def _guard_chunk(
        self,
        session: aiohttp.ClientSession,
        ctx: SimpleNamespace,
        params: aiohttp.TraceRequestChunkSentParams,
    ) -> None:
        self._check_write(params.method, params.url.path)

    def session(self) -> aiohttp.ClientSession:
        """The session of ordinary requests. Its connector has no limit of its own: the
        slots bound it (at most ``max_connections`` requests hold a connection, so at
        most that many are opened), and aiohttp's connector limit is not used because
        its waiters can lose a released connection (requests then hang until their
        timeout with no connection open)."""
        if self._session is None or self._session.closed:
            self._session = self._new_session(0, guarded=True)
        return self._session

    def stream_session(self) -> aiohttp.ClientSession:
        """The session of watches: one connection per open stream, no bound."""
        if self._stream_session is None or self._stream_session.closed:
            self._stream_session = self._new_session(0)
        return self._stream_session

    async def close(self) -> None:
        if self._lean_pool is not None:
            self._lean_pool.close()
        for session in (self._session, self._stream_session):
            if session is not None and not session.closed:
                await session.close()
        self._session = None
        self._stream_session = None

    async def __aenter__(self) -> RestClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _headers(self, content_type: str | None, *, force_auth: bool) -> dict[str, str]:
        headers: dict[str, str] = {}
        auth = await self.config.credentials.header(force=force_auth)
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def url(self, path: str) -> str:
        return self.config.host + path

    # ---- requests ------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        json_body: Any = None,
        content_type: str = JSON,
        limiter: TokenBucket | None = None,
        timeout: float | None = None,
    ) -> bytes:
        """Send one request (with client-go's retries); return the 2xx body.

        The body is ``body`` (bytes) or ``json_body`` encoded with orjson once the request
        holds a slot: a request waiting in a backlog keeps its object, not its encoding
        (orjson's output keeps a 4 KiB buffer however short the JSON).
        """
        limiter = limiter or self.limiter
        client_timeout = aiohttp.ClientTimeout(total=timeout or self.request_timeout)
        attempt = 0
        broken = 0
        reauth = False
        while True:
            try:
                status, raw, wait = await self._send(
                    method,
                    path,
                    params,
                    body,
                    json_body,
                    content_type,
                    limiter,
                    client_timeout,
                    reauth,
                )
            except _Guarded as exc:
                guarded = _guard_error(exc)
                assert guarded is not None
                raise guarded from None
            except TimeoutError as exc:
                raise TimeoutError(f"{method} {path}: timed out") from exc
            except RuntimeError as exc:
                if not _fd_still_mapped(exc):
                    raise
                if broken < GET_CONNECTION_RETRIES:
                    broken += 1
                    self.retries += 1
                    REST_METRICS.retried(method, self.metrics_host, "<error>")
                    await asyncio.sleep(0.1 * 2**broken)
                    continue
                raise connection_error(method, path, exc) from exc
            except (aiohttp.ClientError, OSError) as exc:
                guarded = _guard_error(exc)
                if guarded is not None:
                    raise guarded from None
                if method == "GET" and broken < GET_CONNECTION_RETRIES and _connection_broke(exc):
                    broken += 1
                    self.retries += 1
                    REST_METRICS.retried(method, self.metrics_host, "<error>")
                    await asyncio.sleep(0.1 * 2**broken)
                    continue
                raise connection_error(method, path, exc) from exc
            if 200 <= status < 300:
                return raw
            if status == 401 and not reauth and self.config.credentials.refreshable:
                reauth = True
                self.retries += 1
                REST_METRICS.retried(method, self.metrics_host, status)
                continue
            if wait is not None and attempt < MAX_RETRIES:
                attempt += 1
                self.retries += 1
                REST_METRICS.retried(method, self.metrics_host, status)
                log.debug("%s %s: %d, retrying in %.1fs", method, path, status, wait)
                await asyncio.sleep(wait)
                continue
            raise error_from_response(status, raw)

    async def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        json_body: Any,
        content_type: str,
        limiter: TokenBucket,
        timeout: aiohttp.ClientTimeout,
        force_auth: bool,
    ) -> tuple[int, bytes, float | None]:
        """One attempt, holding a slot: (status, body, Retry-After seconds or None)."""
        async with self._slots:
            self.in_flight += 1
            if self.in_flight > self.max_in_flight:
                self.max_in_flight = self.in_flight
            began = loop_time()
            try:
                await limiter.acquire()
                if body is None and json_body is not None:
                    body = orjson.dumps(json_body)
                headers = await self._headers(
                    content_type if body is not None else None, force_auth=force_auth
                )
                self.requests += 1
                self.requests_by_method[method] += 1
                sent = loop_time()
                code: int | str = "<error>"
                raw = b""
                try:
                    pool = self._lean_pool
                    lines = (
                        _header_lines(headers)
                        if pool is not None
                        and method != "GET"
                        and not params
                        and _PLAIN_PATH.fullmatch(path)
                        else None
                    )
                    if pool is not None and lines is not None:
                        code, raw, retry = await pool.request(
                            method,
                            self._lean_prefix + path,
                            lines,
                            body,
                            self._write_check(method, path),
                            timeout.total,
                        )
                        return code, raw, _retry_after_value(code, retry)
                    async with self.session().request(
                        method,
                        self.url(path),
                        params=params,
                        data=body,
                        headers=headers,
                        timeout=timeout,
                        proxy=self.config.proxy,
                        server_hostname=self.config.server_hostname,
                    ) as resp:
                        raw = await resp.read()
                        code = resp.status
                        return (
                            resp.status,
                            raw,
                            _retry_after_value(resp.status, resp.headers.get("Retry-After")),
                        )
                finally:
                    REST_METRICS.answered(
                        method,
                        self.metrics_host,
                        code,
                        seconds=loop_time() - sent,
                        waited=sent - began,
                        sent=len(body) if body else 0,
                        received=len(raw),
                    )
            finally:
                self.in_flight -= 1

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        limiter: TokenBucket | None = None,
        timeout: float | None = None,
    ) -> Any:
        """:meth:`request` with an orjson-encoded body and a decoded answer."""
        raw = await self.request(
            method,
            path,
            params=params,
            json_body=body,
            content_type=content_type,
            limiter=limiter,
            timeout=timeout,
        )
        try:
            return orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError as exc:
            raise APIError(0, "DecodeError", f"{method} {path}: {exc}") from exc

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        params: Mapping[str, str],
        read_timeout: float,
        limiter: TokenBucket | None = None,
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """GET a streaming response (a watch); yields its body once the status is 200.

        Failures while connecting or while the caller reads the body are mapped like
        :meth:`request`'s; no retries here (the informer decides).
        """
        began = loop_time()
        await (limiter or self.limiter).acquire()
        headers = await self._headers(None, force_auth=False)
        self.requests += 1
        self.requests_by_method["GET"] += 1
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read_timeout)
        waited = loop_time() - began
        try:
            async with self.stream_session().get(
                self.url(path),
                params=params,
                headers=headers,
                timeout=timeout,
                proxy=self.config.proxy,
                server_hostname=self.config.server_hostname,
            ) as resp:
                REST_METRICS.answered(
                    "GET",
                    self.metrics_host,
                    resp.status,
                    seconds=None,
                    waited=waited,
                    sent=0,
                    received=0,
                )
                if resp.status != 200:
                    raw = await resp.read()
                    if resp.status == 401:
                        await self.config.credentials.header(force=True)
                    raise error_from_response(resp.status, raw)
                yield resp.content
        except TimeoutError as exc:
            raise TimeoutError(f"GET {path}: no data for {read_timeout:.0f}s") from exc
        except RuntimeError as exc:
            if not _fd_still_mapped(exc):
                raise
            raise connection_error("GET", path, exc) from exc
        except (aiohttp.ClientError, OSError) as exc:
            if isinstance(exc, APIError):
                raise
            raise connection_error("GET", path, exc) from exc
