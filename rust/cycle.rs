//! One scheduling attempt over the snapshot: PreFilter, Filter with sampling, Score,
//! normalize, weighted sum, select.
//!
//! The attempt behaves as if nodes were examined one by one in the snapshot's
//! zone-interleaved order, starting where the previous attempt stopped, until
//! `numFeasibleNodesToFind` feasible nodes are found: nodes are filtered in waves (in
//! parallel when a wave is large), and the first feasible nodes in order are kept, so
//! the result does not depend on thread timing. The start index then advances by the
//! number of nodes examined, as upstream's `nextStartNodeIndex` does. Ties on the best
//! total score are broken uniformly at random.

use rand::Rng;
use rayon::prelude::*;

use crate::plugins::node_resources_fit::{self as fit, FilterState, ScoreState};
use crate::plugins::{node_name, node_unschedulable, Plugin, Reject};
use crate::pod::CompiledPod;
use crate::profile::Profile;
use crate::sample::num_feasible_nodes_to_find;
use crate::snapshot::Snapshot;

/// Waves at least this large are filtered in parallel.
const PARALLEL_MIN_NODES: usize = 2048;
/// Work handed to one rayon task at a time.
const PARALLEL_CHUNK: usize = 512;
/// Smallest wave; avoids many tiny waves when few nodes are feasible.
const MIN_WAVE: usize = 256;

/// Per-pod state computed once per attempt (upstream's PreFilter/PreScore cycle state).
#[derive(Debug, Default)]
pub struct PodState {
    pub tolerates_unschedulable: bool,
    /// `None`: the pod names no node. `Some(None)`: it names a node not in the snapshot.
    pub node_name: Option<Option<u32>>,
    pub fit: FilterState,
    pub fit_score: ScoreState,
}

/// The result of one attempt.
#[derive(Debug, Default)]
pub struct Outcome {
    pub chosen: Option<u32>,
    pub evaluated_nodes: usize,
    pub feasible_nodes: usize,
    pub num_all_nodes: usize,
    /// Rejected nodes; kept only when no node was feasible (for the diagnosis and
    /// preemption).
    pub failures: Vec<(u32, Reject)>,
    /// `(slot, total)` of the scored nodes, best first when requested.
    pub scores: Vec<(u32, i64)>,
    /// The pod's PreFilter state, kept when no node was feasible so the failures'
    /// reasons can be formatted.
    pub state: Option<PodState>,
}

impl Snapshot {
    pub fn prefilter(&mut self, pod: &CompiledPod, profile: &Profile) -> PodState {
        let mut st = PodState {
            tolerates_unschedulable: node_unschedulable::tolerates_unschedulable(&pod.tolerations),
            node_name: if pod.node_name.is_empty() {
                None
            } else {
                Some(self.slot_of(&pod.node_name))
            },
            ..PodState::default()
        };
        if profile.filters.contains(&Plugin::NodeResourcesFit) {
            st.fit = fit::prefilter(self, pod, &profile.fit);
        }
        if profile.has_score(Plugin::NodeResourcesFit) {
            st.fit_score = fit::prescore(self, pod, &profile.fit.resources, false);
        }
        st
    }

    /// Run every Filter of the profile on one node, stopping at the first rejection.
    #[inline]
    pub fn filter_node(&self, profile: &Profile, st: &PodState, slot: u32) -> Option<Reject> {
        for &plugin in &profile.filters {
            let rejected = match plugin {
                Plugin::NodeUnschedulable => (!node_unschedulable::filter(
                    self.unschedulable[slot as usize],
                    st.tolerates_unschedulable,
                ))
                .then_some((true, 0)),
                Plugin::NodeName => (!node_name::filter(st.node_name, slot)).then_some((true, 0)),
                Plugin::NodeResourcesFit => fit::filter(self, &st.fit, slot).map(|m| (false, m)),
            };
            if let Some((unresolvable, detail)) = rejected {
                return Some(Reject {
                    plugin,
                    unresolvable,
                    detail,
                });
            }
        }
        None
    }

    /// The reason strings of a rejection, as upstream's status reasons.
    pub fn reasons(&self, st: &PodState, reject: &Reject) -> Vec<String> {
        match reject.plugin {
            Plugin::NodeUnschedulable => {
                vec![node_unschedulable::ERR_REASON_UNSCHEDULABLE.to_string()]
            }
            Plugin::NodeName => vec![node_name::ERR_REASON.to_string()],
            Plugin::NodeResourcesFit => fit::reasons(self, &st.fit, reject.detail),
        }
    }

    /// Weighted total score of every node in `feasible` (same order).
    pub fn score_nodes(&self, profile: &Profile, st: &PodState, feasible: &[u32]) -> Vec<i64> {
        let mut totals = vec![0i64; feasible.len()];
        for &(plugin, weight) in &profile.scores {
            let raw = self.plugin_scores(profile, st, plugin, feasible);
            for (t, s) in totals.iter_mut().zip(raw) {
                *t += s * weight;
            }
        }
        totals
    }

    /// One Score plugin's scores (after its NormalizeScore) for `feasible`.
    pub fn plugin_scores(
        &self,
        profile: &Profile,
        st: &PodState,
        plugin: Plugin,
        feasible: &[u32],
    ) -> Vec<i64> {
        match plugin {
            Plugin::NodeResourcesFit => {
                let score_one = |buf: &mut Vec<(i64, i64, i64)>, slot: u32| {
                    fit::alloc_and_request(self, &st.fit_score, slot, buf);
                    fit::strategy_score(&profile.fit.strategy, buf)
                };
                if feasible.len() >= PARALLEL_MIN_NODES {
                    feasible
                        .par_iter()
                        .with_min_len(PARALLEL_CHUNK)
                        .map_init(Vec::new, |buf, &slot| score_one(buf, slot))
                        .collect()
                } else {
                    let mut buf = Vec::with_capacity(st.fit_score.resources.len());
                    feasible
                        .iter()
                        .map(|&slot| score_one(&mut buf, slot))
                        .collect()
                }
            }
            Plugin::NodeUnschedulable | Plugin::NodeName => vec![0; feasible.len()],
        }
    }

    /// Filter the nodes at positions `range` of `order` (wrapping from `start`).
    fn filter_wave(
        &self,
        order: &[u32],
        start: usize,
        range: std::ops::Range<usize>,
        profile: &Profile,
        st: &PodState,
    ) -> Vec<(u32, Option<Reject>)> {
        let n = order.len();
        let at = |p: usize| {
            let slot = order[(start + p) % n];
            (slot, self.filter_node(profile, st, slot))
        };
        if range.len() >= PARALLEL_MIN_NODES {
            range
                .into_par_iter()
                .with_min_len(PARALLEL_CHUNK)
                .map(at)
                .collect()
        } else {
            range.map(at).collect()
        }
    }

    /// One scheduling attempt. `keep_scores` keeps every scored node's total (for
    /// diagnostics); the hot path passes false.
    pub fn schedule(&mut self, pod: &CompiledPod, profile: &Profile, keep_scores: bool) -> Outcome {
        let st = self.prefilter(pod, profile);
        self.ensure_order();
        let order = std::mem::take(&mut self.order);
        let mut out = self.schedule_with(&order, pod, profile, &st, keep_scores);
        self.order = order;
        if out.chosen.is_none() {
            out.state = Some(st);
        }
        out
    }

    fn schedule_with(
        &mut self,
        order: &[u32],
        _pod: &CompiledPod,
        profile: &Profile,
        st: &PodState,
        keep_scores: bool,
    ) -> Outcome {
        let n = order.len();
        let mut out = Outcome {
            num_all_nodes: n,
            ..Outcome::default()
        };
        if n == 0 {
            return out;
        }
        let want = num_feasible_nodes_to_find(n, profile.percentage_of_nodes_to_score);
        let start = self.next_start % n;

        let mut feasible: Vec<u32> = Vec::with_capacity(want.min(n));
        let mut processed = n;
        let mut pos = 0;
        'waves: while pos < n {
            let need = want - feasible.len();
            // Size the wave by the feasibility seen so far, so a mostly-full cluster
            // is not walked in many small steps.
            let estimate = if feasible.is_empty() {
                need
            } else {
                need * pos / feasible.len()
            };
            let wave = estimate.max(MIN_WAVE).min(n - pos);
            for (off, (slot, verdict)) in self
                .filter_wave(order, start, pos..pos + wave, profile, st)
                .into_iter()
                .enumerate()
            {
                match verdict {
                    None => {
                        feasible.push(slot);
                        if feasible.len() == want {
                            processed = pos + off + 1;
                            break 'waves;
                        }
                    }
                    Some(r) => out.failures.push((slot, r)),
                }
            }
            pos += wave;
        }
        self.next_start = (start + processed) % n;
        out.evaluated_nodes = processed;
        out.feasible_nodes = feasible.len();

        match feasible.len() {
            0 => return out,
            1 => {
                out.chosen = Some(feasible[0]);
                out.failures.clear();
                return out;
            }
            _ => {}
        }
        out.failures.clear();
        let totals = self.score_nodes(profile, st, &feasible);
        out.chosen = Some(self.select_host(&feasible, &totals));
        if keep_scores {
            let mut scored: Vec<(u32, i64)> = feasible.iter().copied().zip(totals).collect();
            scored.sort_by_key(|&(_, total)| std::cmp::Reverse(total));
            out.scores = scored;
        }
        out
    }

    /// The node with the highest total; ties broken uniformly at random (reservoir
    /// sampling over the tied nodes, as upstream's `selectHost`).
    fn select_host(&mut self, feasible: &[u32], totals: &[i64]) -> u32 {
        let mut best = 0usize;
        let mut ties = 1u32;
        for i in 1..feasible.len() {
            if totals[i] > totals[best] {
                best = i;
                ties = 1;
            } else if totals[i] == totals[best] {
                ties += 1;
                if self.rng.random_range(0..ties) == 0 {
                    best = i;
                }
            }
        }
        feasible[best]
    }
}
