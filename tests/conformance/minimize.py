"""Shrink a disagreeing case to a small reproduction.

Greedy, in passes until nothing more goes (or the budget of checks runs out): drop whole
objects (never the pod being scheduled), then drop single fields and list items of the
remaining objects and of the configuration, deepest first. A change is kept when the
case is still valid for upstream and ksched still disagrees on one of the aspects it
disagreed on originally. Every step is a full check of both sides
(:class:`tests.conformance.check.Checker`), so the result reproduces on its own:
``python -m tests.conformance --replay FILE``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tests.conformance.check import Checked, Checker

Obj = dict[str, Any]
Path = tuple[Any, ...]

#: Fields a shrunk object must keep (the API needs them to mean anything).
_KEEP = {
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "containers",
    "image",
    "percentageOfNodesToScore",
}


def _paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every removable position under ``value``, deepest first."""
    if isinstance(value, dict):
        for k, v in list(value.items()):
            yield from _paths(v, (*prefix, k))
            if k not in _KEEP:
                yield (*prefix, k)
    elif isinstance(value, list):
        for i in reversed(range(len(value))):
            yield from _paths(value[i], (*prefix, i))
            yield (*prefix, i)


def _without(doc: Any, path: Path) -> Any:
    out = copy.deepcopy(doc)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return out


def minimize(checker: Checker, checked: Checked, *, budget: int = 400) -> Checked:
    """The smallest variant of ``checked.case`` found that still disagrees."""
    assert checked.comparison is not None
    aspects = set(checked.comparison.differences)
    best = checked
    checks = 0

    def still_fails(case: Obj) -> Checked | None:
        nonlocal checks
        checks += 1
        got = checker.one(case)
        if got.invalid or got.comparison is None:
            return None
        if aspects & set(got.comparison.differences):
            return got
        return None

    changed = True
    while changed and checks < budget:
        changed = False
        case = best.case
        target = case["pod"]
        # Whole objects first: the cheapest big win.
        for i in reversed(range(len(case["objects"]))):
            obj = case["objects"][i]
            meta = obj.get("metadata") or {}
            if f"{meta.get('namespace', '')}/{meta.get('name', '')}" == target:
                continue
            trial = {**case, "objects": case["objects"][:i] + case["objects"][i + 1 :]}
            got = still_fails(trial)
            if got is not None:
                best, case, changed = got, trial, True
            if checks >= budget:
                break
        # Then fields, of the objects and of the configuration.
        for where in ("objects", "config"):
            for path in list(_paths(case[where])):
                if checks >= budget:
                    break
                try:
                    trial = {**case, where: _without(case[where], path)}
                except (KeyError, IndexError, TypeError):
                    continue  # a position an earlier removal took away
                got = still_fails(trial)
                if got is not None:
                    best, case, changed = got, trial, True
    return best
