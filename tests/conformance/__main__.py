"""``python -m tests.conformance``: many seeded cases, a summary, reproductions.

    python -m tests.conformance --cases 10000 --seed 1 --out build/conformance
    python -m tests.conformance --replay build/conformance/disagreements/1-17.json

A run generates ``--cases`` cases from ``--seed`` (:mod:`tests.conformance.generate`),
checks each on both sides (:class:`tests.conformance.check.Checker`) and writes to
``--out``:

* ``summary.json`` and ``summary.md``: agreement per aspect (cases where the aspect was
  compared and agreed), per pod feature (cases with that feature where every aspect
  agreed), how many cases upstream refused (invalid, a generator bug), the cases on
  which upstream's scheduler panicked (an upstream bug, not compared) and how many
  preemption outcomes needed upstream reruns;
* ``disagreements/<seed>-<index>.json``: every disagreeing case minimized
  (:mod:`tests.conformance.minimize`), with both reports and the differences, which
  ``--replay`` checks again.

The exit status is 0 when every compared aspect of every valid case agreed and no case
was invalid, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conformance.check import Checked, Checker
from tests.conformance.compare import ASPECTS
from tests.conformance.generate import Case, generate, unimplemented
from tests.conformance.minimize import minimize
from tests.conformance.upstream import Upstream

Obj = dict[str, Any]


def summarize(
    seed: int, results: list[tuple[Case, Checked]], seconds: float
) -> tuple[Obj, list[tuple[Case, Checked]]]:
    """The summary of a run and its disagreeing cases."""
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    feature_cases: Counter[str] = Counter()
    feature_agreed: Counter[str] = Counter()
    normalized: Counter[str] = Counter()
    invalid: list[str] = []
    crashed: list[str] = []
    disagreeing: list[tuple[Case, Checked]] = []
    for case, checked in results:
        if checked.upstream_crashed:
            crashed.append(f"{case.id}: {checked.upstream['upstreamPanic']}")
            continue
        if checked.invalid or checked.comparison is None:
            invalid.append(f"{case.id}: {checked.upstream.get('error')}")
            continue
        cmp = checked.comparison
        for aspect in cmp.compared:
            compared[aspect] += 1
            if aspect not in cmp.differences:
                agreed[aspect] += 1
        for aspect in checked.normalized:
            normalized[aspect] += 1
        for feature in case.features:
            feature_cases[feature] += 1
            if cmp.agrees:
                feature_agreed[feature] += 1
        if not cmp.agrees:
            disagreeing.append((case, checked))
    valid = len(results) - len(invalid) - len(crashed)
    summary: Obj = {
        "seed": seed,
        "cases": len(results),
        "valid": valid,
        "invalid": invalid,
        "upstream_panics": crashed,
        "agreeing_cases": valid - len(disagreeing),
        "seconds": round(seconds, 1),
        "plugins_left_out": unimplemented(),
        "aspects": {
            a: {
                "agreed": agreed[a],
                "compared": compared[a],
                "percent": _pct(agreed[a], compared[a]),
            }
            for a in ASPECTS
        },
        "features": {
            f: {
                "agreed": feature_agreed[f],
                "cases": n,
                "percent": _pct(feature_agreed[f], n),
            }
            for f, n in sorted(feature_cases.items())
        },
        "normalized_by_reruns": dict(normalized),
        "disagreements": [case.id for case, _ in disagreeing],
    }
    return summary, disagreeing


def _pct(a: int, b: int) -> float:
    return round(100.0 * a / b, 3) if b else 100.0


def markdown(summary: Obj) -> str:
    lines = [
        f"# Conformance against kube-scheduler v1.36.5: seed {summary['seed']}",
        "",
        f"{summary['cases']} cases, {summary['valid']} valid, "
        f"{summary['agreeing_cases']} agreeing on every aspect, in {summary['seconds']} s.",
        f"Plugins left out of the cases (not in this build): "
        f"{', '.join(summary['plugins_left_out']) or 'none'}.",
        "",
        "| aspect | agreed | compared | % |",
        "|---|---:|---:|---:|",
    ]
    for a, v in summary["aspects"].items():
        lines.append(f"| {a} | {v['agreed']} | {v['compared']} | {v['percent']} |")
    lines += ["", "| feature | agreed | cases | % |", "|---|---:|---:|---:|"]
    for f, v in summary["features"].items():
        lines.append(f"| {f} | {v['agreed']} | {v['cases']} | {v['percent']} |")
    if summary["normalized_by_reruns"]:
        lines += ["", f"Settled by upstream reruns: {summary['normalized_by_reruns']}."]
    if summary["disagreements"]:
        lines += ["", "Disagreements (minimized in disagreements/):", ""]
        lines += [f"* {cid}" for cid in summary["disagreements"]]
    if summary["invalid"]:
        lines += ["", "Cases upstream refused (generator bugs):", ""]
        lines += [f"* {e}" for e in summary["invalid"]]
    if summary["upstream_panics"]:
        lines += [
            "",
            "Cases on which upstream's scheduler panicked (upstream bugs, not compared; "
            "see the README):",
            "",
        ]
        lines += [f"* {e}" for e in summary["upstream_panics"]]
    return "\n".join(lines) + "\n"


def reproduction(checked: Checked) -> Obj:
    """A disagreement as written to disk: the input, both reports, the differences."""
    assert checked.comparison is not None and checked.ksched is not None
    up = {k: v for k, v in checked.upstream.items() if k != "objects"}
    return {
        "case": {k: v for k, v in checked.case.items() if k != "echo"},
        "differences": checked.comparison.differences,
        "upstream": up,
        "ksched": checked.ksched,
    }


def run(seed: int, cases: int, out: Path, *, minimize_budget: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    repro_dir = out / "disagreements"
    start = time.monotonic()
    generated: dict[str, Case] = {}

    def inputs() -> Any:
        for i in range(cases):
            case = generate(seed, i)
            generated[case.id] = case
            yield case.to_json()

    results: list[tuple[Case, Checked]] = []
    with Upstream() as up:
        checker = Checker(up)
        try:
            for n, checked in enumerate(checker.run(inputs()), 1):
                results.append((generated.pop(checked.case["id"]), checked))
                if n % 1000 == 0:
                    print(f"conformance: {n}/{cases} cases", file=sys.stderr, flush=True)
            summary, disagreeing = summarize(seed, results, time.monotonic() - start)
            if disagreeing:
                repro_dir.mkdir(exist_ok=True)
            for case, checked in disagreeing:
                small = minimize(checker, checked, budget=minimize_budget)
                name = case.id.replace(":", "-")
                (repro_dir / f"{name}.json").write_text(
                    json.dumps(reproduction(small), indent=1, sort_keys=True) + "\n"
                )
        finally:
            checker.close()
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.md").write_text(markdown(summary))
    print(markdown(summary).split("\n| feature")[0], file=sys.stderr)
    return 0 if not disagreeing and not summary["invalid"] else 1


def replay(path: Path) -> int:
    saved = json.loads(path.read_text())
    with Upstream() as up:
        checker = Checker(up)
        try:
            checked = checker.one(saved["case"])
        finally:
            checker.close()
    if checked.invalid or checked.comparison is None:
        print(f"upstream refused the case: {checked.upstream.get('error')}")
        return 1
    diffs = checked.comparison.differences
    print(json.dumps(diffs, indent=1) if diffs else "agrees on every aspect")
    return 0 if checked.comparison.agrees else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance", description=__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("build/conformance"))
    parser.add_argument(
        "--minimize-budget", type=int, default=400, help="checks per disagreement shrunk"
    )
    parser.add_argument("--replay", type=Path, help="check a saved reproduction again")
    args = parser.parse_args(argv)
    if args.replay:
        return replay(args.replay)
    return run(args.seed, args.cases, args.out, minimize_budget=args.minimize_budget)


if __name__ == "__main__":
    sys.exit(main())
