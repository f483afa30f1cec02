"""The lean HTTP/1.1 client of the scheduler's writes (ksched.client.http1) against a raw
asyncio server that answers with exact bytes: the request as sent, keep-alive reuse,
chunked and compressed answers, ``Connection: close``, a server that closes an idle
connection, an answer cut short, a malformed answer, a timeout, and which requests stay
on aiohttp. The retry, guard and error-mapping cases shared with aiohttp run on both in
test_client_rest.py."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import orjson
import pytest

from ksched.client.kubeconfig import ClientConfig, Credentials
from ksched.client.rest import RestClient
from ksched.cluster import APIError

#: An answer as bytes, or a callable given the writer (to cut a connection short; the
#: connection is then closed, or kept open until the Event it returns is set).
Answer = bytes | Callable[[asyncio.StreamWriter], asyncio.Event | None]


def ok(body: bytes = b"{}", *, status: str = "201 Created", extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 "
        + status.encode()
        + b"\r\nContent-Type: application/json\r\n"
        + extra
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


def chunked(*parts: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        out += b"%x\r\n" % len(p) + p + b"\r\n"
    return out + b"0\r\n\r\n"


@dataclass
class RawServer:
    """Reads HTTP/1.1 requests (Content-Length bodies) and answers from ``answers``."""

    answers: list[Answer] = field(default_factory=list)
    requests: list[tuple[bytes, dict[bytes, bytes], bytes]] = field(default_factory=list)
    connections: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *rest = head[:-4].split(b"\r\n")
                headers = {k.lower(): v for k, _, v in (h.partition(b": ") for h in rest)}
                body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
                self.requests.append((line, headers, body))
                answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
                if callable(answer):
                    hold = answer(writer)
                    if hold is not None:
                        await hold.wait()
                    return
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def raw() -> AsyncIterator[tuple[RawServer, str]]:
    srv = RawServer(answers=[ok()])
    server = await asyncio.start_server(srv.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield srv, f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for w in srv.writers:
            w.close()


def lean(host: str, **kwargs: object) -> RestClient:
    cfg = ClientConfig(host=host, qps=-1, burst=0, user_agent="ksched-test/1")
    for k, v in kwargs.items():
        setattr(cfg, k, v)
    return RestClient(cfg)


async def test_the_request_goes_out_as_one_http11_message_with_the_clients_headers(
    raw: tuple[RawServer, str],
) -> None:
    srv, host = raw
    async with lean(host + "/prefix/", credentials=Credentials(header="Bearer t0k")) as c:
        await c.request("POST", "/api/v1/namespaces/d/pods/p/binding", json_body={"a": 1})
    ((line, headers, body),) = srv.requests
    assert line == b"POST /prefix/api/v1/namespaces/d/pods/p/binding HTTP/1.1"
    assert headers[b"host"] == host.removeprefix("http://").encode()
    assert headers[b"user-agent"] == b"ksched-test/1"
    assert headers[b"accept"] == b"application/json"
    assert headers[b"authorization"] == b"Bearer t0k"
    assert headers[b"content-type"] == b"application/json"
    assert body == b'{"a":1}' and headers[b"content-length"] == b"7"


async def test_connections_are_kept_alive_and_reused(raw: tuple[RawServer, str]) -> None:
    srv, host = raw
    async with lean(host) as c:
        for i in range(20):
            await c.request("POST", f"/x/{i}", body=b"{}")
        await asyncio.gather(*(c.request("PATCH", f"/y/{i}", body=b"{}") for i in range(8)))
        pool = c._lean_pool
        assert pool is not None and pool.opened == srv.connections
    assert len(srv.requests) == 28
    assert srv.connections <= 8  # one for the sequential twenty, at most eight at once


@pytest.mark.parametrize(
    ("name", "answer", "status", "body"),
    [
        ("content-length", ok(b'{"kind":"Binding"}'), 201, b'{"kind":"Binding"}'),
        ("chunked", chunked(b'{"kind":', b'"Pod"}'), 200, b'{"kind":"Pod"}'),
        (
            "gzip",
            ok(gzip.compress(b'{"z":1}'), status="200 OK", extra=b"Content-Encoding: gzip\r\n"),
            200,
            b'{"z":1}',
        ),
        ("no-content", b"HTTP/1.1 204 No Content\r\n\r\n", 204, b""),
    ],
)
async def test_answers_are_read_whole(
    raw: tuple[RawServer, str], name: str, answer: bytes, status: int, body: bytes
) -> None:
    srv, host = raw
    srv.answers = [answer]
    async with lean(host) as c:
        for _ in range(3):  # and the connection stays usable after each
            assert await c.request("POST", "/x", body=b"{}") == body
    assert srv.connections == 1


async def test_a_connection_the_server_closes_is_not_reused(raw: tuple[RawServer, str]) -> None:
    srv, host = raw
    srv.answers = [ok(extra=b"Connection: close\r\n")]
    async with lean(host) as c:
        await c.request("POST", "/a", body=b"{}")
        await c.request("POST", "/b", body=b"{}")
    assert srv.connections == 2

    srv.answers = [ok()]
    srv.connections = 0
    async with lean(host) as c:
        await c.request("POST", "/a", body=b"{}")
        for w in srv.writers:  # the server drops its idle connection
            w.close()
        await asyncio.sleep(0.05)
        await c.request("POST", "/b", body=b"{}")
    assert srv.connections == 2


async def test_an_answer_cut_short_is_a_connection_error_and_the_write_is_not_repeated(
    raw: tuple[RawServer, str],
) -> None:
    srv, host = raw

    def half(writer: asyncio.StreamWriter) -> None:
        writer.write(b'HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{"a"')

    srv.answers = [half]
    async with lean(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("POST", "/api/v1/namespaces/d/pods/p/binding", body=b"{}")
        assert exc.value.status == 0 and exc.value.reason == "ConnectionError"
        assert "POST /api/v1/namespaces/d/pods/p/binding" in exc.value.message
        srv.answers = [ok()]
        assert await c.request("POST", "/next", body=b"{}") == b"{}"  # a new connection
    assert [r[0].split()[1] for r in srv.requests] == [
        b"/api/v1/namespaces/d/pods/p/binding",
        b"/next",
    ]


async def test_a_malformed_answer_is_a_connection_error(raw: tuple[RawServer, str]) -> None:
    srv, host = raw
    srv.answers = [b"HTTP/1.1 abc nonsense\r\n\r\n"]
    async with lean(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("PATCH", "/api/v1/namespaces/d/pods/p/status", body=b"{}")
    assert exc.value.reason == "ConnectionError" and "ProtocolError" in exc.value.message


async def test_status_answers_are_mapped_and_retry_after_is_honoured(
    raw: tuple[RawServer, str],
) -> None:
    srv, host = raw
    status = orjson.dumps(
        {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "m"}
    )
    srv.answers = [
        ok(b"{}", status="429 Too Many Requests", extra=b"Retry-After: 0\r\n"),
        ok(status, status="409 Conflict"),
    ]
    async with lean(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("POST", "/x", body=b"{}")
        assert c.retries == 1
    assert exc.value.status == 409 and exc.value.reason == "AlreadyExists"
    assert len(srv.requests) == 2


async def test_a_timeout_closes_the_connection_so_a_late_answer_is_never_misread(
    raw: tuple[RawServer, str],
) -> None:
    srv, host = raw
    late: list[asyncio.StreamWriter] = []
    done = asyncio.Event()

    def answer_late(writer: asyncio.StreamWriter) -> asyncio.Event:
        late.append(writer)
        return done

    srv.answers = [answer_late, ok(b'{"second":true}')]
    async with lean(host) as c:
        c.request_timeout = 0.2
        with pytest.raises(TimeoutError, match="POST /slow"):
            await c.request("POST", "/slow", body=b"{}")
        late[0].write(ok(b'{"first":true}'))  # too late: nobody reads it
        assert await c.request("POST", "/fast", body=b"{}") == b'{"second":true}'
        done.set()
    assert srv.connections == 2


@pytest.mark.parametrize(
    ("method", "path", "params", "proxy", "token"),
    [
        pytest.param("GET", "/api/v1/pods", None, None, None, id="get"),
        pytest.param("POST", "/x", {"dryRun": "All"}, None, None, id="query-parameters"),
        pytest.param("POST", "/x y", None, None, None, id="path-needs-quoting"),
        pytest.param("POST", "/x", None, "http://127.0.0.1:1", None, id="proxy"),
        pytest.param("POST", "/x", None, None, "Bearer a\r\nX-Evil: 1", id="header-with-crlf"),
        pytest.param("POST", "/x", None, None, "Bearer \u20ac", id="header-not-latin-1"),
    ],
)
async def test_what_stays_on_aiohttp(
    raw: tuple[RawServer, str],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    params: dict[str, str] | None,
    proxy: str | None,
    token: str | None,
) -> None:
    _, host = raw
    c = lean(host, proxy=proxy, credentials=Credentials(header=token))
    sent: list[str] = []

    class Stop(Exception):
        pass

    def by_aiohttp(*args: object, **kwargs: object) -> None:
        sent.append("aiohttp")
        raise Stop

    monkeypatch.setattr(c, "session", lambda: type("S", (), {"request": by_aiohttp})())
    async with c:
        with pytest.raises(Stop):
            await c.request(method, path, params=params, body=b"{}")
    assert sent == ["aiohttp"]
    assert (c._lean_pool is None) == (proxy is not None)


async def test_closing_the_client_ends_requests_in_flight_and_later_ones_reconnect(
    raw: tuple[RawServer, str],
) -> None:
    srv, host = raw
    hold = asyncio.Event()
    srv.answers = [lambda writer: hold, ok()]
    c = lean(host)
    pending = asyncio.ensure_future(c.request("POST", "/held", body=b"{}"))
    for _ in range(100):
        if srv.requests:
            break
        await asyncio.sleep(0.01)
    await c.close()
    with pytest.raises(APIError) as exc:
        await pending
    assert exc.value.reason == "ConnectionError"
    assert await c.request("POST", "/after", body=b"{}") == b"{}"
    await c.close()
    hold.set()
    assert srv.connections == 2
