"""What ``ksched explain`` reports: plain dataclasses, rendered by :mod:`ksched.explain.render`
and returned as they are by ``ksched.testing``'s ``explain(pod)``.

One :class:`Explanation` per attempt: a :class:`NodeVerdict` for every node (its Filter
outcome, the plugin that rejected it and why, and for feasible nodes each Score
plugin's raw, normalized and weighted score), the node the attempt would choose, the
FailedScheduling message it would write when none fits, and the smallest changes that
would make the pod fit (:class:`Suggestion`). :meth:`Explanation.as_dict` is the JSON of
``--output json``; its keys are part of the public API (see the README's version
policy).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "FEASIBLE",
    "NOT_EXAMINED",
    "REJECTED",
    "Explanation",
    "NodeVerdict",
    "Outcome",
    "PluginScore",
    "Suggestion",
]

Outcome = Literal["feasible", "rejected", "not-examined"]
FEASIBLE: Outcome = "feasible"
REJECTED: Outcome = "rejected"
NOT_EXAMINED: Outcome = "not-examined"


@dataclass(slots=True)
class PluginScore:
    """One Score plugin's verdict on one node: its raw score, the score after its
    NormalizeScore, the profile's weight and the weighted score added to the total."""

    plugin: str
    raw: int
    normalized: int
    weight: int

    @property
    def weighted(self) -> int:
        return self.normalized * self.weight


@dataclass(slots=True)
class NodeVerdict:
    """One node in the attempt. ``plugin``/``code``/``reasons`` say why a rejected node
    was rejected (upstream's status); ``scores`` and ``total`` are set for feasible nodes
    when Score ran (it does not with a single feasible node, as upstream)."""

    node: str
    outcome: Outcome
    plugin: str = ""
    code: str = ""
    reasons: tuple[str, ...] = ()
    scores: list[PluginScore] = field(default_factory=list)
    total: int | None = None
    chosen: bool = False

    @property
    def reason(self) -> str:
        """The reasons joined as upstream's ``Status.Message``."""
        return ", ".join(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = list(self.reasons)
        for s, obj in zip(d["scores"], self.scores, strict=True):
            s["weighted"] = obj.weighted
        return d


@dataclass(slots=True)
class Suggestion:
    """A change that would make the pod fit, verified by running the filters again on
    the changed pod. ``kind``: ``resource``, ``toleration``, ``host-port`` or
    ``preemption``; ``nodes``: where it would then fit (preemption: the node it would
    be nominated to); ``details``: the change itself (resource and bound, tolerations,
    victims...)."""

    kind: str
    text: str
    nodes: list[str]
    details: dict[str, Any] = field(default_factory=dict)
    #: The change alone, to follow "the pod would fit if": ``its cpu request were ≤
    #: 1500m (it requests 2)``, ``it tolerated `dedicated=gpu:NoSchedule```...
    condition: str = ""


@dataclass(slots=True)
class Explanation:
    """One scheduling attempt of one pod, node by node."""

    pod: str
    profile: str
    num_all_nodes: int
    evaluated_nodes: int
    feasible_nodes: int
    #: ``numFeasibleNodesToFind``: the attempt stops after that many feasible nodes.
    num_to_find: int
    #: Whether ``percentageOfNodesToScore`` sampling was applied (``--all-nodes``: no).
    sampled: bool
    #: The profile's effective percentageOfNodesToScore (0: adaptive).
    percentage_of_nodes_to_score: int
    #: Position in the zone-interleaved node order the attempt started from.
    start_index: int
    #: Sorted by outcome: the chosen node, the other feasible nodes by total, the
    #: rejected ones by plugin and name, then the nodes not examined.
    nodes: list[NodeVerdict]
    chosen: str | None = None
    #: The feasible nodes whose total equals the best (a tie is broken at random).
    tied: list[str] = field(default_factory=list)
    #: Why ``chosen``: ``score``, ``tie-break``, ``only-feasible-node`` or
    #: ``nominated-node``.
    chosen_by: str = ""
    #: The FailedScheduling event message (and PodScheduled condition) upstream would
    #: write when no node fits; None when the pod fits.
    failed_scheduling: str | None = None
    #: Where PostFilter (preemption) would nominate the pod.
    nominated_node: str | None = None
    suggestions: list[Suggestion] = field(default_factory=list)
    #: Changes that would make the pod fit on one node (asked for by name: ``--node``).
    node_suggestions: dict[str, list[Suggestion]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def node(self, name: str) -> NodeVerdict | None:
        return next((v for v in self.nodes if v.node == name), None)

    @property
    def feasible(self) -> list[str]:
        return [v.node for v in self.nodes if v.outcome == FEASIBLE]

    @property
    def rejected(self) -> dict[str, NodeVerdict]:
        return {v.node: v for v in self.nodes if v.outcome == REJECTED}

    def as_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "numAllNodes": self.num_all_nodes,
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
            "numFeasibleNodesToFind": self.num_to_find,
            "sampled": self.sampled,
            "percentageOfNodesToScore": self.percentage_of_nodes_to_score,
            "startIndex": self.start_index,
            "chosen": self.chosen,
            "tied": list(self.tied),
            "chosenBy": self.chosen_by,
            "failedScheduling": self.failed_scheduling,
            "nominatedNode": self.nominated_node,
            "nodes": [v.as_dict() for v in self.nodes],
            "suggestions": [asdict(s) for s in self.suggestions],
            "nodeSuggestions": {
                n: [asdict(s) for s in ss] for n, ss in self.node_suggestions.items()
            },
            "notes": list(self.notes),
        }
