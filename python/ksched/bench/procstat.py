"""Process figures from ``/proc`` and attempt latencies from Prometheus text.

* :func:`peak_rss_mib` reads ``VmHWM`` (the resident-set high-water mark) from
  ``/proc/<pid>/status``; it must be read while the process is alive.
* :func:`cpu_seconds` reads ``utime + stime`` from ``/proc/<pid>/stat``.
* :func:`histogram_quantile` computes a quantile of a Prometheus histogram the way
  PromQL's ``histogram_quantile`` does (linear interpolation inside the bucket), so
  ksched's and kube-scheduler's ``scheduler_scheduling_attempt_duration_seconds`` are
  read with the same code and the same bucket bounds.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def peak_rss_mib(pid: int) -> float:
    """``VmHWM`` of a live process in MiB (0.0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def rss_mib(pid: int) -> float:
    """``VmRSS`` of a live process in MiB (0.0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process in seconds (0.0 when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # The command name (field 2) may contain spaces: split after its closing paren.
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def find_pids(needle: str) -> list[int]:
    """Pids whose command line contains ``needle`` (e.g. an etcd data directory)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            out.append(int(entry.name))
    return out


# ---------------------------------------------------------------- Prometheus text


def parse_labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq].strip().lstrip(",").strip()
        j = eq + 2  # skip ="
        value = []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                value.append({"n": "\n"}.get(text[j], text[j]))
            else:
                value.append(text[j])
            j += 1
        out[key] = "".join(value)
        i = j + 1
        while i < len(text) and text[i] in ", ":
            i += 1
    return out


def samples(text: str, name: str) -> Iterable[tuple[dict[str, str], float]]:
    """``(labels, value)`` of every sample of metric ``name`` in exposition ``text``."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        rest = line[len(name) :]
        if rest.startswith("{"):
            end = rest.rindex("}")
            labels = parse_labels(rest[1:end])
            value = rest[end + 1 :].split()[0]
        elif rest.startswith(" "):
            labels, value = {}, rest.split()[0]
        else:
            continue  # a longer metric name with this prefix
        yield labels, float(value)


def histogram(
    text: str, name: str, match: Mapping[str, str] | None = None
) -> tuple[list[tuple[float, float]], float, float]:
    """Cumulative ``(upper bound, count)`` buckets, summed over the series whose labels
    include ``match``; plus the sum and the count."""
    match = match or {}
    buckets: dict[float, float] = {}
    total = count = 0.0

    def ok(labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in match.items())

    for labels, v in samples(text, name + "_bucket"):
        if ok(labels):
            le = math.inf if labels["le"] == "+Inf" else float(labels["le"])
            buckets[le] = buckets.get(le, 0.0) + v
    for labels, v in samples(text, name + "_sum"):
        if ok(labels):
            total += v
    for labels, v in samples(text, name + "_count"):
        if ok(labels):
            count += v
    return sorted(buckets.items()), total, count


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """PromQL ``histogram_quantile``: NaN without observations; the highest finite bound
    when the quantile falls into the +Inf bucket."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    total = buckets[-1][1]
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return prev_bound
            if count == prev_count:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / (count - prev_count)
        prev_bound, prev_count = bound, count
    return buckets[-1][0]


def subtract(
    after: list[tuple[float, float]], before: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Buckets observed between two scrapes."""
    prior = dict(before)
    return [(le, c - prior.get(le, 0.0)) for le, c in after]


# ------------------------------------------------------------- py-spy collapsed stacks


def summarize_collapsed(path: Path, top: int = 25) -> str:
    """Self and inclusive sample shares of the frames in a ``py-spy record --format raw``
    file (one ``frame;frame;... count`` line per stack), heaviest first."""
    self_: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no profile)"
    for line in lines:
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        count = int(n)
        total += count
        frames = stack.split(";")
        self_[frames[-1]] = self_.get(frames[-1], 0) + count
        for f in set(frames):
            incl[f] = incl.get(f, 0) + count
    if not total:
        return "(no samples)"
    out = [f"{total} samples", "", "self %   frame"]
    for f, c in sorted(self_.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"{100 * c / total:6.1f}   {f}")
    out += ["", "incl %   frame"]
    for f, c in sorted(incl.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"{100 * c / total:6.1f}   {f}")
    return "\n".join(out) + "\n"
