"""API server answers mapped to the exceptions of ksched.cluster."""

from __future__ import annotations

import orjson
import pytest

from ksched.client.rest import error_from_response
from ksched.cluster import APIError, Conflict, Gone, NotFound


def status(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
         "reason": reason, "message": message}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("http", "body", "cls", "reason", "message"),
    [
        pytest.param(
            404,
            status(404, "NotFound", 'pods "p" not found'),
            NotFound,
            "NotFound",
            'pods "p" not found',
            id="not-found",
        ),
        pytest.param(
            409,
            status(409, "Conflict", "already assigned"),
            Conflict,
            "Conflict",
            "already assigned",
            id="conflict",
        ),
        pytest.param(
            409,
            status(409, "AlreadyExists", "exists"),
            Conflict,
            "AlreadyExists",
            "exists",
            id="already-exists-is-a-conflict",
        ),
        pytest.param(410, status(410, "Expired", "too old"), Gone, "Expired", "too old", id="gone"),
        pytest.param(
            422, status(422, "Invalid", "bad type"), APIError, "Invalid", "bad type", id="invalid"
        ),
        pytest.param(
            403, status(403, "Forbidden", "nope"), APIError, "Forbidden", "nope", id="forbidden"
        ),
        pytest.param(
            503,
            b"upstream connect error",
            APIError,
            "ServiceUnavailable",
            "upstream connect error",
            id="plain-text-body",
        ),
        pytest.param(500, b"", APIError, "InternalError", "InternalError", id="empty-body"),
        pytest.param(418, b"", APIError, "Unknown", "HTTP 418", id="unknown-code"),
    ],
)
def test_error_from_response(
    http: int, body: bytes, cls: type[APIError], reason: str, message: str
) -> None:
    exc = error_from_response(http, body)
    assert type(exc) is cls
    assert (exc.status, exc.reason, exc.message) == (http, reason, message)
