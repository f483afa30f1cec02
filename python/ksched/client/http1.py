"""A lean HTTP/1.1 keep-alive client for the scheduler's small writes to the API server.

Why hand-written. Every pod costs ksched at least two writes to the apiserver (its
``Binding`` and its ``Scheduled`` Event, often a status patch more), each a few hundred
bytes each way. Through ``aiohttp.ClientSession.request`` one such write cost ~250 µs of
CPU on the 2-core test machine (URL parsing, a ``ClientRequest`` and ``ClientResponse``
with their multidicts, cookie jar, trace signals, timeout handles, the payload writer):
more than the scheduling decision itself, and most of ``ksched run``'s CPU per pod
against a real apiserver. This module does only what such a request needs: one
``transport.write`` of headers and body built as bytes, the answer parsed by llhttp
(``httptools``, the parser uvicorn uses; chunked bodies, keep-alive and ``Connection:
close`` handled there), and connections kept in a small LIFO pool of idle ones.

What it does not do, and who does: GETs (lists, gets, watches: gzip, big bodies,
streaming), requests through a proxy, and paths or query strings that would need
quoting stay on aiohttp (:mod:`ksched.client.rest` decides, see ``RestClient._lean``).
Retries, the rate limit, the slot bound, credentials, metrics and error mapping are the
caller's (``RestClient``), exactly as for aiohttp's requests.

Failures are the exceptions the caller already handles: a connection that cannot be
opened raises ``OSError`` (``ssl.SSLError`` included); one that breaks or closes before
the whole answer arrived raises :class:`ConnectionClosed` (a ``ConnectionError``); a
malformed answer raises :class:`ProtocolError` (an ``OSError``, so it becomes a
connection error). A connection is reused only after a complete answer that allows
keep-alive; a timeout or any failure closes it. The write guard (``before_write``) runs
once the connection is ready, right before the request's bytes are handed to the
transport, and nothing is sent when it raises.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Callable
from typing import Any

import httptools


class ConnectionClosed(ConnectionError):
    """The server closed or broke the connection before the whole answer arrived."""


class ProtocolError(OSError):
    """The answer is not valid HTTP/1.1."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection: at most one request in flight."""

    __slots__ = (
        "_body",
        "_encoding",
        "_keep_alive",
        "_parser",
        "_retry_after",
        "_status",
        "_waiter",
        "closed",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[tuple[int, bytes, str | None]] | None = None
        self._status = 0
        self._body: list[bytes] = []
        self._retry_after: str | None = None
        self._encoding: str | None = None
        self._keep_alive = False
        self.closed = False

    # ---- asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio's classes.
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # pragma: no cover - never asked for
            self._fail(ProtocolError("unexpected protocol upgrade"))
        except httptools.HttpParserError as exc:
            self._fail(ProtocolError(f"malformed HTTP answer: {exc}"))

    def eof_received(self) -> bool:
        self._fail(ConnectionClosed("the server closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            err = ConnectionClosed(
                f"connection lost: {exc}" if exc else "the server closed the connection"
            )
            if exc is not None:
                err.__cause__ = exc
            waiter.set_exception(err)
        self._waiter = None

    # ---- httptools callbacks -------------------------------------------------------

    def on_message_begin(self) -> None:
        self._body = []
        self._retry_after = None
        self._encoding = None

    def on_status(self, status: bytes) -> None:
        self._status = self._parser.get_status_code()

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower == b"retry-after":
            self._retry_after = value.decode("latin-1")
        elif lower == b"content-encoding":
            self._encoding = value.decode("latin-1").strip().lower()

    def on_headers_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        self._waiter = None
        body = b"".join(self._body)
        self._body = []
        if not self._keep_alive:
            self.close()
        if waiter is None or waiter.done():  # an answer nobody waits for: drop the connection
            self.close()
            return
        if self._encoding and self._encoding != "identity":
            try:
                body = _decode(body, self._encoding)
            except (zlib.error, ValueError) as exc:
                self.close()
                waiter.set_exception(ProtocolError(f"undecodable {self._encoding} body: {exc}"))
                return
        waiter.set_result((self._status, body, self._retry_after))

    # ---- use ---------------------------------------------------------------------

    def _fail(self, exc: Exception) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self.closed and self._waiter is None


def _expire(waiter: asyncio.Future[tuple[int, bytes, str | None]]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def _decode(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:
            return zlib.decompress(body, -zlib.MAX_WBITS)
    raise ValueError("unsupported content encoding")


class Pool:
    """Keep-alive connections to one ``host:port`` (TLS when ``ssl_context`` is set).

    The caller bounds how many requests are in flight (``RestClient``'s slots), so the
    pool keeps every connection that finished cleanly and opens a new one only when none
    is idle.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        host_header: str,
        fixed_headers: bytes,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        #: ``Host: ...\r\n`` plus the headers every request carries (User-Agent, Accept).
        self._fixed = b"Host: " + host_header.encode("latin-1") + b"\r\n" + fixed_headers
        self._idle: list[_Connection] = []
        #: Connections opened (tests check that they are reused).
        self.opened = 0
        #: Connections in use when the pool is closed are closed once they finish.
        self._busy: set[_Connection] = set()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        kwargs: dict[str, Any] = {}
        if self.ssl_context is not None:
            kwargs["ssl"] = self.ssl_context
            kwargs["server_hostname"] = self.server_hostname or self.host
        _, conn = await loop.create_connection(_Connection, self.host, self.port, **kwargs)
        self.opened += 1
        return conn

    async def request(
        self,
        method: str,
        target: str,
        headers: bytes,
        body: bytes | None,
        before_write: Callable[[], None] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, str | None]:
        """Send one request; return ``(status, body, Retry-After header or None)``.

        ``target`` is the request target as sent (already quoted); ``headers`` are
        extra header lines, each ending in CRLF (Authorization, Content-Type).
        ``timeout`` (seconds) bounds the whole request, connecting included, and raises
        ``TimeoutError``. The wait for the answer is bounded by one timer on its future
        (cheaper than an ``asyncio.timeout`` scope per request).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout is not None else None
        conn: _Connection | None = None
        while self._idle:
            candidate = self._idle.pop()
            if candidate.idle:
                conn = candidate
                break
        if conn is None:
            if deadline is None:
                conn = await self._connect()
            else:
                async with asyncio.timeout_at(deadline):
                    conn = await self._connect()
        head = b"".join(
            (
                method.encode("ascii"),
                b" ",
                target.encode("ascii"),
                b" HTTP/1.1\r\n",
                self._fixed,
                headers,
                b"Content-Length: %d\r\n\r\n" % (len(body) if body else 0),
            )
        )
        self._busy.add(conn)
        waiter: asyncio.Future[tuple[int, bytes, str | None]] = loop.create_future()
        timer = loop.call_at(deadline, _expire, waiter) if deadline is not None else None
        sent = False
        try:
            if before_write is not None:
                before_write()
            transport = conn.transport
            if conn.closed or transport is None:
                raise ConnectionClosed("the server closed the connection")
            conn._waiter = waiter
            sent = True
            transport.write(head + body if body else head)
            answer = await waiter
        except BaseException:
            conn._waiter = None
            if sent:
                # A timeout or cancellation may leave half an answer on the connection.
                conn.close()
            elif conn.idle:
                self._idle.append(conn)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._busy.discard(conn)
        if conn.idle:
            self._idle.append(conn)
        return answer

    def close(self) -> None:
        """Close every connection; those in use give their request a connection error.
        The pool opens new connections for later requests."""
        for conn in [*self._idle, *self._busy]:
            conn.close()
        self._idle.clear()
        self._busy.clear()
