"""Golden lines for ``rust/plugins/dynamic_resources/testdata/cel_upstream.jsonl``.

Runs a file of expressions (one per line, ``#`` starts a comment line) through the
``celcost`` binary built from ``main.go`` (upstream's DRA CEL code) with the golden
tables' default device, and prints one line per expression: the input device merged
with upstream's outcome (``cost`` and ``match`` or ``error``, or ``compile_error``).

Usage: ``python3 hack/celcost/golden.py CASES.txt path/to/celcost >> cel_upstream.jsonl``
"""

from __future__ import annotations

import json
import subprocess
import sys

DEVICE = {
    "driver": "dra.example.com",
    "attributes": {
        "model": {"string": "a100-sxm4-80gb"},
        "numa": {"int": 1},
        "ok": {"bool": True},
        "ver": {"version": "1.2.3"},
        "other.example.com/x": {"int": 5},
    },
    "capacity": {"memory": "80Gi"},
}
OUTCOME = ("cost", "match", "error", "compile_error")


def main(cases: str, binary: str) -> None:
    with open(cases, encoding="utf-8") as f:
        exprs = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    stdin = "".join(json.dumps({"expr": e, **DEVICE}) + "\n" for e in exprs)
    out = subprocess.run([binary], input=stdin, capture_output=True, text=True, check=True)
    for expr, line in zip(exprs, out.stdout.splitlines(), strict=True):
        got = json.loads(line)
        if got["expr"] != expr:
            raise SystemExit(f"celcost answered {got['expr']!r} for {expr!r}")
        row = {"expr": expr, **DEVICE, **{k: got[k] for k in OUTCOME if k in got}}
        print(json.dumps(row))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
