"""ksched agrees with kube-scheduler v1.36.5's own code on a few hundred seeded cases.

The cases come from :mod:`tests.conformance.generate` with a fixed seed, so a failure
reproduces; the failure message carries the first disagreement, minimized
(``python -m tests.conformance --replay`` checks a saved one again). ``make
conformance CASES=10000 SEED=N`` runs many more and writes the summary.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conformance import production
from tests.conformance.check import Checker
from tests.conformance.generate import generate
from tests.conformance.minimize import minimize
from tests.conformance.upstream import Upstream

SEED = 20261201
CASES = 300


def test_seeded_cases_agree_with_upstream_on_every_aspect(upstream: Upstream) -> None:
    checker = Checker(upstream)
    compared: Counter[str] = Counter()
    try:
        invalid = []
        disagreeing = []
        crashed = 0
        results = list(checker.run(generate(SEED, i).to_json() for i in range(CASES)))
        for checked in results:
            if checked.upstream_crashed:
                crashed += 1  # an upstream bug (README): kube-scheduler would have crashed
                continue
            if checked.invalid or checked.comparison is None:
                invalid.append((checked.case["id"], checked.upstream.get("error")))
                continue
            compared.update(checked.comparison.compared)
            if not checked.comparison.agrees:
                disagreeing.append(checked)
        assert not invalid, f"upstream refused generated cases: {invalid[:3]}"
        if disagreeing:
            small = minimize(checker, disagreeing[0], budget=200)
            assert small.comparison is not None
            repro = {"case": small.case, "differences": small.comparison.differences}
            raise AssertionError(
                f"{len(disagreeing)}/{CASES} cases disagree "
                f"({[c.case['id'] for c in disagreeing[:10]]}); the first, minimized:\n"
                + json.dumps(repro, indent=1)
            )
    finally:
        checker.close()
    # The cases exercise every aspect, not just the easy ones.
    assert compared["scores"] >= CASES // 10
    assert compared["condition"] >= CASES // 4
    compared_cases = CASES - crashed
    assert all(compared[a] == compared_cases for a in ("runs", "feasible", "statuses", "chosen"))


def test_a_preemption_case_exercises_victims(upstream: Upstream) -> None:
    """Some seeded case preempts: its victims and nomination are compared for real."""
    checker = Checker(upstream)
    try:
        for i in range(CASES):
            checked = checker.one(generate(SEED, i).to_json())
            if checked.upstream.get("deleted"):
                assert checked.comparison is not None and checked.comparison.agrees, (
                    checked.comparison.differences if checked.comparison else checked.upstream
                )
                assert checked.ksched is not None
                assert checked.ksched["deleted"] == checked.upstream["deleted"]
                return
    finally:
        checker.close()
    raise AssertionError(f"no case of seed {SEED} preempts: the generator lost preemption")


#: Disagreements found by ``make conformance`` and fixed: each file holds the case
#: (minimized where the minimizer could shrink it), its origin ``id`` (seed:index) and
#: ``why`` it disagreed. The case itself is stored, not its seed and index: the
#: generator grows, and a seed's case changes with it.
REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.json"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_fixed_disagreement_stays_fixed(upstream: Upstream, path: Path) -> None:
    saved = json.loads(path.read_text())
    checker = Checker(upstream)
    try:
        checked = checker.one(saved["case"])
    finally:
        checker.close()
    assert not checked.invalid, checked.upstream.get("error")
    assert checked.comparison is not None
    assert checked.comparison.agrees, (saved["why"], checked.comparison.differences)


#: Cases on which upstream's scheduler panics (kube-scheduler would crash): upstream bugs
#: the README lists. They are not compared; ksched must run them without an error.
UPSTREAM_PANICS = sorted((Path(__file__).parent / "regressions" / "upstream-panics").glob("*.json"))


@pytest.mark.parametrize("path", UPSTREAM_PANICS, ids=[p.stem for p in UPSTREAM_PANICS])
def test_upstream_panic_is_reported_and_ksched_runs_the_case(
    upstream: Upstream, path: Path
) -> None:
    saved = json.loads(path.read_text())
    checker = Checker(upstream)
    try:
        checked = checker.one(saved["case"])
    finally:
        checker.close()
    assert checked.upstream_crashed, (saved["why"], checked.upstream)
    case = saved["case"]
    report = production.run(checked.upstream["objects"], case.get("config"), case["pod"], 1)
    assert not report["error"], report["error"]
