"""Benchmark results: one :class:`RunResult` per (workload, scheduler, repeat), the
side-by-side :class:`Comparison` per workload, and their three renderings — a terminal
table, a JSON document and a PNG of throughput over time.

Figures follow scheduler_perf: throughput is measured pods bound divided by the time
from the first measured pod created to the last one bound; the per-second samples of
the bound count give the throughput percentiles and the plot. Attempt latency is
``scheduler_scheduling_attempt_duration_seconds{result="scheduled"}`` (scheduling
algorithm + binding, identical definition and buckets in ksched and kube-scheduler),
read with :func:`ksched.bench.procstat.histogram_quantile`; ksched's exact
scheduling-cycle percentiles are given beside it. With repeats, a workload's figures
are the medians over the repeats.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ksched.bench.placement import Placement, compare

KSCHED = "ksched"
UPSTREAM = "kube-scheduler"
#: The bare binder (:mod:`ksched.bench.barebinder`): the end-to-end limit.
BARE_BINDER = "bare-binder"


@dataclass(slots=True)
class RunResult:
    scheduler: str
    target: str  # "embedded" | "apiserver"
    workload: str
    label: str
    nodes: int
    existing_pods: int
    pods: int
    bound: int = 0
    completed: bool = False
    seconds: float = 0.0
    pods_per_second: float = 0.0
    #: Seconds the harness took to create the measured pods (the creation rate bounds
    #: throughput when it is lower).
    create_seconds: float = 0.0
    attempt_p50_ms: float = math.nan
    attempt_p99_ms: float = math.nan
    cycle_p50_us: float = math.nan
    cycle_p99_us: float = math.nan
    peak_rss_mib: float = 0.0
    #: Resident set once the scheduler was ready (informers synced, before the
    #: measured pods): what the nodes and init pods cost it.
    rss_ready_mib: float = 0.0
    cpu_seconds: float = 0.0
    #: CPU seconds spent by the scheduler between the first pod created and the last bound.
    cpu_seconds_measured: float = 0.0
    #: CPU seconds in the same window of the other processes (kube-apiserver, etcd, harness).
    other_cpu_seconds: dict[str, float] = field(default_factory=dict)
    #: Offsets (s from the first measured pod created) at which each pod was seen bound.
    bind_times: list[float] = field(default_factory=list)
    create_times: list[float] = field(default_factory=list)
    placement: Placement | None = None
    notes: list[str] = field(default_factory=list)

    def throughput_series(self, step: float = 1.0) -> list[float]:
        return per_interval(self.bind_times, step)

    def as_dict(self, *, with_times: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_times:
            d.pop("bind_times")
            d.pop("create_times")
        d["throughput_per_second"] = self.throughput_series()
        samples = sorted(d["throughput_per_second"])
        d["throughput_p50"] = _pct(samples, 50)
        d["throughput_p90"] = _pct(samples, 90)
        out: dict[str, Any] = _clean(d)
        return out


def _clean(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _pct(sorted_values: Sequence[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return float(sorted_values[k])


def per_interval(times: Sequence[float], step: float = 1.0) -> list[float]:
    """Events per second in consecutive ``step``-second intervals."""
    if not times:
        return []
    n = int(max(times) // step) + 1
    counts = [0] * n
    for t in times:
        counts[int(max(t, 0.0) // step)] += 1
    return [c / step for c in counts]


def _median(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return float(statistics.median(vals)) if vals else math.nan


@dataclass(slots=True)
class Comparison:
    """One workload: the runs of each scheduler and the ksched/upstream ratios."""

    workload: str
    label: str
    target: str
    runs: dict[str, list[RunResult]] = field(default_factory=dict)

    def add(self, r: RunResult) -> None:
        self.runs.setdefault(r.scheduler, []).append(r)

    def median(self, scheduler: str, attr: str) -> float:
        return _median([float(getattr(r, attr)) for r in self.runs.get(scheduler, [])])

    def representative(self, scheduler: str) -> RunResult | None:
        """The run whose throughput is the median one (for plots and placement)."""
        runs = sorted(self.runs.get(scheduler, []), key=lambda r: r.pods_per_second)
        return runs[(len(runs) - 1) // 2] if runs else None

    def ratios(self) -> dict[str, float]:
        if KSCHED not in self.runs or UPSTREAM not in self.runs:
            return {}
        out = {}
        for attr, key in (
            ("pods_per_second", "throughput"),
            ("peak_rss_mib", "peak_rss"),
            ("cpu_seconds_measured", "cpu_seconds_measured"),
            ("attempt_p50_ms", "attempt_p50"),
            ("attempt_p99_ms", "attempt_p99"),
        ):
            k, u = self.median(KSCHED, attr), self.median(UPSTREAM, attr)
            out[key] = k / u if u and not math.isnan(u) and not math.isnan(k) else math.nan
        return out

    def fraction_of_bare_binder(self) -> float:
        """ksched's throughput as a fraction of the bare binder's (NaN unless both ran)."""
        k, b = self.median(KSCHED, "pods_per_second"), self.median(BARE_BINDER, "pods_per_second")
        return k / b if b and not math.isnan(b) and not math.isnan(k) else math.nan

    def quality(self) -> dict[str, Any] | None:
        k, u = self.representative(KSCHED), self.representative(UPSTREAM)
        if k is None or u is None or k.placement is None or u.placement is None:
            return None
        return compare(k.placement, u.placement)

    def as_dict(self, *, with_times: bool = False) -> dict[str, Any]:
        medians = {
            s: {
                a: self.median(s, a)
                for a in (
                    "pods_per_second",
                    "seconds",
                    "attempt_p50_ms",
                    "attempt_p99_ms",
                    "cycle_p50_us",
                    "cycle_p99_us",
                    "peak_rss_mib",
                    "cpu_seconds",
                    "cpu_seconds_measured",
                )
            }
            for s in self.runs
        }
        out: dict[str, Any] = _clean(
            {
                "workload": self.workload,
                "label": self.label,
                "target": self.target,
                "medians": medians,
                "ratio_ksched_over_upstream": self.ratios(),
                "ksched_fraction_of_bare_binder": self.fraction_of_bare_binder(),
                "placement_check": self.quality(),
                "runs": {
                    s: [r.as_dict(with_times=with_times) for r in rs] for s, rs in self.runs.items()
                },
            }
        )
        return out


# ------------------------------------------------------------------------ rendering


def _f(v: float, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def table(comparisons: Sequence[Comparison]) -> str:
    """The terminal table: one row per scheduler, a ratio row when both ran."""
    head = (
        f"{'scheduler':<18} {'bound':>11} {'pods/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'RSS MiB':>8} {'CPU s':>7} {'quality':>9}"
    )
    lines = [head, "-" * len(head)]
    for c in comparisons:
        q = c.quality()
        lines.append(f"{c.label} [{c.target}]")
        for sched in sorted(c.runs, key=lambda s: (s != KSCHED, s)):
            rep = c.representative(sched)
            assert rep is not None
            bound = f"{rep.bound}/{rep.pods}"
            qual = ""
            if q is not None and sched == KSCHED:
                qual = ("ok" if q["ok"] else "WORSE") + ("*" if q.get("differs") else "")
            if rep.placement is not None and rep.placement.violations:
                qual = (qual + f" v={rep.placement.violations}").strip()
            n = len(c.runs[sched])
            name = "  " + sched + (f" x{n}" if n > 1 else "")
            lines.append(
                f"{name:<18} {bound:>11} "
                f"{_f(c.median(sched, 'pods_per_second'), ',.0f'):>9} "
                f"{_f(c.median(sched, 'attempt_p50_ms'), '.2f'):>8} "
                f"{_f(c.median(sched, 'attempt_p99_ms'), '.2f'):>8} "
                f"{_f(c.median(sched, 'peak_rss_mib'), '.0f'):>8} "
                f"{_f(c.median(sched, 'cpu_seconds_measured'), '.1f'):>7} {qual:>9}"
            )
        r = c.ratios()
        if r:
            lines.append(
                f"{'  ksched/upstream':<18} {'':>11} "
                f"{_f(r['throughput'], '.2f') + 'x':>9} {_f(r['attempt_p50'], '.2f') + 'x':>8} "
                f"{_f(r['attempt_p99'], '.2f') + 'x':>8} {_f(r['peak_rss'], '.2f') + 'x':>8} "
                f"{_f(r['cpu_seconds_measured'], '.2f') + 'x':>7}"
            )
        fraction = c.fraction_of_bare_binder()
        if not math.isnan(fraction):
            lines.append(f"{'  ksched/bare':<18} {'':>11} {fraction:>8.0%} of the bare binder")
        for sched in c.runs:
            for note in sorted({n for run in c.runs[sched] for n in run.notes}):
                lines.append(f"    note ({sched}): {note}")
        if q is not None and q["worse"]:
            lines.append(f"    placement worse: {'; '.join(q['worse'])}")
        if q is not None and q.get("differs"):
            lines.append(f"    * placement differs: {'; '.join(q['differs'])}")
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    """Machine and versions, for the JSON document."""
    commit = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        ).stdout.strip()
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ksched_commit": commit,
        "loadavg_at_end": load,
    }


def write_json(
    path: Path, comparisons: Sequence[Comparison], *, meta: dict[str, Any], with_times: bool = False
) -> None:
    import orjson

    doc = {
        "meta": {**environment(), **meta},
        "workloads": [c.as_dict(with_times=with_times) for c in comparisons],
    }
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed (it is the ``bench`` extra)."""


def plot(path: Path, comparisons: Sequence[Comparison]) -> None:
    """One figure per run of ``ksched bench``, one column of panels per workload.

    The main panel draws the S-curve of each scheduler: pods bound so far against time
    (the representative run, i.e. the one with the median throughput), so a reader sees
    at a glance who finished first and where anyone stalled. A short panel below it
    gives the rate at which the harness created the measured pods, on its own scale (it
    is often 10-100x the binding rate and would flatten the curves on a shared axis).
    The panel title names the workload, nodes and pods and the throughput ratio; the
    legend sits outside the axes. Raises :class:`PlotUnavailable` without matplotlib.
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotUnavailable(
            "the plot needs matplotlib: pip install 'ksched[bench]' (or pass --plot '')"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(comparisons))
    fig, axes = plt.subplots(
        2,
        n,
        figsize=(6.4 * n, 5.2),
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": [3, 1], "hspace": 0.08},
    )
    colors = {KSCHED: "tab:blue", UPSTREAM: "tab:orange"}
    for i, c in enumerate(comparisons):
        curve, rate = axes[0][i], axes[1][i]
        scheds = sorted(c.runs, key=lambda s: (s != KSCHED, s))
        span = 0.0
        reps = [(s, r) for s in scheds if (r := c.representative(s)) is not None]
        for sched, rep in reps:
            times = sorted(t for t in rep.bind_times if t >= 0)
            if not times:
                continue
            span = max(span, times[-1])
            # The S-curve: a step up at every bind.
            curve.step(
                [0.0, *times],
                range(len(times) + 1),
                where="post",
                color=colors.get(sched),
                linewidth=1.8,
                label=f"{sched}: {rep.pods_per_second:,.0f} pods/s",
            )
        step = _step(span or 1.0)
        for sched, rep in reps:
            if rep.create_times:
                cy = per_interval(rep.create_times, step)
                rate.stairs(
                    cy,
                    [step * k for k in range(len(cy) + 1)],
                    color=colors.get(sched),
                    alpha=0.8,
                    linewidth=1.0,
                    label=f"created for {sched}",
                )
                rate.set_ylim(bottom=0)
        if reps:
            pods = max(r.pods for _, r in reps)
            curve.axhline(pods, color="0.6", linestyle="--", linewidth=0.8)
            curve.set_ylim(0, pods * 1.05 or 1)
        ratio = c.ratios().get("throughput", math.nan)
        first = reps[0][1] if reps else None
        title = f"{c.label} [{c.target}]"
        if first is not None:
            title += f"\n{first.nodes:,} nodes, {first.pods:,} pods"
        if not math.isnan(ratio):
            title += f"; ksched {ratio:.2f}x kube-scheduler's pods/s"
        curve.set_title(title, fontsize=10)
        curve.set_ylabel("pods bound (cumulative)")
        curve.grid(alpha=0.3)
        curve.legend(fontsize=8, loc="lower right", framealpha=0.9)
        rate.set_ylabel("created / s", fontsize=8)
        rate.tick_params(labelsize=7)
        rate.grid(alpha=0.3)
        rate.set_xlabel(
            "seconds since the first pod bound"
            if c.target.endswith("backlog")
            else "seconds since the first measured pod was created"
        )
        if not any(r.create_times for _, r in reps):
            rate.text(
                0.5,
                0.5,
                "pods created before the run",
                ha="center",
                va="center",
                transform=rate.transAxes,
                fontsize=8,
                color="0.4",
            )
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _step(span: float) -> float:
    """1 s buckets, finer for runs shorter than 10 s (the embedded cluster)."""
    return 1.0 if span >= 10 else max(0.01, span / 20)


class Progress:
    """One status line on a terminal stream, rewritten in place."""

    def __init__(self, out: TextIO | None) -> None:
        self.out = out
        self.width = 0

    def show(self, text: str) -> None:
        if self.out is None:
            return
        pad = max(0, self.width - len(text))
        self.out.write("\r" + text + " " * pad)
        self.out.flush()
        self.width = len(text)

    def done(self, text: str = "") -> None:
        if self.out is None:
            return
        self.show(text)
        self.out.write("\n")
        self.out.flush()
        self.width = 0
