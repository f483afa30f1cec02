"""Compare upstream's report of one case with ksched's, aspect by aspect.

Aspects (each agrees or not, with a readable detail when not):

* ``runs``: ksched ran the case without an error (upstream did: cases it refuses are
  not compared at all, they are counted as invalid);
* ``feasible``: the nodes that pass every Filter;
* ``statuses``: every rejected node's code, plugin and reasons (nodes a PreFilter result
  left out: against the FitError diagnosis' absent-nodes status);
* ``scores``: every feasible node's weighted, normalized score per Score plugin;
* ``totals``: every feasible node's total score;
* ``chosen``: the node the cycle picked;
* ``message``: the FailedScheduling event (its text, type, action and pod), or on
  success the binding's Scheduled event (or both sides' binding cycle left waiting in
  PreBind: VolumeBinding's for a PV controller, DynamicResources' for binding
  conditions, which neither side's cluster sets);
* ``condition``: the PodScheduled condition written on failure (type, status, reason,
  message, observedGeneration, whether lastTransitionTime is set);
* ``nomination``: ``status.nominatedNodeName`` after a failed cycle;
* ``victims``: the pods preemption deleted;
* ``rejectors``: after a failure, the plugins whose rejection the queue's hints must
  undo (the FitError's unschedulable and pending plugins);
* ``evaluations``: what the cycle added to ``scheduler_plugin_evaluation_total`` per
  plugin and extension point (PreFilter, Filter, PreScore, Score), incl. the Filter
  calls of preemption's dry run. The Filter counts are compared only when upstream's
  node search was exhaustive: a search that stops at the first feasible nodes found in
  parallel (no Score plugin) or is cancelled by a Filter error calls Filter on as many
  nodes as its goroutines reached. Nor are they when preemption's dry run could stop
  before it had tried every potential node (fewer candidates wanted than nodes that
  removing pods may help): upstream's ``DryRunPreemption`` checks nodes in parallel and
  cancels once it has enough candidates, so how many more it tried is goroutine timing.

Upstream's random choices are normalized, not counted (the README lists them):

* ``selectHost`` breaks ties on the best total at random: ksched's choice agrees when
  it is one of the nodes with upstream's best total;
* ``findNodesThatPassFilters`` runs in parallel and, when it needs fewer feasible nodes
  than the cluster has (a profile without Score plugins looks for one; a pod nominated
  to a node that fits is tried there alone), keeps the ones found first: only the nodes
  upstream examined are compared, and ksched's choice agrees when upstream found it
  feasible or did not examine it (ksched's own Filter verdict then says feasible);
* the order of nodes in a PreFilterResult (a Go map) changes only that examination
  order, which is not compared;
* NodeResourcesFit lists the "Insufficient <resource>" reasons of scalar resources
  (extended resources, hugepages) in Go map order (``fitsRequest`` ranges over
  ``ScalarResources``): they are compared sorted, after the fixed-order ones;
* a Filter that fails with an error (DynamicResources on a CEL runtime error) cancels
  upstream's parallel search: which nodes were examined by then, and which of them
  DynamicResources reports "asked by caller to stop allocating devices", is goroutine
  timing; only the nodes with the error are compared (and the message, in full).

A Score plugin whose PreScore skips the pod is absent from upstream's scores; it
counts as 0 (ksched reports its 0).

Scores are compared only when upstream scored (more than one feasible node); statuses
and feasibility only where upstream examined the node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ASPECTS = (
    "runs",
    "feasible",
    "statuses",
    "scores",
    "totals",
    "chosen",
    "message",
    "condition",
    "nomination",
    "victims",
    "rejectors",
    "evaluations",
)


@dataclass
class Comparison:
    """Per aspect: None when it agrees, else what differs."""

    differences: dict[str, str] = field(default_factory=dict)
    compared: set[str] = field(default_factory=set)

    def check(self, aspect: str, upstream: Any, ksched: Any, what: str = "") -> None:
        self.compared.add(aspect)
        if upstream != ksched:
            label = f"{what}: " if what else ""
            self.differences.setdefault(aspect, f"{label}upstream {upstream!r}, ksched {ksched!r}")

    def fail(self, aspect: str, detail: str) -> None:
        self.compared.add(aspect)
        self.differences.setdefault(aspect, detail)

    @property
    def agrees(self) -> bool:
        return not self.differences


#: NodeResourcesFit's reasons in the order its fitsRequest checks them; the scalar
#: resources' reasons come after, in Go map order upstream (sorted here).
_FIT_FIRST = (
    "Too many pods",
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
)


def _status(s: Obj | None) -> tuple[Any, ...] | None:
    if s is None:
        return None
    reasons = list(s["reasons"])
    if s["plugin"] == "NodeResourcesFit":
        # The fixed-order reasons lead; the scalar resources' follow, in any order.
        k = 0
        while k < len(reasons) and reasons[k] in _FIT_FIRST:
            k += 1
        return (s["code"], s["plugin"], tuple(reasons[:k]), tuple(sorted(reasons[k:])))
    return (s["code"], s["plugin"], tuple(reasons))


def _events(events: list[Obj], chosen: str | None) -> list[tuple[str, str, str, str, str]]:
    """FailedScheduling and Scheduled events; the chosen node's name (ties) is masked."""
    out = []
    for e in events:
        if e.get("reason") not in ("FailedScheduling", "Scheduled"):
            continue
        note = e["note"]
        if chosen and e["reason"] == "Scheduled":
            note = note.replace(f" to {chosen}", " to <chosen>")
        out.append((e["type"], e["reason"], e["action"], e["regarding"], note))
    return out


def _condition(c: Obj | None) -> Obj | None:
    if c is None:
        return None
    return {
        "type": c.get("type"),
        "status": c.get("status"),
        "reason": c.get("reason", ""),
        "message": c.get("message", ""),
        "observedGeneration": c.get("observedGeneration", 0),
        "lastTransitionTime": bool(c.get("lastTransitionTime")),
    }


def _exhaustive(up: Obj, ks_filters: dict[str, Obj | None], chosen: str | None) -> bool:
    """Whether upstream's Filter calls did not depend on goroutine timing."""
    failure = up.get("failure") or {}
    if failure.get("code") == "Error":
        return False
    examined = set(up["examined"])
    feasible = sum(1 for s in ks_filters.values() if s is None)
    # Looking for fewer feasible nodes than there are (no Score plugin): the parallel
    # search stops when the first is found. Tried on the nominated node alone: exact.
    return not (chosen is not None and not up["scores"] and feasible > 1 and len(examined) > 1)


def _dry_run_may_stop_early(up: Obj, config: Obj | None) -> bool:
    """Whether upstream's preemption dry run wanted fewer candidates than it had
    potential nodes (``DefaultPreemption``'s ``calculateNumCandidates`` over the nodes
    the diagnosis rejects as Unschedulable), so that it may have stopped early."""
    if up.get("postFilter") is None:
        return False
    diagnosis = (up.get("failure") or {}).get("diagnosis") or {}
    nodes: dict[str, Obj] = diagnosis.get("nodes") or {}
    potential = sum(1 for s in nodes.values() if s.get("code") == "Unschedulable")
    if (diagnosis.get("absent") or {}).get("code") == "Unschedulable":
        potential += int(diagnosis.get("numAllNodes") or 0) - len(nodes)
    args: Obj = {}
    for profile in (config or {}).get("profiles") or [{}]:
        if profile.get("schedulerName", "default-scheduler") != up.get("profile"):
            continue
        for pc in profile.get("pluginConfig") or []:
            if pc.get("name") == "DefaultPreemption":
                args = pc.get("args") or {}
    wanted = potential * int(args.get("minCandidateNodesPercentage", 10)) // 100
    wanted = min(potential, max(wanted, int(args.get("minCandidateNodesAbsolute", 100))))
    return wanted < potential


def _compare_evaluations(out: Comparison, up: Obj, ks: Obj, *, examined_all: bool) -> None:
    want: dict[str, float] | None = up.get("pluginEvaluations")
    got: dict[str, float] | None = ks.get("pluginEvaluations")
    if want is None or got is None:
        return  # a harness binary from before the metric
    if not examined_all:
        want = {k: v for k, v in want.items() if not k.startswith("Filter/")}
        got = {k: v for k, v in got.items() if not k.startswith("Filter/")}
    out.check("evaluations", dict(sorted(want.items())), dict(sorted(got.items())))


def compare(up: Obj, ks: Obj, config: Obj | None = None) -> Comparison:
    """Compare the Go harness's result ``up`` with ksched's report ``ks`` (``config``:
    the case's KubeSchedulerConfiguration, None for the defaults)."""
    out = Comparison()
    if ks.get("error"):
        out.fail("runs", f"ksched: {ks['error']}")
        return out
    out.compared.add("runs")

    examined = list(dict.fromkeys(up["examined"]))
    up_filters: dict[str, Obj | None] = up["filters"]
    ks_filters: dict[str, Obj | None] = ks["filters"]
    failure = up.get("failure") or {}
    if failure.get("code") == "Error" and any(
        s is not None and s["code"] == "Error" for s in up_filters.values()
    ):
        # A Filter error aborted upstream's parallel search: the nodes examined, and
        # what DynamicResources' cancelled allocations said, depend on goroutine timing.
        # Only the nodes with the error are compared.
        examined = [n for n in examined if (up_filters.get(n) or {}).get("code") == "Error"]

    # Feasibility and statuses, on the nodes upstream examined.
    up_feasible = sorted(n for n in examined if up_filters.get(n) is None)
    ks_feasible = sorted(n for n in examined if n in ks_filters and ks_filters[n] is None)
    out.check("feasible", up_feasible, ks_feasible)
    for n in sorted(examined):
        if n not in ks_filters:
            out.fail("statuses", f"{n}: examined by upstream, unknown to ksched")
            continue
        out.check("statuses", _status(up_filters[n]), _status(ks_filters[n]), n)
    diagnosis = up.get("diagnosis")
    if diagnosis is not None:
        for n, s in diagnosis["nodes"].items():
            if n not in up_filters:  # extenders, none here; statuses set without a Filter
                out.check("statuses", _status(s), _status(ks_filters.get(n)), n)
        absent = diagnosis.get("absent")
        for n in sorted(ks_filters):
            if n in up_filters or n in diagnosis["nodes"]:
                continue
            # Not examined: a PreFilter result left the node out.
            want = _status(absent) if absent and absent["reasons"] else None
            if want is not None:
                out.check("statuses", want, _status(ks_filters[n]), f"{n} (left out)")

    # Scores, where upstream scored.
    if up["scores"]:
        ks_scores = {s["node"]: s for s in ks["scores"]}
        for s in up["scores"]:
            mine = ks_scores.get(s["node"])
            if mine is None:
                out.fail("scores", f"{s['node']}: scored by upstream, not feasible for ksched")
                out.fail("totals", f"{s['node']}: scored by upstream, not feasible for ksched")
                continue
            # A plugin whose PreScore skipped the pod is absent upstream: it adds 0.
            names = set(s["plugins"]) | set(mine["plugins"])
            out.check(
                "scores",
                {p: s["plugins"].get(p, 0) for p in sorted(names)},
                {p: mine["plugins"].get(p, 0) for p in sorted(names)},
                s["node"],
            )
            out.check("totals", s["total"], mine["total"], s["node"])

    # The choice, ties and partial searches normalized.
    up_chosen, ks_chosen = up.get("chosen"), ks.get("chosen")
    out.compared.add("chosen")
    if (up_chosen is None) != (ks_chosen is None):
        out.fail("chosen", f"upstream {up_chosen!r}, ksched {ks_chosen!r}")
    elif up_chosen is not None and ks_chosen != up_chosen:
        if up["scores"]:
            best = max(s["total"] for s in up["scores"])
            tied = sorted(s["node"] for s in up["scores"] if s["total"] == best)
            if ks_chosen not in tied:
                out.fail("chosen", f"ksched {ks_chosen!r} is not among upstream's best {tied}")
        elif ks_chosen in up_filters:
            if up_filters[ks_chosen] is not None:
                out.fail("chosen", f"ksched {ks_chosen!r} was rejected by upstream")
        elif ks_filters.get(ks_chosen) is not None:
            out.fail("chosen", f"ksched {ks_chosen!r} fails ksched's own filters")

    out.check("message", _events(up["events"], up_chosen), _events(ks["events"], ks_chosen))
    out.check(
        "message",
        bool(up.get("bindingPending")),
        bool(ks.get("bindingPending")),
        "binding left waiting in PreBind (VolumeBinding's or DynamicResources')",
    )
    if up_chosen is None:
        out.check("condition", _condition(up.get("condition")), _condition(ks.get("condition")))
    if up_chosen is None:
        # After a success the binding decides (the API server clears the nomination).
        out.check(
            "nomination", up.get("nominatedNodeName") or "", ks.get("nominatedNodeName") or ""
        )
    out.check("victims", sorted(up.get("deleted") or []), sorted(ks.get("deleted") or []))
    examined_all = _exhaustive(up, ks_filters, up_chosen) and not _dry_run_may_stop_early(
        up, config
    )
    _compare_evaluations(out, up, ks, examined_all=examined_all)
    if diagnosis is not None:
        out.check(
            "rejectors",
            (diagnosis.get("unschedulablePlugins", []), diagnosis.get("pendingPlugins", [])),
            (ks.get("unschedulablePlugins"), ks.get("pendingPlugins")),
        )
    return out
