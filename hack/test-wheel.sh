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
#   * with the `bench` extra installed, the same command writes the PNG;
#   * the example suite of a user's own repository (examples/user-suite: no conftest.py,
#     only `ksched.testing` imported, checked) passes with ksched's pytest plugin, and so
#     do the GPU plugin example's own tests once that plugin is installed; the real
#     apiserver test of the suite runs when the test control plane is built
#     (.venv/control-plane-bin).
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

step "a user's suite (examples/user-suite): ksched's pytest fixtures from the wheel"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check pytest pytest-benchmark
cp -r "$ROOT/examples/user-suite" suite
[[ ! -e suite/conftest.py ]] || fail "the example suite must have no conftest.py"
"$VENV/bin/python" - suite <<'PY' || fail "the example suite imports something private"
import ast, pathlib, sys
bad = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        bad += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "ksched" and n != "ksched.testing"]
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
CP_BIN="$(cat "$ROOT/.venv/control-plane-bin" 2>/dev/null || true)"
(cd suite && KSCHED_CONTROLPLANE_BIN_DIR="$CP_BIN" "$VENV/bin/python" -m pytest -q -p no:cacheprovider .) \
  > suite.txt 2>&1 || { cat suite.txt >&2; fail "the example suite failed against the wheel"; }
grep -q "passed" suite.txt || { cat suite.txt >&2; fail "the example suite ran no test"; }

step "the GPU plugin example's own tests (installed plugin, ksched's fixtures)"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  "$ROOT/examples/gpu-memory-plugin" 2>/dev/null \
  || "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$ROOT/examples/gpu-memory-plugin"
mkdir gpu && cp -r "$ROOT/examples/gpu-memory-plugin/tests" "$ROOT/examples/gpu-memory-plugin/scheduler-config.yaml" gpu/
(cd gpu && "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests) > gpu.txt 2>&1 \
  || { cat gpu.txt >&2; fail "the GPU plugin's tests failed against the wheel"; }
step "ok"
