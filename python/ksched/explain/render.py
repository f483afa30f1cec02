"""``ksched explain``'s text: the per-node table, the summary, and the "why not X"
paragraph of ``--node``.

The table lists the nodes sorted by outcome (the chosen node, the other feasible ones
by total, the rejected ones grouped by plugin and reason, the nodes sampling left
unexamined) with one column per Score plugin: ``raw→normalized`` under the plugin's
name and weight, and the weighted total. Each outcome group shows ``limit`` rows and
counts the rest, so a 5,000-node cluster stays readable; ``--output json`` has
everything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ksched.explain.model import FEASIBLE, NOT_EXAMINED, REJECTED, Explanation, NodeVerdict

__all__ = ["node_paragraph", "sampling_text", "score_difference", "summary", "table"]


def sampling_text(expl: Explanation) -> str:
    pct = expl.percentage_of_nodes_to_score
    setting = f"{pct}%" if pct else "0 (adaptive)"
    if not expl.sampled:
        return (
            f"sampling: off (--all-nodes): every one of the {expl.num_all_nodes} nodes "
            "examined, every feasible node scored"
        )
    if expl.num_to_find >= expl.num_all_nodes or expl.num_all_nodes < 100:
        return (
            f"sampling: percentageOfNodesToScore {setting}: with {expl.num_all_nodes} nodes "
            "every node is examined"
        )
    return (
        f"sampling: percentageOfNodesToScore {setting}: the attempt stops after "
        f"{expl.num_to_find} feasible nodes; {expl.evaluated_nodes} of "
        f"{expl.num_all_nodes} nodes examined from position {expl.start_index} "
        "(--all-nodes examines and scores every node)"
    )


def _verdict(v: NodeVerdict) -> str:
    if v.outcome == FEASIBLE:
        return "chosen" if v.chosen else "feasible"
    if v.outcome == NOT_EXAMINED:
        return "not examined"
    code = " (unresolvable)" if v.code == "UnschedulableAndUnresolvable" else ""
    return f"{v.plugin or 'PreFilter'}: {v.reason}{code}"


def _score_columns(nodes: Sequence[NodeVerdict]) -> tuple[list[tuple[str, int]], list[str]]:
    """The Score plugins as columns, and those that scored 0 on every node (left out
    of the table, named below it)."""
    seen: dict[str, int] = {}
    said: set[str] = set()
    for v in nodes:
        for s in v.scores:
            seen.setdefault(s.plugin, s.weight)
            if s.raw or s.normalized:
                said.add(s.plugin)
    return [(p, w) for p, w in seen.items() if p in said], [p for p in seen if p not in said]


def _group(v: NodeVerdict) -> str:
    if v.outcome == REJECTED:
        return f"rejected by {v.plugin or 'PreFilter'}: {v.reason}"
    return "feasible" if v.outcome == FEASIBLE else "not examined"


def table(expl: Explanation, *, limit: int = 20) -> str:
    """The per-node table; ``limit`` rows per group (0: every row)."""
    columns, silent = _score_columns(expl.nodes)
    header = ["NODE", "VERDICT", *(f"{p}×{w}" for p, w in columns), "TOTAL"]  # noqa: RUF001
    rows: list[list[str]] = []
    hidden: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    for v in expl.nodes:
        group = _group(v)
        if limit and shown[group] >= limit and not v.chosen:
            hidden[group] += 1
            continue
        shown[group] += 1
        by_plugin = {s.plugin: s for s in v.scores}
        cells = [
            f"{by_plugin[p].raw}→{by_plugin[p].normalized}" if p in by_plugin else ""
            for p, _ in columns
        ]
        mark = "* " if v.chosen else "  "
        rows.append([mark + v.node, _verdict(v), *cells, "" if v.total is None else str(v.total)])
    widths = [len(h) for h in header]
    verdict_cap = 100
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], min(len(cell), verdict_cap) if i == 1 else len(cell))
    widths[0] = max(widths[0], 2 + max((len(v.node) for v in expl.nodes), default=0))

    def line(cells: list[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            if i == 1 and len(cell) > verdict_cap:
                cell = cell[: verdict_cap - 1] + "…"
            out.append(cell.rjust(widths[i]) if i >= 2 else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [
        f"pod {expl.pod} · profile {expl.profile} · {expl.num_all_nodes} nodes · "
        f"{expl.feasible_nodes} feasible",
        sampling_text(expl),
        "",
        line(["  " + header[0], *header[1:]]),
        *(line(r) for r in rows),
    ]
    for group, count in hidden.items():
        lines.append(f"  … {count} more {group} (--limit 0 shows every node)")
    if silent:
        lines.append(f"  scored 0 on every node: {', '.join(silent)}")
    return "\n".join(lines)


def summary(expl: Explanation) -> str:
    """What the attempt decides, the FailedScheduling message, and what would help."""
    lines = []
    if expl.chosen is not None:
        v = expl.node(expl.chosen)
        total = f"total {v.total}" if v is not None and v.total is not None else ""
        how = {
            "nominated-node": "its nominated node passes every filter",
            "only-feasible-node": "the only feasible node; Score does not run",
            "tie-break": f"tied with {len(expl.tied) - 1} other node(s) at the best total, "
            "broken at random",
            "score": "the best total",
        }.get(expl.chosen_by, "")
        detail = "; ".join(x for x in (total, how) if x)
        lines.append(f"would be chosen   {expl.chosen}" + (f" ({detail})" if detail else ""))
    if expl.failed_scheduling is not None:
        lines.append(f"FailedScheduling  {expl.failed_scheduling}")
    if expl.nominated_node:
        lines.append(f"nominated node    {expl.nominated_node} (preemption)")
    for i, s in enumerate(expl.suggestions):
        lines.append(("would fit if      " if i == 0 else " " * 18) + s.text)
    for note in expl.notes:
        lines.append(f"note              {note}")
    return "\n".join(lines)


def score_difference(best: NodeVerdict, other: NodeVerdict) -> str:
    """Per Score plugin, the weighted scores of ``other`` vs ``best`` where they differ,
    largest gap first: ``NodeResourcesFit 48 vs 86, ...``."""
    theirs = {s.plugin: s for s in other.scores}
    parts = []
    for s in best.scores:
        o = theirs.get(s.plugin)
        if o is None or o.weighted == s.weighted:
            continue
        parts.append((abs(s.weighted - o.weighted), f"{s.plugin} {o.weighted} vs {s.weighted}"))
    parts.sort(key=lambda t: -t[0])
    return ", ".join(text for _, text in parts)


def node_paragraph(expl: Explanation, name: str, *, fits_if: Sequence[str] = ()) -> str:
    """ "Why (not) node X" in one paragraph; ``fits_if``: the conditions of the node's own
    suggestions (:attr:`~ksched.explain.model.Suggestion.condition`)."""
    v = expl.node(name)
    if v is None:
        return f"there is no node {name} in the cluster ({expl.num_all_nodes} nodes)."
    if v.outcome == REJECTED:
        code = (
            "; preemption cannot help there (UnschedulableAndUnresolvable)"
            if v.code == "UnschedulableAndUnresolvable"
            else ""
        )
        text = f"{name} was rejected by {v.plugin or 'PreFilter'}: {v.reason}{code}."
        if fits_if:
            text += " The pod would fit there if " + ", or if ".join(fits_if) + "."
        return text
    if v.outcome == NOT_EXAMINED:
        return (
            f"{name} was not examined: the attempt stopped after finding "
            f"{expl.num_to_find} feasible nodes (percentageOfNodesToScore). "
            "--all-nodes examines every node."
        )
    if v.chosen:
        how = {
            "nominated-node": "it is the pod's nominated node and passes every filter",
            "only-feasible-node": "it is the only feasible node",
            "tie-break": f"it ties with {len(expl.tied) - 1} other node(s) at the best total "
            "and won the random tie-break",
        }.get(expl.chosen_by, "it has the best total")
        scores = ", ".join(f"{s.plugin} {s.weighted}" for s in v.scores)
        return f"{name} is where the pod would go: {how}" + (
            f" ({v.total}: {scores})." if scores else "."
        )
    chosen = expl.node(expl.chosen) if expl.chosen else None
    if chosen is None or chosen.total is None or v.total is None:
        return f"{name} is feasible."
    if v.total == chosen.total:
        return (
            f"{name} is feasible and ties with {chosen.node} at {v.total}; the tie was broken "
            f"at random in favour of {chosen.node}."
        )
    return (
        f"{name} is feasible but scores {v.total}, {chosen.total - v.total} below "
        f"{chosen.node} ({chosen.total}): {score_difference(chosen, v)}."
    )
