//! One scheduling attempt, traced node by node, for `ksched explain` and shadow mode.
//!
//! [`Snapshot::explain_attempt`] walks the nodes exactly as [`Snapshot::schedule`]'s
//! attempt does (see `cycle`): the same PreFilter state, the zone-interleaved order from
//! the snapshot's start index, the same `numFeasibleNodesToFind` stop (unless sampling is
//! turned off), the same Score plugins normalized over the same feasible set, and the
//! same tie-break, made with a *copy* of the snapshot's random state. Nothing moves: the
//! start index and the random state are left as they were, so the next `schedule` call
//! decides exactly what the trace says it would (a pod with a nominated node aside: the
//! caller checks that node first, as `schedule` does).
//!
//! It is a separate walk rather than a flag on the hot path: the attempt itself keeps no
//! per-node record on success (that is what makes it fast), and explaining runs once per
//! question, so a plain sequential loop is fast enough here and leaves `cycle` alone.

use rand::rngs::SmallRng;
use rand::Rng;

use crate::cycle::PodState;
use crate::plugins::{Plugin, Reject, DETAIL_NOT_IN_PREFILTER_RESULT};
use crate::pod::CompiledPod;
use crate::profile::Profile;
use crate::sample::num_feasible_nodes_to_find;
use crate::snapshot::Snapshot;

/// What happened to one node in the traced attempt.
#[derive(Debug)]
pub enum NodeOutcome {
    /// Passed every Filter.
    Feasible,
    Rejected(Reject),
    /// Never looked at: the attempt had found enough feasible nodes first.
    NotExamined,
}

#[derive(Debug)]
pub struct TracedNode {
    pub slot: u32,
    pub outcome: NodeOutcome,
    /// `(plugin, raw, normalized)` per Score plugin, for feasible nodes when scoring ran.
    pub scores: Vec<(Plugin, i64, i64)>,
    pub total: i64,
}

/// The traced attempt: every node in examination order (those not examined last).
#[derive(Debug)]
pub struct Trace {
    pub nodes: Vec<TracedNode>,
    pub state: PodState,
    pub chosen: Option<u32>,
    pub evaluated_nodes: usize,
    pub feasible_nodes: usize,
    pub num_all_nodes: usize,
    /// `numFeasibleNodesToFind` among the nodes the attempt could examine.
    pub num_to_find: usize,
    /// The position in the zone-interleaved order the walk started from.
    pub start_index: usize,
    /// Whether Score ran (two or more feasible nodes, as upstream).
    pub scored: bool,
    /// The pod's nominated node passed every Filter and was chosen alone.
    pub nominated: bool,
}

impl Snapshot {
    /// Trace one attempt for `pod` without changing the snapshot. With `sample` false
    /// every node is examined (no `percentageOfNodesToScore` stop) and the scores are
    /// normalized over every feasible node.
    /// `use_nomination`: a pod nominated to a node that passes every Filter there is
    /// placed on it without looking at other nodes, as `schedule` does.
    pub fn explain_attempt(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        sample: bool,
        use_nomination: bool,
    ) -> Trace {
        let st = self.prefilter(pod, profile);
        self.ensure_order();
        let all = self.order.clone();
        let mut trace = Trace {
            nodes: Vec::with_capacity(all.len()),
            state: PodState::default(),
            chosen: None,
            evaluated_nodes: 0,
            feasible_nodes: 0,
            num_all_nodes: all.len(),
            num_to_find: 0,
            start_index: 0,
            scored: false,
            nominated: false,
        };
        let rejected = |slot: u32, r: Reject| TracedNode {
            slot,
            outcome: NodeOutcome::Rejected(r),
            scores: Vec::new(),
            total: 0,
        };
        if let Some((plugin, _)) = &st.prefilter_reject {
            let r = Reject {
                plugin: *plugin,
                unresolvable: true,
                detail: 0,
            };
            trace.nodes = all.iter().map(|&slot| rejected(slot, r)).collect();
            trace.state = st;
            return trace;
        }
        if use_nomination && !pod.nominated_node_name.is_empty() {
            let nominated = self
                .slot_of(&pod.nominated_node_name)
                .filter(|&s| self.has_node[s as usize]);
            if let Some(slot) = nominated {
                if self.filter_node(profile, &st, slot).is_none() {
                    trace.nodes.push(TracedNode {
                        slot,
                        outcome: NodeOutcome::Feasible,
                        scores: Vec::new(),
                        total: 0,
                    });
                    trace
                        .nodes
                        .extend(all.iter().filter(|&&s| s != slot).map(|&s| TracedNode {
                            slot: s,
                            outcome: NodeOutcome::NotExamined,
                            scores: Vec::new(),
                            total: 0,
                        }));
                    trace.chosen = Some(slot);
                    trace.evaluated_nodes = 1;
                    trace.feasible_nodes = 1;
                    trace.num_to_find = 1;
                    trace.nominated = true;
                    trace.state = st;
                    return trace;
                }
            }
        }
        let order: Vec<u32> = match &st.allowed {
            Some(allowed) => all
                .iter()
                .copied()
                .filter(|s| allowed.contains(s))
                .collect(),
            None => all.clone(),
        };
        let n = order.len();
        let mut feasible: Vec<u32> = Vec::new();
        let mut not_examined: Vec<u32> = Vec::new();
        if n > 0 {
            let want = if sample {
                num_feasible_nodes_to_find(n, profile.percentage_of_nodes_to_score)
            } else {
                n
            };
            let start = self.next_start % n;
            trace.num_to_find = want;
            trace.start_index = start;
            let mut processed = n;
            for p in 0..n {
                let slot = order[(start + p) % n];
                match self.filter_node(profile, &st, slot) {
                    None => {
                        feasible.push(slot);
                        trace.nodes.push(TracedNode {
                            slot,
                            outcome: NodeOutcome::Feasible,
                            scores: Vec::new(),
                            total: 0,
                        });
                        if feasible.len() == want {
                            processed = p + 1;
                            break;
                        }
                    }
                    Some(r) => trace.nodes.push(rejected(slot, r)),
                }
            }
            not_examined.extend((processed..n).map(|p| order[(start + p) % n]));
            trace.evaluated_nodes = processed;
        }
        trace.feasible_nodes = feasible.len();
        if st.allowed.is_some() {
            for &slot in &all {
                if !order.contains(&slot) {
                    trace.nodes.push(rejected(
                        slot,
                        Reject {
                            plugin: Plugin::NodeAffinity,
                            unresolvable: true,
                            detail: DETAIL_NOT_IN_PREFILTER_RESULT,
                        },
                    ));
                }
            }
        }
        trace
            .nodes
            .extend(not_examined.into_iter().map(|slot| TracedNode {
                slot,
                outcome: NodeOutcome::NotExamined,
                scores: Vec::new(),
                total: 0,
            }));
        match feasible.len() {
            0 => {}
            1 => trace.chosen = Some(feasible[0]),
            _ => {
                let mut totals = vec![0i64; feasible.len()];
                let mut per_plugin: Vec<Vec<(Plugin, i64, i64)>> =
                    vec![Vec::with_capacity(profile.scores.len()); feasible.len()];
                for &(plugin, weight) in &profile.scores {
                    let (raw, norm) = self.plugin_scores(profile, &st, plugin, &feasible, &all);
                    for k in 0..feasible.len() {
                        per_plugin[k].push((plugin, raw[k], norm[k]));
                        totals[k] += norm[k] * weight;
                    }
                }
                trace.chosen = Some(feasible[pick_with_copy(self, &totals)]);
                trace.scored = true;
                // Feasible rows are in the order the nodes were found, as `totals`.
                let mut k = 0;
                for row in trace.nodes.iter_mut() {
                    if matches!(row.outcome, NodeOutcome::Feasible) {
                        row.total = totals[k];
                        row.scores = std::mem::take(&mut per_plugin[k]);
                        k += 1;
                    }
                }
            }
        }
        trace.state = st;
        trace
    }
}

/// The index `select_host` would pick (highest total, ties by reservoir sampling),
/// drawn from a copy of the snapshot's random state.
fn pick_with_copy(snapshot: &Snapshot, totals: &[i64]) -> usize {
    let mut rng = snapshot.rng.clone();
    let mut best = 0usize;
    let mut ties = 1u32;
    for i in 1..totals.len() {
        if totals[i] > totals[best] {
            best = i;
            ties = 1;
        } else if totals[i] == totals[best] {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    best
}

/// One node of a traced attempt as Python sees it: `(node, outcome, status, scores,
/// total)` with outcome `"feasible"`, `"rejected"` or `"not-examined"`, status
/// `(unresolvable, plugin, reasons)` for rejected nodes, scores `(plugin, raw,
/// normalized)`.
pub type TracedRow = (
    String,
    &'static str,
    Option<(bool, &'static str, Vec<String>)>,
    Vec<(&'static str, i64, i64)>,
    i64,
);

/// `ksched._core.AttemptTrace`: a traced attempt, converted for Python.
#[pyo3::pyclass(frozen, module = "ksched._core")]
pub struct AttemptTrace {
    #[pyo3(get)]
    nodes: Vec<TracedRow>,
    #[pyo3(get)]
    chosen: Option<String>,
    #[pyo3(get)]
    evaluated_nodes: usize,
    #[pyo3(get)]
    feasible_nodes: usize,
    #[pyo3(get)]
    num_all_nodes: usize,
    #[pyo3(get)]
    num_to_find: usize,
    #[pyo3(get)]
    start_index: usize,
    #[pyo3(get)]
    scored: bool,
    #[pyo3(get)]
    nominated: bool,
    #[pyo3(get)]
    pre_filter_msg: Option<String>,
}

impl AttemptTrace {
    pub fn from_trace(snapshot: &Snapshot, trace: Trace) -> Self {
        let name = |slot: u32| snapshot.names[slot as usize].to_string();
        let st = &trace.state;
        let nodes = trace
            .nodes
            .iter()
            .map(|row| {
                let (outcome, status) = match &row.outcome {
                    NodeOutcome::Feasible => ("feasible", None),
                    NodeOutcome::NotExamined => ("not-examined", None),
                    NodeOutcome::Rejected(r) => (
                        "rejected",
                        Some((
                            r.unresolvable,
                            r.plugin.name(),
                            snapshot.reasons(st, row.slot, r),
                        )),
                    ),
                };
                let scores = row
                    .scores
                    .iter()
                    .map(|&(p, raw, norm)| (p.name(), raw, norm))
                    .collect();
                (name(row.slot), outcome, status, scores, row.total)
            })
            .collect();
        AttemptTrace {
            nodes,
            chosen: trace.chosen.map(name),
            evaluated_nodes: trace.evaluated_nodes,
            feasible_nodes: trace.feasible_nodes,
            num_all_nodes: trace.num_all_nodes,
            num_to_find: trace.num_to_find,
            start_index: trace.start_index,
            scored: trace.scored,
            nominated: trace.nominated,
            pre_filter_msg: st.prefilter_reject.as_ref().map(|(_, m)| m.clone()),
        }
    }
}

#[pyo3::pymethods]
impl AttemptTrace {
    fn __repr__(&self) -> String {
        format!(
            "AttemptTrace(chosen={:?}, evaluated={}, feasible={}/{})",
            self.chosen, self.evaluated_nodes, self.feasible_nodes, self.num_all_nodes
        )
    }
}

/// `ksched._core.AttemptState`: the snapshot's start index and random state, saved so
/// that an attempt run only to learn its outcome (``ksched explain`` asking for the
/// FailedScheduling message) leaves no trace on the attempts that follow.
#[pyo3::pyclass(frozen, module = "ksched._core")]
pub struct AttemptState {
    pub next_start: usize,
    pub rng: SmallRng,
}
