"""The HTTP transport of scheduler extenders: JSON POSTs over asyncio streams.

An extender call is one ``POST <urlPrefix>/<verb>`` with a JSON body and a JSON answer
(upstream ``HTTPExtender.send``). This module is that, and only that: HTTP/1.1 over
``asyncio.open_connection`` (TLS through :mod:`ssl`), ``Content-Length`` or chunked
answers, kept-alive connections reused per extender, and one deadline
(``httpTimeout``) over the whole exchange, as Go's ``http.Client.Timeout``.

Why not aiohttp: the import contracts keep the HTTP client libraries inside
``ksched.client`` (which talks to the API server), and ``ksched.framework``,
``ksched.schedule_one`` and ``ksched.simulate`` may not reach them even indirectly.
An extender POST needs little of a general client, so the standard library does it
here and the scheduling cycle awaits it without blocking the event loop.

Error texts follow Go's ``*url.Error`` shape (``Post "<url>": <cause>``), so the
messages in events and logs read like kube-scheduler's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from typing import Final
from urllib.parse import urlsplit

from ksched.config import Extender as ExtenderConfig

__all__ = ["ExtenderError", "Transport", "make_ssl_context"]

#: Idle connections kept per extender.
_MAX_IDLE: Final = 8
#: Header block limit (bytes), as Go's default ``MaxResponseHeaderBytes`` order.
_MAX_HEADER: Final = 1 << 20


class ExtenderError(Exception):
    """An extender call failed (transport, HTTP status, or the extender's ``Error``)."""


class _Conn:
    __slots__ = ("reader", "reused", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reused = False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _StaleConnection(Exception):
    """A reused connection closed before any answer byte (the server dropped it)."""


def _pem(data: str, what: str) -> bytes:
    """``certData``/``keyData``/``caData``: []byte in the config, base64 text in YAML."""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError as exc:
        raise ExtenderError(f"tlsConfig.{what}: not valid base64: {exc}") from None


@contextlib.contextmanager
def _as_file(pem: bytes) -> Iterator[str]:
    fd, path = tempfile.mkstemp(prefix="ksched-extender-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        yield path
    finally:
        os.unlink(path)


def make_ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext:
    """The TLS client config of an extender (upstream ``makeTransport`` through
    client-go's ``TLSConfigFor``): ``enableHTTPS`` without a CA skips verification;
    a CA together with ``insecure`` is refused; a client certificate needs its key."""
    tls = cfg.tls_config
    insecure = tls.insecure if tls is not None else False
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    if cfg.enable_https and not has_ca:
        insecure = True
    if insecure and has_ca:
        raise ExtenderError(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls is None:
        return ctx
    try:
        if tls.ca_file or tls.ca_data:
            ctx = ssl.create_default_context(cafile=tls.ca_file or None)
            if tls.ca_data:
                ctx.load_verify_locations(cadata=_pem(tls.ca_data, "caData").decode())
        has_cert = bool(tls.cert_file or tls.cert_data)
        has_key = bool(tls.key_file or tls.key_data)
        if has_cert != has_key:
            raise ExtenderError(
                "tlsConfig: a client certificate (certFile/certData) and its key "
                "(keyFile/keyData) must be given together"
            )
        if has_cert:
            with contextlib.ExitStack() as stack:
                cert = tls.cert_file or stack.enter_context(
                    _as_file(_pem(tls.cert_data, "certData"))
                )
                key = tls.key_file or stack.enter_context(_as_file(_pem(tls.key_data, "keyData")))
                ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ExtenderError(f"tlsConfig: {exc}") from None
    return ctx


class Transport:
    """POSTs JSON to one extender's ``urlPrefix``; connections are reused."""

    def __init__(self, cfg: ExtenderConfig) -> None:
        self.prefix = cfg.url_prefix.rstrip("/")
        parts = urlsplit(self.prefix)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ExtenderError(f"extender urlPrefix {cfg.url_prefix!r} is not an http(s) URL")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._host_header = parts.netloc.rsplit("@", 1)[-1]
        self._base_path = parts.path
        self._query = f"?{parts.query}" if parts.query else ""
        self._ssl: ssl.SSLContext | None = make_ssl_context(cfg) if self._https else None
        self._server_name = (
            cfg.tls_config.server_name if cfg.tls_config and cfg.tls_config.server_name else None
        )
        self.timeout = cfg.http_timeout.nanoseconds / 1e9 or 5.0
        self._idle: list[_Conn] = []
        self._closed = False

    def url(self, verb: str) -> str:
        return f"{self.prefix}/{verb}"

    async def post(self, verb: str, body: bytes) -> bytes:
        """POST ``body`` to ``<urlPrefix>/<verb>``; the answer body of a 200."""
        url = self.url(verb)
        try:
            async with asyncio.timeout(self.timeout):
                return await self._exchange(verb, body, url)
        except TimeoutError:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded '
                "(Client.Timeout exceeded while awaiting headers)"
            ) from None
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, ValueError) as exc:
            raise ExtenderError(f'Post "{url}": {_cause(exc)}') from None

    async def _exchange(self, verb: str, body: bytes, url: str) -> bytes:
        request = self._request(verb, body)
        while True:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                status, keep, data = await self._roundtrip(conn, request)
            except _StaleConnection:
                conn.close()
                continue  # the server closed an idle connection: try a fresh one
            except BaseException:
                conn.close()
                raise
            if keep and not self._closed and len(self._idle) < _MAX_IDLE:
                conn.reused = True
                self._idle.append(conn)
            else:
                conn.close()
            if status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {url}, code {status}")
            return data

    def _request(self, verb: str, body: bytes) -> bytes:
        path = f"{self._base_path}/{verb}{self._query}"
        head = (
            f"POST {path} HTTP/1.1\r\n"
            f"Host: {self._host_header}\r\n"
            "User-Agent: ksched\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "\r\n"
        )
        return head.encode("latin-1") + body

    async def _connect(self) -> _Conn:
        if self._ssl is not None:
            reader, writer = await asyncio.open_connection(
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._server_name or self._host,
                limit=_MAX_HEADER,
            )
        else:
            reader, writer = await asyncio.open_connection(
                self._host, self._port, limit=_MAX_HEADER
            )
        return _Conn(reader, writer)

    async def _roundtrip(self, conn: _Conn, request: bytes) -> tuple[int, bool, bytes]:
        reader = conn.reader
        try:
            conn.writer.write(request)
            await conn.writer.drain()
            line = await reader.readline()
        except (ConnectionError, OSError):
            if conn.reused:
                raise _StaleConnection from None
            raise
        if not line:
            if conn.reused:
                raise _StaleConnection
            raise ConnectionError("server closed the connection without answering")
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise ValueError(f"malformed HTTP response: {line[:80]!r}")
        version, status = parts[0], int(parts[1])
        headers: dict[str, str] = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise asyncio.IncompleteReadError(h, None)
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            data = await _read_chunked(reader)
        elif "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        elif status in (204, 304) or 100 <= status < 200:
            data = b""
        else:
            data = await reader.read()
            keep = False
        return status, keep, data

    def close(self) -> None:
        """Close the idle connections; a call in flight closes its own when done (a
        later call opens a new one)."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size_line = await reader.readline()
        if not size_line:
            raise asyncio.IncompleteReadError(bytes(out), None)
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            # Trailers, up to the blank line.
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


def _cause(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connect: connection refused"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "unexpected EOF"
    return str(exc) or type(exc).__name__
