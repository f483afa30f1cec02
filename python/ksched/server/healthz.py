"""``/healthz``, ``/livez`` and ``/readyz`` as ``k8s.io/apiserver/pkg/server/healthz``
answers them.

A group runs its named checks in order. All passing: ``200 ok`` (with ``?verbose``, one
``[+]name ok`` line per check and ``<group> check passed``). Any failing: ``500`` with
every check listed, failures as ``[-]name failed: reason withheld`` (the reason goes to
the log only: these paths are public), then ``<group> check failed``. ``?exclude=name``
skips a check. ``/<group>/<name>`` runs one check and, unlike the group, shows its error.

The checks of kube-scheduler (``cmd/kube-scheduler/app/server.go``), which ``ksched
run`` installs the same way:

* ``/healthz`` — ``leaderElection`` (the watchdog) when leader election is on, else
  ``ping``;
* ``/livez`` — ``ping``;
* ``/readyz`` — ``leaderElection`` (when on), ``shutdown`` (fails once a stop was
  requested), ``sched-handler-sync`` (informers synced and their initial events
  handled), and ``informer-sync`` with coordinated leader election (the LeaseCandidate).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["PING", "HealthCheck", "HealthGroup", "HealthResult", "named_check"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """A named check: ``check()`` returns None when healthy, else the error text."""

    name: str
    check: Callable[[], str | None]


def named_check(name: str, check: Callable[[], str | None]) -> HealthCheck:
    return HealthCheck(name, check)


#: ``healthz.PingHealthz``.
PING = HealthCheck("ping", lambda: None)


@dataclass(frozen=True, slots=True)
class HealthResult:
    status: int
    body: str


class HealthGroup:
    """One of ``healthz``/``livez``/``readyz`` with its checks."""

    def __init__(self, name: str, checks: Sequence[HealthCheck]) -> None:
        self.name = name
        self.checks = list(checks) or [PING]
        #: Called with (group, check, passed) for every check run (``/metrics/slis``).
        self.on_result: Callable[[str, str, bool], None] | None = None

    def _run_check(self, c: HealthCheck) -> str | None:
        err = _safe(c)
        if self.on_result is not None:
            self.on_result(self.name, c.name, err is None)
        return err

    def names(self) -> list[str]:
        return [c.name for c in self.checks]

    def run(self, *, verbose: bool = False, exclude: Iterable[str] = ()) -> HealthResult:
        excluded = set(exclude)
        lines: list[str] = []
        failed: list[str] = []
        for c in self.checks:
            if c.name in excluded:
                excluded.discard(c.name)
                lines.append(f"[+]{c.name} excluded: ok")
                continue
            err = self._run_check(c)
            if err is not None:
                lines.append(f"[-]{c.name} failed: reason withheld")
                failed.append(f"[-]{c.name} failed: {err}")
            else:
                lines.append(f"[+]{c.name} ok")
        if excluded:
            quoted = ",".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        out = "".join(line + "\n" for line in lines)
        if failed:
            log.info("%s check failed: %s", self.name, "; ".join(failed))
            return HealthResult(500, f"{out}{self.name} check failed\n")
        if not verbose:
            return HealthResult(200, "ok")
        return HealthResult(200, f"{out}{self.name} check passed\n")

    def run_one(self, name: str) -> HealthResult | None:
        """``/<group>/<name>``; None when there is no such check."""
        for c in self.checks:
            if c.name == name:
                err = self._run_check(c)
                if err is None:
                    return HealthResult(200, "ok")
                return HealthResult(500, f"internal server error: {err}\n")
        return None


def _safe(c: HealthCheck) -> str | None:
    try:
        return c.check()
    except Exception as exc:  # a broken check is a failed check, not a crashed server
        return f"{type(exc).__name__}: {exc}"
