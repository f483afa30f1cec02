"""HTTP behaviour of ksched.client.rest against a local aiohttp server: client-go's
retries (Retry-After on 429/5xx, broken GETs, one re-authentication after 401) and what
is *not* retried. Not an API server stand-in: the integration tests use the real one;
these cases need answers a healthy apiserver does not give on demand."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ksched.client import http1
from ksched.client import rest as rest_mod
from ksched.client.api import KubeClusterAPI
from ksched.client.kubeconfig import ClientConfig, Credentials
from ksched.client.rest import RestClient
from ksched.client.watching import watch
from ksched.cluster import APIError, Gone

Handler = Callable[[web.Request], Any]


class Server:
    """Serves ``handler`` for every path and records the requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.handler: Handler = lambda r: web.json_response({})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs, dict(request.headers)))
        result = self.handler(request)
        if asyncio.iscoroutine(result):
            result = await result
        assert isinstance(result, web.StreamResponse)
        return result


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    srv = Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    ts = TestServer(app, host="127.0.0.1")
    await ts.start_server()
    try:
        yield srv, f"http://127.0.0.1:{ts.port}"
    finally:
        await ts.close()


#: How the current test's writes are sent (the ``writes_by`` fixture sets it).
WRITES_BY = {"lean": True}


@pytest.fixture(autouse=True, params=["lean-writes", "aiohttp-writes"])
def writes_by(request: pytest.FixtureRequest) -> str:
    """Every case runs with writes on the lean HTTP/1.1 client and on aiohttp."""
    WRITES_BY["lean"] = request.param == "lean-writes"
    return str(request.param)


def rest_client(cfg: ClientConfig, **kwargs: Any) -> RestClient:
    return RestClient(cfg, lean_writes=WRITES_BY["lean"], **kwargs)


def client(host: str, credentials: Credentials | None = None) -> RestClient:
    cfg = ClientConfig(host=host, qps=-1, burst=0)
    if credentials is not None:
        cfg.credentials = credentials
    return rest_client(cfg)


def status(code: int, reason: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"kind": "Status", "code": code, "reason": reason, "message": reason.lower()}
    return web.json_response(body, status=code, headers=headers)


def answers(*responses: Callable[[], web.StreamResponse]) -> Handler:
    """Answer the n-th request with the n-th response (the last one repeats)."""
    seq = list(responses)

    def handler(_: web.Request) -> web.StreamResponse:
        return seq.pop(0)() if len(seq) > 1 else seq[0]()

    return handler


async def test_429_and_5xx_with_retry_after_are_retried(server: tuple[Server, str]) -> None:
    srv, host = server
    srv.handler = answers(
        lambda: status(429, "TooManyRequests", {"Retry-After": "0"}),
        lambda: status(503, "ServiceUnavailable", {"Retry-After": "0"}),
        lambda: web.json_response({"ok": True}, status=201),
    )
    async with client(host) as c:
        assert await c.request_json("POST", "/x", body={"a": 1}) == {"ok": True}
        assert c.retries == 2
    assert [m for m, _, _ in srv.requests] == ["POST"] * 3


async def test_5xx_without_retry_after_is_not_retried(server: tuple[Server, str]) -> None:
    srv, host = server
    srv.handler = lambda r: status(500, "InternalError")
    async with client(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("GET", "/x")
    assert exc.value.status == 500 and len(srv.requests) == 1


async def test_retry_after_gives_up_after_max_retries(
    server: tuple[Server, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, host = server
    monkeypatch.setattr(rest_mod, "MAX_RETRIES", 3)
    srv.handler = lambda r: status(429, "TooManyRequests", {"Retry-After": "0"})
    async with client(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("GET", "/x")
    assert exc.value.status == 429 and len(srv.requests) == 4


class RotatingToken:
    """A kubernetes Configuration look-alike whose refresh hook issues a new token."""

    def __init__(self) -> None:
        self.n = 0
        self.refresh_api_key_hook = object()

    def get_api_key_with_prefix(self, identifier: str) -> str:
        self.n += 1
        return f"Bearer token-{self.n}"


async def test_401_refreshes_the_credentials_once(server: tuple[Server, str]) -> None:
    srv, host = server
    srv.handler = lambda r: (
        web.json_response({})
        if r.headers.get("Authorization") == "Bearer token-2"
        else status(401, "Unauthorized")
    )
    async with client(host, Credentials(RotatingToken())) as c:
        assert await c.request_json("GET", "/x") == {}
    assert [h["Authorization"] for _, _, h in srv.requests] == ["Bearer token-1", "Bearer token-2"]

    srv.requests.clear()
    srv.handler = lambda r: status(401, "Unauthorized")
    async with client(host, Credentials(RotatingToken())) as c:
        with pytest.raises(APIError) as exc:
            await c.request("GET", "/x")
    assert exc.value.status == 401 and len(srv.requests) == 2


async def drop_connection(request: web.Request) -> web.StreamResponse:
    assert request.transport is not None
    request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response()


async def test_a_broken_get_is_retried_but_a_broken_write_is_not(
    server: tuple[Server, str],
) -> None:
    srv, host = server

    async def handler(request: web.Request) -> web.StreamResponse:
        if len(srv.requests) == 1:
            return await drop_connection(request)
        return web.json_response({"n": len(srv.requests)})

    srv.handler = handler
    async with client(host) as c:
        assert await c.request_json("GET", "/x") == {"n": 2}

    srv.requests.clear()
    srv.handler = drop_connection
    async with client(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("POST", "/pods/p/binding", body=b"{}")
    assert exc.value.status == 0 and exc.value.reason == "ConnectionError"
    assert len(srv.requests) == 1  # the binding may have happened: never repeated


async def test_a_connect_refused_by_uvloops_fd_reuse_is_retried_for_every_verb(
    server: tuple[Server, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvloop#653: opening a connection can raise ``RuntimeError: File descriptor N is
    used by transport`` before anything is sent. A write is then safe to repeat; when it
    persists, the caller gets a connection error, never a bare RuntimeError."""
    srv, host = server
    real = aiohttp.TCPConnector._create_connection
    failures = {"left": 2}

    async def flaky(self: aiohttp.TCPConnector, *args: Any, **kwargs: Any) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise RuntimeError(
                "File descriptor 14 is used by transport <TCPTransport closed=False>"
            )
        return await real(self, *args, **kwargs)

    real_lean = http1.Pool._connect

    async def flaky_lean(self: http1.Pool) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise RuntimeError("File descriptor 14 is used by transport <TCPTransport>")
        return await real_lean(self)

    monkeypatch.setattr(aiohttp.TCPConnector, "_create_connection", flaky)
    monkeypatch.setattr(http1.Pool, "_connect", flaky_lean)
    async with client(host) as c:
        assert orjson.loads(await c.request("POST", "/pods/p/binding", body=b"{}")) == {}
    assert [m for m, _, _ in srv.requests] == ["POST"]  # sent once, after two failed connects

    failures["left"] = 100
    srv.requests.clear()
    async with client(host) as c:
        with pytest.raises(APIError) as exc:
            await c.request("PATCH", "/pods/p/status", body=b"{}")
    assert exc.value.status == 0 and exc.value.reason == "ConnectionError"
    assert "is used by transport" in exc.value.message and srv.requests == []

    async with client(host) as c:
        monkeypatch.setattr(aiohttp.TCPConnector, "_create_connection", real)
        failures["left"] = 0
        with pytest.raises(RuntimeError, match="another"):
            # Any other RuntimeError is a bug, not a connection failure: it is not hidden.
            async def broken(self: aiohttp.TCPConnector, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("another")

            monkeypatch.setattr(aiohttp.TCPConnector, "_create_connection", broken)
            await c.request("GET", "/x")


async def test_watch_stream_with_chunks_bookmarks_and_a_410(server: tuple[Server, str]) -> None:
    srv, host = server

    async def stream(request: web.Request) -> web.StreamResponse:
        assert request.query["watch"] == "true"
        assert request.query["allowWatchBookmarks"] == "true"
        assert request.query["resourceVersion"] == "5"
        resp = web.StreamResponse()
        await resp.prepare(request)
        lines = [
            {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "6"}}},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
            {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                         "message": "too old resource version: 5 (8)"}},
        ]  # fmt: skip
        data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
        for i in range(0, len(data), 7):  # deliberately tiny chunks
            await resp.write(data[i : i + 7])
        return resp

    srv.handler = stream
    seen: list[str] = []
    async with client(host) as c:
        with pytest.raises(Gone, match="too old resource version"):
            async for ev in watch(c, "/api/v1/pods", resource_version="5", timeout_seconds=10):
                seen.append(ev.type)
    assert seen == ["ADDED", "BOOKMARK"]


async def test_list_follows_continue_tokens_and_falls_back_when_one_expires(
    server: tuple[Server, str],
) -> None:
    srv, host = server

    def pages(request: web.Request) -> web.Response:
        q = request.query
        assert q["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"
        if "limit" not in q:  # the fallback: one full list
            items = [{"metadata": {"name": n}} for n in "abc"]
            return web.json_response({"metadata": {"resourceVersion": "20"}, "items": items})
        if "continue" not in q:
            return web.json_response(
                {"metadata": {"resourceVersion": "10", "continue": "t1"},
                 "items": [{"metadata": {"name": "a"}}]}
            )  # fmt: skip
        return status(410, "Expired")

    srv.handler = pages
    api = KubeClusterAPI(ClientConfig(host=host, qps=-1, burst=0), page_size=1)
    async with api:
        listing = await api.list(kind="pods")
    assert [i["metadata"]["name"] for i in listing.items] == ["a", "b", "c"]
    assert listing.resource_version == "20"


async def test_requests_beyond_the_bound_wait_in_the_client_on_few_connections(
    server: tuple[Server, str],
) -> None:
    srv, host = server
    active = 0
    most = 0
    peers: set[object] = set()
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        nonlocal active, most
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        active += 1
        most = max(most, active)
        if most >= 3:
            release.set()
        await release.wait()  # hold every answer until the bound is reached
        active -= 1
        return web.json_response({"ok": True}, status=201)

    srv.handler = slow
    c = rest_client(ClientConfig(host=host, qps=-1, burst=0), max_connections=3)
    async with c:
        answers_ = await asyncio.gather(
            *(c.request_json("POST", f"/pods/p{i}/binding", body={}) for i in range(60))
        )
    assert answers_ == [{"ok": True}] * 60
    assert most == 3 and c.max_in_flight == 3 and c.in_flight == 0
    assert len(peers) <= 3  # kept alive and reused, not one connection per request


async def test_open_watches_do_not_take_the_slots_of_requests(server: tuple[Server, str]) -> None:
    srv, host = server
    streaming: list[web.StreamResponse] = []
    hold = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            return web.json_response({"n": len(srv.requests)})
        resp = web.StreamResponse()
        await resp.prepare(request)
        streaming.append(resp)
        await hold.wait()
        return resp

    srv.handler = handler
    c = RestClient(ClientConfig(host=host, qps=-1, burst=0), max_connections=2)

    async def follow(i: int) -> None:
        async for _ in watch(c, f"/w{i}", resource_version="1", timeout_seconds=60):
            pass

    async with c:
        watches = [asyncio.ensure_future(follow(i)) for i in range(5)]
        try:
            for _ in range(1000):
                if len(streaming) == 5:
                    break
                await asyncio.sleep(0.01)
            # Five watches are open on a client bounded to two requests in flight.
            assert len(streaming) == 5
            got = await asyncio.wait_for(
                asyncio.gather(*(c.request_json("GET", "/x") for _ in range(4))), 10
            )
            assert len(got) == 4 and c.in_flight == 0
        finally:
            hold.set()
            await asyncio.gather(*watches, return_exceptions=True)


def test_the_bound_must_allow_a_request() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        RestClient(ClientConfig(host="http://127.0.0.1:1", qps=-1, burst=0), max_connections=0)


async def test_a_waiting_request_keeps_its_object_and_encodes_it_once_sent(
    server: tuple[Server, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, host = server
    release = asyncio.Event()
    bodies: list[bytes] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        bodies.append(await request.read())
        await release.wait()
        return web.json_response({}, status=201)

    encoded: list[object] = []
    real_dumps = orjson.dumps

    def dumps(obj: object) -> bytes:
        encoded.append(obj)
        return real_dumps(obj)

    monkeypatch.setattr(orjson, "dumps", dumps)
    srv.handler = handler
    c = rest_client(ClientConfig(host=host, qps=-1, burst=0), max_connections=1)
    async with c:
        first = asyncio.ensure_future(c.request("POST", "/a", json_body={"n": 1}))
        second = asyncio.ensure_future(c.request("POST", "/b", json_body={"n": 2}))
        for _ in range(1000):
            if bodies:
                break
            await asyncio.sleep(0.01)
        assert encoded == [{"n": 1}]  # the second waits for the slot, not yet encoded
        release.set()
        await asyncio.gather(first, second)
    assert encoded == [{"n": 1}, {"n": 2}]
    assert bodies == [b'{"n":1}', b'{"n":2}']
    assert srv.requests[0][2]["Content-Type"] == "application/json"


# ---- the write guard (lease fencing) ------------------------------------------------


class Refused(APIError):
    def __init__(self) -> None:
        super().__init__(0, "Fenced", "refused")


class Guard:
    """Refuses once ``closed``; records what it was asked about."""

    def __init__(self) -> None:
        self.closed = False
        self.calls: list[tuple[str, str]] = []

    def __call__(self, method: str, path: str) -> None:
        self.calls.append((method, path))
        if self.closed:
            raise Refused()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "/api/v1/namespaces/d/pods/p/binding", {"a": 1}, id="post-binding"),
        pytest.param("PATCH", "/api/v1/namespaces/d/pods/p/status", {"s": 1}, id="patch-status"),
        pytest.param("DELETE", "/api/v1/namespaces/d/pods/p", {"kind": "D"}, id="delete-pod"),
        pytest.param("PUT", "/api/v1/persistentvolumes/pv", {"m": 1}, id="put-object"),
        pytest.param("POST", "/api/v1/namespaces/d/events", None, id="post-without-body"),
    ],
)
async def test_a_refusing_write_guard_stops_the_write_before_it_is_sent(
    server: tuple[Server, str], method: str, path: str, body: Any
) -> None:
    srv, host = server
    guard = Guard()
    async with client(host) as rc:
        rc.write_guard = guard
        await rc.request(method, path, json_body=body)  # open: sent
        assert len(srv.requests) == 1
        guard.closed = True
        with pytest.raises(Refused):
            await rc.request(method, path, json_body=body)
        await asyncio.sleep(0.05)
        assert len(srv.requests) == 1  # nothing of the refused write reached the server
        # The connection stays usable for the next request.
        guard.closed = False
        await rc.request(method, path, json_body=body)
        assert len(srv.requests) == 2
    assert all(c == (method, path) for c in guard.calls)


async def test_the_write_guard_is_asked_after_the_rate_limiter_wait(
    server: tuple[Server, str],
) -> None:
    srv, host = server
    guard = Guard()
    cfg = ClientConfig(host=host, qps=5, burst=1)
    async with rest_client(cfg) as rc:
        rc.write_guard = guard
        await rc.request("POST", "/first", json_body={})
        # The second write waits ~0.2 s for a token; the guard closes meanwhile.
        second = asyncio.ensure_future(rc.request("POST", "/second", json_body={}))
        await asyncio.sleep(0.05)
        # aiohttp asks before the headers and before the body of /first, the lean client
        # once before its single write.
        assert not second.done() and len(guard.calls) == (1 if WRITES_BY["lean"] else 2)
        guard.closed = True
        with pytest.raises(Refused):
            await second
    assert [p for _, p, _ in srv.requests] == ["/first"]


async def test_reads_and_watches_are_never_guarded(server: tuple[Server, str]) -> None:
    srv, host = server
    guard = Guard()
    guard.closed = True
    async with client(host) as rc:
        rc.write_guard = guard
        assert await rc.request_json("GET", "/api/v1/pods") == {}
    assert guard.calls == []
    assert len(srv.requests) == 1


async def test_the_cluster_api_installs_the_guard_on_its_scheduling_client_only(
    server: tuple[Server, str],
) -> None:
    srv, host = server
    guard = Guard()
    guard.closed = True
    srv.handler = lambda r: web.json_response({"metadata": {"name": "l"}, "spec": {}})
    api = KubeClusterAPI(ClientConfig(host=host, qps=-1, burst=0))
    try:
        api.set_write_guard(guard)
        with pytest.raises(Refused):
            await api.bind(namespace="d", name="p", uid="u", node_name="n")
        # Leases go through the leader election client, which is never fenced.
        await api.update_lease(lease={"metadata": {"namespace": "d", "name": "l"}})
    finally:
        await api.close()
    assert [m for m, _, _ in srv.requests] == ["PUT"]


async def test_a_guard_that_closes_between_headers_and_body_still_stops_the_write(
    server: tuple[Server, str], writes_by: str
) -> None:
    if writes_by == "lean-writes":
        pytest.skip("the lean client writes headers and body at once, after one check")
    srv, host = server

    class ClosesAfterHeaders(Guard):
        def __call__(self, method: str, path: str) -> None:
            self.closed = len(self.calls) >= 1  # the headers check passes, the body's fails
            super().__call__(method, path)

    guard = ClosesAfterHeaders()
    async with client(host) as rc:
        rc.write_guard = guard
        with pytest.raises(Refused):
            await rc.request("POST", "/api/v1/namespaces/d/pods/p/binding", json_body={"a": 1})
    await asyncio.sleep(0.05)
    assert len(guard.calls) == 2
    assert srv.requests == []
