"""Watch lines split by hand from socket chunks, and watch events decoded from bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from ksched.client.watching import decode_event, iter_lines, watch_timeout
from ksched.cluster import APIError, Gone


class Chunks:
    """What iter_lines needs of an aiohttp StreamReader: ``iter_any()``."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for c in self.chunks:
            yield c


async def lines(*chunks: bytes, max_line: int = 1 << 20) -> list[bytes]:
    return [line async for line in iter_lines(Chunks(*chunks), max_line=max_line)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("chunks", "want"),
    [
        pytest.param([b'{"a":1}\n'], [b'{"a":1}'], id="one-line-one-chunk"),
        pytest.param([b"a\nb\nc\n"], [b"a", b"b", b"c"], id="many-lines-one-chunk"),
        pytest.param(
            [b"ab", b"cd", b"ef\ng"], [b"abcdef"], id="line-across-chunks-partial-tail-dropped"
        ),
        pytest.param([b"a\n", b"\n", b"  \n", b"b\n"], [b"a", b"b"], id="blank-lines-skipped"),
        pytest.param([b"a", b"\n", b"b\n"], [b"a", b"b"], id="newline-alone-in-a-chunk"),
        pytest.param([], [], id="empty-stream"),
    ],
)
async def test_iter_lines(chunks: list[bytes], want: list[bytes]) -> None:
    assert await lines(*chunks) == want


async def test_a_line_far_beyond_64k_is_fine_but_a_runaway_one_is_an_error() -> None:
    big = b"x" * 3_000_000
    pieces = [big[i : i + 65536] for i in range(0, len(big), 65536)] + [b"\n"]
    assert await lines(*pieces, max_line=4_000_000) == [big]
    with pytest.raises(APIError, match="longer than"):
        await lines(*pieces, max_line=1_000_000)


def event(type_: str, obj: object) -> bytes:
    return orjson.dumps({"type": type_, "object": obj})


@pytest.mark.parametrize("type_", ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"])
def test_decode_event_types(type_: str) -> None:
    obj = {"metadata": {"name": "p", "resourceVersion": "7"}}
    ev = decode_event(event(type_, obj))
    assert ev.type == type_ and ev.object == obj


def test_error_event_410_is_gone_and_others_are_api_errors() -> None:
    expired = {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version: 1 (5)",
    }
    with pytest.raises(Gone, match="too old resource version") as gone:
        decode_event(event("ERROR", expired))
    assert gone.value.reason == "Expired"
    internal = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"}
    with pytest.raises(APIError) as err:
        decode_event(event("ERROR", internal))
    assert (err.value.status, err.value.reason, err.value.message) == (500, "InternalError", "boom")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(b'{"type": "ADDED"}', id="no-object"),
        pytest.param(b'{"type": "SIDEWAYS", "object": {}}', id="unknown-type"),
    ],
)
def test_bad_lines_are_api_errors_the_informer_retries(line: bytes) -> None:
    with pytest.raises(APIError) as err:
        decode_event(line)
    assert err.value.status == 0


def test_watch_timeouts_are_jittered_between_min_and_twice_min() -> None:
    values = {watch_timeout(300) for _ in range(200)}
    assert min(values) >= 300 and max(values) < 600 and len(values) > 20
