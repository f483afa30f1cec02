"""Record what the real kube-scheduler v1.36 makes of each test config.

For every input (``../golden/*.in.yaml`` and ``./*.in.yaml``/``./*.in.json``) run

    kube-scheduler --config <input> --master https://127.0.0.1:1 --write-config-to <out>

and store either the written file as ``<case>.upstream.yaml`` (upstream accepted the
config) or the error it exited with as ``<case>.upstream.err`` (upstream rejected it).
``--master`` only gives client-go an address: kube-scheduler builds its clients and
profiles, writes the file and exits before it connects (``LogOrWriteConfig``). The
``--kubeconfig`` flag would not do, since kube-scheduler ignores it next to
``--config``.

    .venv/bin/python tests/unit/config/upstream/record.py           # (re)record
    .venv/bin/python tests/unit/config/upstream/record.py --check   # compare only

The binary comes from ``hack/build-control-plane.sh`` (``ksched.testing.controlplane``),
or from ``$KSCHED_CONTROLPLANE_BIN_DIR``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden"
MASTER = "https://127.0.0.1:1"  # never contacted

# klog prints the error either as a quoted Go string or, when it spans lines, as
# err=<\n\t...\n >.
_ERR_QUOTED = re.compile(r'"command failed" err="((?:[^"\\]|\\.)*)"')
_ERR_BLOCK = re.compile(r'"command failed" err=<\n(.*?)\n >', re.S)


def inputs() -> list[tuple[str, Path]]:
    """(case name, input file) for every config the recorder runs."""
    cases = [(p.name.removesuffix(".in.yaml"), p) for p in sorted(GOLDEN.glob("*.in.yaml"))]
    for p in sorted(HERE.glob("*.in.*")):
        cases.append((p.name.split(".in.")[0], p))
    return cases


def upstream_error(stderr: str) -> str:
    """The error kube-scheduler exited with, unquoted."""
    if m := _ERR_QUOTED.search(stderr):
        return str(json.loads(f'"{m.group(1)}"'))
    if m := _ERR_BLOCK.search(stderr):
        return "\n".join(line.removeprefix("\t") for line in m.group(1).splitlines())
    raise RuntimeError(f"no error found in kube-scheduler's output:\n{stderr}")


def run_upstream(binary: Path, config: Path) -> tuple[str, str]:
    """("yaml", written config) or ("err", error message)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.yaml"
        proc = subprocess.run(
            [
                str(binary),
                "--config",
                str(config),
                "--master",
                MASTER,
                "--write-config-to",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode == 0 and out.exists():
            return "yaml", out.read_text(encoding="utf-8")
        return "err", upstream_error(proc.stderr) + "\n"


def find_binary() -> Path:
    sys.path.insert(0, str(HERE.parents[3] / "python"))
    from ksched.testing.controlplane import ensure_binaries

    return ensure_binaries() / "kube-scheduler"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    binary = find_binary()
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"{binary}: {version}", file=sys.stderr)
    stale = 0
    for case, config in inputs():
        kind, text = run_upstream(binary, config)
        target = HERE / f"{case}.upstream.{kind}"
        other = HERE / f"{case}.upstream.{'err' if kind == 'yaml' else 'yaml'}"
        same = target.exists() and target.read_text(encoding="utf-8") == text and not other.exists()
        print(
            f"{case:28} {'accepted' if kind == 'yaml' else 'rejected'}"
            f"{'' if same else ' (changed)'}",
            file=sys.stderr,
        )
        if same:
            continue
        stale += 1
        if not args.check:
            target.write_text(text, encoding="utf-8")
            other.unlink(missing_ok=True)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
