"""One case, both sides, compared: what the run and the minimizer share.

:class:`Checker` sends the case to upstream's harness (asking for the stored objects),
runs ksched's production path on those objects (:mod:`tests.conformance.production`)
and compares (:mod:`tests.conformance.compare`).

Two normalizations need upstream itself. DefaultPreemption's choice among equally good
candidates is Go's map order (``pickOneNodeForPreemption`` ranges over a map and keeps
the first of the tied nodes), and with fewer candidates than nodes its dry run starts at
a random offset. When only the preemption outcome (the nomination and the victims)
differs, the case runs again on upstream, up to :data:`REPEATS` times, and ksched's
outcome agrees if upstream produced it in one of those runs. And when upstream's cycle
failed with a Filter error that several nodes would raise, the error reported is the
one of the node whose goroutine got there first: the case reruns the same way, and
ksched agrees when one upstream run agrees with it on every aspect.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.conformance import production
from tests.conformance.compare import Comparison, compare
from tests.conformance.upstream import Upstream

Obj = dict[str, Any]

#: Upstream runs tried for a preemption outcome ksched's does not match at first.
REPEATS = 64
#: The aspects that map order may change in upstream's preemption.
PREEMPTION_ASPECTS = frozenset({"nomination", "victims"})
#: ksched's random choices (tie-breaks, preemption offsets) are seeded per case.
SEED = 1


@dataclass
class Checked:
    """A case's outcome: ``invalid`` (upstream refused it, not compared) or both reports
    and their comparison. ``normalized`` names the aspects upstream's reruns settled."""

    case: Obj
    upstream: Obj
    ksched: Obj | None
    comparison: Comparison | None
    normalized: frozenset[str] = frozenset()

    @property
    def invalid(self) -> bool:
        return bool(self.upstream.get("error"))

    @property
    def upstream_crashed(self) -> bool:
        """A goroutine of upstream's scheduler panicked (kube-scheduler would have
        crashed): an upstream bug, the case is not compared."""
        return bool(self.upstream.get("upstreamPanic"))


def _outcome(report: Obj) -> tuple[str, tuple[str, ...]]:
    return (report.get("nominatedNodeName") or "", tuple(sorted(report.get("deleted") or [])))


class Checker:
    """Checks cases against one upstream harness process."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        #: A second process for reruns: ``upstream`` may be streaming a run meanwhile.
        self._reruns: Upstream | None = None
        # ksched logs what a case's profile enables and this build lacks, every case.
        logging.getLogger("ksched.profiles").setLevel(logging.ERROR)
        logging.getLogger("ksched.backend.queue").setLevel(logging.CRITICAL)

    def run(self, cases: Iterable[Obj]) -> Iterator[Checked]:
        """Check every case (streamed through the harness), in order."""
        inputs = ({**c, "echo": True} for c in cases)
        for case, up in self.upstream.run(inputs):
            yield self._finish(case, up)

    def one(self, case: Obj) -> Checked:
        return next(self.run([case]))

    def close(self) -> None:
        """Stop the rerun process (``upstream`` belongs to the caller)."""
        if self._reruns is not None:
            self._reruns.close()
            self._reruns = None

    def _finish(self, case: Obj, up: Obj) -> Checked:
        if up.get("error") or up.get("upstreamPanic"):
            return Checked(case, up, None, None)
        ks = production.run(
            up["objects"], case.get("config"), case["pod"], SEED, case.get("featureGates")
        )
        cmp = compare(up, ks, case.get("config"))
        normalized: frozenset[str] = frozenset()
        differs = set(cmp.differences)
        if differs and differs <= PREEMPTION_ASPECTS:
            mine = _outcome(ks)
            if self._reruns is None:
                self._reruns = Upstream(self.upstream.path)
            for _ in range(REPEATS):
                again = self._reruns.one({**case, "echo": False})
                if _outcome(again) == mine:
                    normalized = frozenset(differs)
                    for aspect in differs:
                        del cmp.differences[aspect]
                    break
        elif differs and (up.get("failure") or {}).get("code") == "Error":
            # A Filter error on several nodes: upstream's parallel search reports the
            # one whose goroutine failed first. ksched agrees when some upstream run
            # reports its error (the first node of ksched's order).
            if self._reruns is None:
                self._reruns = Upstream(self.upstream.path)
            for _ in range(REPEATS):
                again = self._reruns.one({**case, "echo": False})
                if compare(again, ks, case.get("config")).agrees:
                    normalized = frozenset(differs)
                    cmp.differences.clear()
                    break
        return Checked(case, up, ks, cmp, normalized)
