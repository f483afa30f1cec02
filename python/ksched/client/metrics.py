"""client-go's request metrics (``k8s.io/client-go/tools/metrics`` as component-base
registers them): ``rest_client_*`` with upstream's names, labels and buckets.

One process-wide set, as client-go's are global: every :class:`~ksched.client.rest.
RestClient` records into :data:`REST_METRICS` (the scheduler's connection, the leader
election connection, the delegated authentication and authorization clients), and
``ksched run`` exposes them next to the scheduler's metrics. The values are plain numbers
(:mod:`ksched.metrics`' counters and histograms), so recording costs a dictionary update.

* ``rest_client_requests_total{code,method,host}`` — every answer, watches included
  (``<error>`` when no answer came);
* ``rest_client_request_duration_seconds{verb,host}`` — from sending to the full answer
  (not for watches, whose answer is a stream);
* ``rest_client_rate_limiter_duration_seconds{verb,host}`` — the wait in the client-side
  rate limiter;
* ``rest_client_request_size_bytes`` / ``rest_client_response_size_bytes{verb,host}``;
* ``rest_client_request_retries_total{code,verb,host}`` — retries (Retry-After answers,
  broken GET connections, a 401 that re-read the credentials).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Final

from prometheus_client.core import Metric

from ksched.metrics import Counter, Histogram

__all__ = ["REST_METRICS", "RestMetrics"]

_LATENCY: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_SIZES: Final = (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)


def host_of(url: str) -> str:
    """The ``host`` label: the URL's host and port, as client-go's ``url.Host``."""
    return urllib.parse.urlsplit(url).netloc


class RestMetrics:
    """The ``rest_client_*`` families."""

    def __init__(self) -> None:
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
        )
        self.retries = Counter(
            "rest_client_request_retries_total",
            "Number of request retries, partitioned by status code, verb, and host.",
            ("code", "verb", "host"),
        )
        self.latency = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            _LATENCY,
            ("verb", "host"),
        )
        self.rate_limiter = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            _LATENCY,
            ("verb", "host"),
        )
        self.request_size = Histogram(
            "rest_client_request_size_bytes",
            "Request size in bytes. Broken down by verb and host.",
            tuple(float(b) for b in _SIZES),
            ("verb", "host"),
        )
        self.response_size = Histogram(
            "rest_client_response_size_bytes",
            "Response size in bytes. Broken down by verb and host.",
            tuple(float(b) for b in _SIZES),
            ("verb", "host"),
        )

    def families(self) -> Iterator[Metric]:
        for m in (
            self.rate_limiter,
            self.latency,
            self.request_size,
            self.requests,
            self.response_size,
            self.retries,
        ):
            yield m.family()

    def reset(self) -> None:
        for c in (self.requests, self.retries):
            c.values.clear()
        for h in (self.latency, self.rate_limiter, self.request_size, self.response_size):
            h.series.clear()

    # ---- recording -------------------------------------------------------------------

    def answered(
        self,
        method: str,
        host: str,
        code: int | str,
        *,
        seconds: float | None,
        waited: float,
        sent: int,
        received: int,
    ) -> None:
        self.requests.inc((str(code), method, host))
        self.rate_limiter.observe((method, host), waited)
        self.request_size.observe((method, host), float(sent))
        if seconds is not None:
            self.latency.observe((method, host), seconds)
            self.response_size.observe((method, host), float(received))

    def retried(self, method: str, host: str, code: int | str) -> None:
        self.retries.inc((str(code), method, host))


#: The process's ``rest_client_*`` metrics.
REST_METRICS: Final = RestMetrics()
