#!/usr/bin/env bash
# The wheel as a user gets it: install dist/ksched-*.whl into a fresh venv and use the
# commands from outside the source tree (no benches/, no hack/, no source on sys.path).
#
#   hack/test-wheel.sh [WHEEL]        (make test-wheel builds the wheel first)
#
# Checks, each with a message naming what failed:
#   * `ksched --help` and `ksched simulate --help` list the subcommands and workloads;
#   * `ksched simulate` places every pod (exit 0), and ends by itself with exit 1 and the
#     unschedulable pods' reasons when some can never fit;
#   * `ksched bench` finds its workload files in the package, writes its JSON, and says
#     how to get the plot while matplotlib is missing;
#   * with the `bench` extra installed, the same command writes the PNG.
# The venv lives in $KSCHED_WHEEL_VENV (default .venv-wheel), recreated on every run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WHEEL="${1:-$(ls -t "$ROOT"/dist/ksched-*.whl 2>/dev/null | head -n 1)}"
[[ -n "$WHEEL" && -f "$WHEEL" ]] || { echo "test-wheel: no wheel in dist/ (run make wheel)" >&2; exit 1; }
VENV="${KSCHED_WHEEL_VENV:-$ROOT/.venv-wheel}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

step() { printf '[test-wheel] %s\n' "$*" >&2; }
fail() { printf '[test-wheel] FAILED: %s\n' "$*" >&2; exit 1; }

step "fresh venv $VENV with $(basename "$WHEEL")"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL"
KSCHED="$VENV/bin/ksched"
cd "$WORK"   # nothing of the source tree here

"$KSCHED" --help > help.txt
for word in simulate bench run validate-config; do
  grep -q "$word" help.txt || fail "ksched --help does not list '$word'"
done
"$KSCHED" simulate --help > sim-help.txt
for w in basic pod-anti-affinity topology-spreading preemption; do
  grep -q -- "$w" sim-help.txt || fail "ksched simulate --help does not list the workload '$w'"
done

step "ksched simulate: every pod placed"
set +e
"$KSCHED" simulate --nodes 100 --pods 200 --seed 1 > sim.txt 2>&1; rc=$?
set -e
[[ $rc -eq 0 ]] || { cat sim.txt >&2; fail "ksched simulate exited $rc (want 0)"; }
grep -q "scheduled  *200/200" sim.txt || { cat sim.txt >&2; fail "not every pod scheduled"; }

step "ksched simulate: some pods can never fit (ends by itself, exit 1)"
set +e
"$KSCHED" simulate --workload pod-anti-affinity --nodes 20 --existing-pods 0 --pods 30 --timeout 120 > stuck.txt 2>&1; rc=$?
set -e
[[ $rc -eq 1 ]] || { cat stuck.txt >&2; fail "exit $rc for unschedulable pods (want 1)"; }
grep -q "unschedulable  *10 pods" stuck.txt || { cat stuck.txt >&2; fail "no count of the 10 unschedulable pods"; }
grep -q "didn't match pod anti-affinity rules" stuck.txt || { cat stuck.txt >&2; fail "no FailedScheduling reason"; }

step "ksched bench without matplotlib: table and JSON, and a word on the plot"
"$KSCHED" bench --workload basic --scale 0.01 --json bench.json --plot bench.png > bench.txt 2> bench.err \
  || { cat bench.txt bench.err >&2; fail "ksched bench failed"; }
[[ -s bench.json ]] || fail "ksched bench wrote no JSON"
grep -q "pip install 'ksched\[bench\]'" bench.err || { cat bench.err >&2; fail "no hint about the bench extra"; }
[[ ! -e bench.png ]] || fail "a plot appeared without matplotlib"

step "ksched[bench]: the plot"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${WHEEL}[bench]"
"$KSCHED" bench --workload basic --scale 0.01 --json bench.json --plot bench.png > bench.txt 2> bench.err \
  || { cat bench.txt bench.err >&2; fail "ksched bench failed with the bench extra"; }
[[ -s bench.png ]] || { cat bench.err >&2; fail "no plot with the bench extra"; }
step "ok"
