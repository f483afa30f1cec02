"""Watch streams: newline-delimited JSON events read as raw bytes.

A watch answer is one JSON object per line (``{"type": "ADDED", "object": {...}}``).
Lines are split by hand from the chunks the socket delivers instead of with
``StreamReader.readline``, whose limit (64 KiB by default) a single large Pod or Node
exceeds; our own limit, :data:`MAX_LINE`, only guards against a runaway stream. Each
line goes straight to ``orjson.loads``.

The request asks for bookmarks (``allowWatchBookmarks=true``; a BOOKMARK carries only
the latest resource version, which lets a resumed watch start late enough to avoid
``410 Gone``) and a server-side ``timeoutSeconds`` drawn, as client-go's reflector does,
uniformly from ``[min, 2*min)`` so that many clients do not reconnect in step. The read
timeout is that plus a margin, so a silently dead connection ends the watch too.

An ``ERROR`` event carries a ``Status``: code 410 (the version was compacted, or is
older than the apiserver's watch cache, e.g. after a restart) raises
:class:`ksched.cluster.Gone` so the informer relists; any other code raises the mapped
:class:`ksched.cluster.APIError`. A stream that ends normally (the timeout elapsed, the
server went away cleanly) just ends: the informer resumes from the last version.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import orjson

from ksched.client.rest import RestClient, status_error
from ksched.cluster import APIError, WatchEvent

#: The longest watch line we accept (bytes).
MAX_LINE = 128 * 1024 * 1024
#: client-go's reflector minWatchTimeout (seconds).
MIN_WATCH_TIMEOUT = 300.0
#: Extra seconds the client waits for data beyond the server-side timeout.
READ_MARGIN = 30.0

_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


async def iter_lines(
    stream: aiohttp.StreamReader, *, max_line: int = MAX_LINE
) -> AsyncIterator[bytes]:
    """The non-empty lines of ``stream`` (without the newline), as bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in stream.iter_any():
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            if parts:
                parts.append(chunk[start:nl])
                line = b"".join(parts)
                parts.clear()
                size = 0
            else:
                line = chunk[start:nl]
            start = nl + 1
            if line.strip():
                yield line
        if start < len(chunk):
            rest = chunk[start:] if start else chunk
            parts.append(rest)
            size += len(rest)
            if size > max_line:
                raise APIError(0, "LineTooLong", f"watch event longer than {max_line} bytes")
    # A partial line at the end is a stream cut short: drop it, the watch resumes.


def decode_event(line: bytes) -> WatchEvent:
    """One watch line → :class:`WatchEvent`; ERROR events raise (410 → Gone)."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise APIError(0, "DecodeError", f"bad watch event: {exc}") from exc
    if type(doc) is not dict:
        raise APIError(0, "DecodeError", "watch event is not a JSON object")
    type_ = doc.get("type")
    obj = doc.get("object")
    if type(obj) is not dict:
        raise APIError(0, "DecodeError", f"watch event {type_!r} without an object")
    if type_ in _TYPES:
        return WatchEvent(type_, obj)
    if type_ == "ERROR":
        code = obj.get("code")
        raise status_error(
            code if isinstance(code, int) else 500,
            str(obj.get("reason") or ""),
            str(obj.get("message") or "watch error"),
        )
    raise APIError(0, "DecodeError", f"unknown watch event type {type_!r}")


def watch_timeout(minimum: float = MIN_WATCH_TIMEOUT) -> int:
    """Server-side ``timeoutSeconds`` for one watch, jittered as client-go does."""
    return max(1, int(minimum * (1.0 + random.random())))


async def watch(
    rest: RestClient,
    path: str,
    *,
    resource_version: str,
    params: Mapping[str, str] | None = None,
    timeout_seconds: int | None = None,
) -> AsyncIterator[WatchEvent]:
    """Events of the collection at ``path`` after ``resource_version``."""
    timeout = timeout_seconds if timeout_seconds is not None else watch_timeout()
    query: dict[str, Any] = {
        **(params or {}),
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(timeout),
    }
    if resource_version:
        query["resourceVersion"] = resource_version
    async with rest.stream(path, params=query, read_timeout=timeout + READ_MARGIN) as body:
        async for line in iter_lines(body):
            yield decode_event(line)
