//! One scheduling attempt over the snapshot: PreFilter, Filter with sampling, PreScore,
//! Score, NormalizeScore, weighted sum, select.
//!
//! The attempt behaves as if nodes were examined one by one in the snapshot's
//! zone-interleaved order, starting where the previous attempt stopped, until
//! `numFeasibleNodesToFind` feasible nodes are found: nodes are filtered in waves (in
//! parallel only when a wave is very large, [`PARALLEL_MIN_WAVE`]: a node's Filters cost
//! less than handing work to other threads on a small machine), and the first feasible
//! nodes in order are kept, so the result does not depend on thread timing. The start index then advances by the number
//! of nodes examined, as upstream's `nextStartNodeIndex` does. Ties on the best total
//! score are broken uniformly at random.
//!
//! All per-pod work (resolving strings to ids, counting pods per topology domain, ...) is
//! done once in [`Snapshot::prefilter`]; the per-node kernels only read that state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;

use ahash::AHashMap;
use rand::Rng;
use rayon::prelude::*;

use crate::normalize::default_normalize;
use crate::plugins::dynamic_resources::DraFilter;
use crate::plugins::image_locality::{self, ImageState};
use crate::plugins::inter_pod_affinity::{
    self as ipa, add_count, CompiledAffinity, IpaFilterState,
};
use crate::plugins::node_affinity::{self, NodeAffinityState};
use crate::plugins::node_declared_features::{self as ndf, FeatureSet};
use crate::plugins::node_ports::{self, HostPort};
use crate::plugins::node_resources_fit::{
    self as fit, FilterState, Freed, ScoreState, NOTHING_FREED,
};
use crate::plugins::node_volume_limits::{self, LimitsState};
use crate::plugins::pod_topology_spread::{
    self as pts, Constraint, SpreadFilterState, Unsatisfiable,
};
use crate::plugins::taint_toleration::{self, TaintState};
use crate::plugins::volume_binding::{self, BindingState};
use crate::plugins::volume_restrictions::{self, RestrictionsState};
use crate::plugins::volume_zone::{self, ZoneState};
use crate::plugins::{
    balanced_allocation, node_name, node_unschedulable, Plugin, Reject, DETAIL_ERROR,
    DETAIL_NOT_IN_PREFILTER_RESULT,
};
use crate::pod::CompiledPod;
use crate::profile::Profile;
use crate::reuse::{self, Entry, SCORED};
use crate::sample::num_feasible_nodes_to_find;
use crate::selector::intern_labels;
use crate::snapshot::anti::TermKind;
use crate::snapshot::counts::{DomainSummary, PodPredicate};
use crate::snapshot::PodRecord;
use crate::snapshot::Snapshot;
use crate::volume::PreFilterReject;

/// Node lists at least this large are scored in parallel.
const PARALLEL_MIN_NODES: usize = 2048;
/// Filter waves at least this large are filtered in parallel. Measured on 2 cores
/// (`ksched simulate`, 5,000 nodes, the scheduler's Python on the other core): waves of
/// 2,048+ nodes in parallel gave topology-spreading an attempt p99 of 150-340 µs
/// against 75-86 µs walking them on the calling thread, and pod-anti-affinity and
/// pod-affinity 156-193 against 107-166 µs: a node's Filters cost tens of
/// nanoseconds, less than waking rayon's workers and waiting for them.
const PARALLEL_MIN_WAVE: usize = 16384;
/// Work handed to one rayon task at a time.
const PARALLEL_CHUNK: usize = 512;
/// Smallest wave; avoids many tiny waves when few nodes are feasible.
const MIN_WAVE: usize = 256;

/// An existing pods' anti-affinity group's kept domains: `(topology key, pods per value
/// id, values with pods)` (see `snapshot::anti`).
type ExistingDomains = (u32, Arc<Vec<i64>>, usize);

/// Upstream's `scheduler_plugin_evaluation_total` for one attempt (its
/// `instrumented_plugins.go`): one PreFilter / PreScore evaluation per plugin called that
/// did not return Skip, and one Filter / Score evaluation per node a plugin is called on.
///
/// Kept cheap on the hot path: the Filter loop counts full passes and the rejecting
/// plugin of each node (one increment per node); the per-plugin Filter calls follow at
/// the end from the order of the plugins upstream calls ([`Snapshot::filter_evals`]): a
/// plugin is called on every node that passed, and on every node rejected by itself or
/// by a plugin after it.
#[derive(Debug, Default, Clone)]
pub struct Evals {
    /// Nodes scored (Python Score plugins the core does not see are called on them).
    pub scored: u32,
    pub pre_filter: [u32; PLUGINS],
    pub filter: [u32; PLUGINS],
    pub pre_score: [u32; PLUGINS],
    pub score: [u32; PLUGINS],
}

/// Number of [`Plugin`]s (the size of the counter arrays).
pub const PLUGINS: usize = Plugin::ALL.len();

impl Evals {
    pub fn add(&mut self, other: &Evals) {
        self.scored += other.scored;
        for (a, b) in [
            (&mut self.pre_filter, &other.pre_filter),
            (&mut self.filter, &other.filter),
            (&mut self.pre_score, &other.pre_score),
            (&mut self.score, &other.score),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    /// `(plugin, extension point, count)` of the non-zero counts.
    pub fn nonzero(&self) -> Vec<(&'static str, &'static str, u32)> {
        let mut out = Vec::new();
        for (point, counts) in [
            ("PreFilter", &self.pre_filter),
            ("Filter", &self.filter),
            ("PreScore", &self.pre_score),
            ("Score", &self.score),
        ] {
            for (i, &n) in counts.iter().enumerate() {
                if n != 0 {
                    out.push((Plugin::ALL[i].name(), point, n));
                }
            }
        }
        out
    }
}

/// Running totals of [`Evals`] for one framework (upstream's
/// `scheduler_plugin_evaluation_total` children of one profile), added by the
/// scheduling calls that are given them, read by the metrics at scrape time: the
/// scheduling loop does no per-attempt Python work for the metric. Atomic so that a
/// call adds to them with the GIL released; the adds happen once per call, not per node.
#[pyclass(module = "ksched._core", frozen)]
pub struct EvaluationCounts {
    scored: AtomicU64,
    /// PreFilter, Filter, PreScore, Score, each indexed by [`Plugin`].
    counts: [[AtomicU64; PLUGINS]; 4],
}

/// [`EvaluationCounts`]' extension points, as upstream labels them.
const EVALUATED_POINTS: [&str; 4] = ["PreFilter", "Filter", "PreScore", "Score"];

impl Default for EvaluationCounts {
    fn default() -> Self {
        EvaluationCounts {
            scored: AtomicU64::new(0),
            counts: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
        }
    }
}

impl EvaluationCounts {
    /// Add one call's evaluations.
    pub fn add(&self, e: &Evals) {
        if e.scored != 0 {
            self.scored
                .fetch_add(u64::from(e.scored), Ordering::Relaxed);
        }
        for (totals, counts) in
            self.counts
                .iter()
                .zip([&e.pre_filter, &e.filter, &e.pre_score, &e.score])
        {
            for (t, &n) in totals.iter().zip(counts) {
                if n != 0 {
                    t.fetch_add(u64::from(n), Ordering::Relaxed);
                }
            }
        }
    }
}

#[pymethods]
impl EvaluationCounts {
    #[new]
    fn py_new() -> Self {
        EvaluationCounts::default()
    }

    /// `(plugin, extension point, count)` of the non-zero totals.
    fn counts(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut out = Vec::new();
        for (point, totals) in EVALUATED_POINTS.iter().zip(&self.counts) {
            for (i, t) in totals.iter().enumerate() {
                let n = t.load(Ordering::Relaxed);
                if n != 0 {
                    out.push((Plugin::ALL[i].name(), *point, n));
                }
            }
        }
        out
    }

    /// How many nodes the counted attempts scored, in all.
    #[getter]
    fn scored(&self) -> u64 {
        self.scored.load(Ordering::Relaxed)
    }
}

/// The Filter loop's tally: nodes that passed every Filter (a node with nominated pods
/// that passed the first pass counts once more), and nodes rejected per plugin.
#[derive(Debug, Default, Clone)]
pub struct FilterTally {
    pub passed: u32,
    pub rejected: [u32; PLUGINS],
}

/// Per-pod state computed once per attempt (upstream's PreFilter/PreScore cycle state).
#[derive(Debug, Default)]
pub struct PodState {
    pub uid: String,
    pub priority: i32,
    pub namespace: u32,
    pub labels: Vec<(u32, u32)>,
    pub tolerates_unschedulable: bool,
    /// `None`: the pod names no node. `Some(None)`: it names a node not in the snapshot.
    pub node_name: Option<Option<u32>>,
    pub taints: TaintState,
    pub node_affinity: NodeAffinityState,
    /// NodeAffinity's PreFilter result: only these nodes are examined.
    pub allowed: Option<Vec<u32>>,
    /// A PreFilter rejected the pod outright: `(plugin, message)`.
    pub prefilter_reject: Option<(Plugin, String)>,
    /// That PreFilter returned an error rather than UnschedulableAndUnresolvable.
    pub prefilter_error: bool,
    /// The volume plugins' per-pod state (`None`: the plugin is skipped for the pod).
    pub restrictions: Option<RestrictionsState>,
    pub limits: Option<LimitsState>,
    pub binding: Option<BindingState>,
    pub zone: Option<ZoneState>,
    /// NodeDeclaredFeatures' required features (`None`: the pod requires none, Skip).
    pub features: Option<FeatureSet>,
    pub ports: Vec<HostPort>,
    pub fit: FilterState,
    pub fit_score: ScoreState,
    /// `None` when BalancedAllocation skips this pod (best effort) or is not enabled.
    pub balanced_score: Option<ScoreState>,
    pub images: ImageState,
    pub spread: SpreadFilterState,
    pub spread_score: Vec<Constraint>,
    /// Count cache entries of `spread_score`'s selectors.
    pub spread_score_counts: Vec<Option<usize>>,
    pub spread_require_all: bool,
    pub ipa: IpaFilterState,
    /// Count cache entries of the pod's preferred affinity terms, then anti-affinity terms.
    pub ipa_preferred_counts: Vec<usize>,
    /// The profile's Filter plugins that can reject some node for this pod, in profile
    /// order; the others are no-ops for this pod and skipped on every node.
    pub active_filters: Vec<Plugin>,
    /// How many of `active_filters` come before DynamicResources' Filter in the profile
    /// (`dra` runs between them and the rest).
    pub dra_at: usize,
    /// Of the active filters, only NodeResourcesFit looks at the pods on a node (no
    /// host ports, hard spreading or inter-pod affinity in play): a node with some pods
    /// added or taken off is then judged by its requested amounts alone.
    pub only_fit_sees_pods: bool,
    /// The slot of the node the pod itself is nominated to (its nomination never counts
    /// against it).
    pub own_nomination: Option<u32>,
    /// The plugins named by the status of the nodes a PreFilter result left out, sorted
    /// (see [`Snapshot::schedule`]).
    pub absent_plugins: Vec<&'static str>,
    /// DynamicResources' Filter for this attempt, run at its place in the profile's
    /// Filter order (`dra_at`).
    pub dra: Option<Arc<DraFilter>>,
    /// The Filter plugins upstream calls for this pod, in profile order: the profile's
    /// (DynamicResources at its place) but those whose PreFilter returned Skip.
    pub called_filters: Vec<Plugin>,
    /// The built-in PreFilters upstream calls and that do not return Skip, up to the
    /// one that rejects the pod (`scheduler_plugin_evaluation_total`).
    pub pre_filter_evals: Vec<Plugin>,
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
    /// NodeAffinity's PreFilter returned a node-name result (upstream counts it among
    /// the unschedulable plugins whether or not it left a node out).
    pub narrowed: bool,
    /// A Filter returned an error on this node (the first in examination order): the
    /// attempt fails with it.
    pub error: Option<(u32, Reject)>,
    /// The attempt's plugin evaluations (upstream's `scheduler_plugin_evaluation_total`).
    pub evals: Evals,
}

/// One node's full evaluation, for `explain`.
#[derive(Debug)]
pub struct NodeExplain {
    pub slot: u32,
    pub reject: Option<Reject>,
    /// `(plugin, raw, normalized)` for feasible nodes.
    pub scores: Vec<(Plugin, i64, i64)>,
    pub total: i64,
}

fn map_nodes<F>(nodes: &[u32], f: F) -> Vec<i64>
where
    F: Fn(u32) -> i64 + Sync + Send,
{
    if nodes.len() >= PARALLEL_MIN_NODES {
        nodes
            .par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|&s| f(s))
            .collect()
    } else {
        nodes.iter().map(|&s| f(s)).collect()
    }
}

impl Snapshot {
    pub fn prefilter(&mut self, pod: &CompiledPod, profile: &Profile) -> PodState {
        self.count_cache.begin_attempt();
        // A PreFilter enabled without its Filter still runs (and may skip).
        let uses = |p: Plugin| {
            profile.filters.contains(&p)
                || profile.has_score(p)
                || profile.pre_filters.contains(&p)
                || profile.pre_scores.contains(&p)
        };
        let pre_or_filter =
            |p: Plugin| profile.filters.contains(&p) || profile.pre_filters.contains(&p);
        let namespace = self.interner.intern(&pod.namespace);
        let labels = intern_labels(&pod.labels, &mut self.interner);
        let mut st = PodState {
            uid: pod.uid.clone(),
            priority: pod.priority,
            namespace,
            tolerates_unschedulable: node_unschedulable::tolerates_unschedulable(&pod.tolerations),
            node_name: if pod.node_name.is_empty() {
                None
            } else {
                Some(self.slot_of(&pod.node_name))
            },
            ..PodState::default()
        };
        let spread = uses(Plugin::PodTopologySpread);
        if uses(Plugin::TaintToleration) || spread {
            st.taints = taint_toleration::prefilter(&pod.tolerations, &mut self.interner);
        }
        if uses(Plugin::NodeAffinity) || spread {
            st.node_affinity = node_affinity::prefilter(
                self,
                &pod.node_selector,
                &pod.node_affinity,
                &profile.node_affinity,
            );
        }
        if profile.filters.contains(&Plugin::NodeAffinity) {
            if let Some(names) = node_affinity::node_name_restriction(&pod.node_affinity) {
                if names.is_empty() {
                    st.prefilter_reject = Some((
                        Plugin::NodeAffinity,
                        node_affinity::ERR_REASON_CONFLICT.to_string(),
                    ));
                } else {
                    st.allowed = Some(names.iter().filter_map(|n| self.slot_of(n)).collect());
                }
            }
        }
        if pre_or_filter(Plugin::NodePorts) {
            st.ports = node_ports::compile(&pod.host_ports, &mut self.interner);
        }
        if pre_or_filter(Plugin::NodeDeclaredFeatures) {
            st.features = ndf::prefilter(&mut self.feature_table, &pod.required_features);
        }
        if profile.filters.contains(&Plugin::NodeResourcesFit) {
            st.fit = fit::prefilter(self, pod, &profile.fit);
        }
        if profile.has_score(Plugin::NodeResourcesFit) {
            st.fit_score = fit::prescore(self, pod, &profile.fit.resources, false);
        }
        // A PreScore enabled without its Score is called all the same (and may skip).
        let prescored = |p: Plugin| profile.has_score(p) || profile.pre_scores.contains(&p);
        if prescored(Plugin::NodeResourcesBalancedAllocation) {
            let s = fit::prescore(self, pod, &profile.balanced.resources, true);
            if s.resources.iter().any(|&(_, req, _)| req != 0) {
                st.balanced_score = Some(s);
            }
        }
        if profile.has_score(Plugin::ImageLocality) {
            st.images =
                image_locality::prefilter(&pod.images, &pod.image_volumes, &mut self.interner);
        }
        if spread {
            let filter_constraints = pts::constraints_for(
                self,
                &pod.spread_constraints,
                pod.default_spread_selector.as_ref(),
                &labels,
                &profile.spread,
                Unsatisfiable::DoNotSchedule,
            );
            if pre_or_filter(Plugin::PodTopologySpread) {
                self.ensure_order();
                let entries = pts::count_entries(self, &filter_constraints, namespace);
                // The count cache's domain views when every constraint can use one.
                let views = (self.domain_views
                    && !filter_constraints.is_empty()
                    && filter_constraints.iter().zip(&entries).all(|(c, e)| {
                        e.is_some() && pts::includes_every_node(c, &st.node_affinity.required)
                    }))
                .then(|| {
                    let required = pts::required_keys(&filter_constraints);
                    filter_constraints
                        .iter()
                        .zip(&entries)
                        .map(|(c, e)| self.domain_view(e.unwrap_or(0), c.key, &required))
                        .collect()
                });
                st.spread = pts::prefilter(
                    self,
                    filter_constraints,
                    &entries,
                    views,
                    &labels,
                    &st.node_affinity.required,
                    &st.taints,
                    &self.order,
                );
            }
            if prescored(Plugin::PodTopologySpread) {
                st.spread_score = pts::constraints_for(
                    self,
                    &pod.spread_constraints,
                    pod.default_spread_selector.as_ref(),
                    &labels,
                    &profile.spread,
                    Unsatisfiable::ScheduleAnyway,
                );
                st.spread_score_counts = pts::count_entries(self, &st.spread_score, namespace);
                st.spread_require_all =
                    !pod.spread_constraints.is_empty() || !profile.spread.system_defaulted;
            }
        }
        if uses(Plugin::InterPodAffinity) {
            let terms = CompiledAffinity::compile(
                &pod.pod_affinity,
                namespace,
                &labels,
                &mut self.interner,
            )
            .as_incoming();
            let affinity_entry = (!terms.affinity_required.is_empty())
                .then(|| self.count_entry(PodPredicate::AllTerms(terms.affinity_required.clone())));
            let anti_entries: Vec<usize> = terms
                .anti_required
                .iter()
                .map(|t| self.count_entry(PodPredicate::AllTerms(vec![t.clone()])))
                .collect();
            st.ipa_preferred_counts = terms
                .affinity_preferred
                .iter()
                .chain(&terms.anti_preferred)
                .map(|(_, t)| self.count_entry(PodPredicate::AllTerms(vec![t.clone()])))
                .collect();
            self.ensure_order();
            // The count cache's domain views by each term's key, when the terms' keys
            // are distinct (each key's counts are then one view's, not a sum of them).
            let distinct = |ts: &[ipa::AffinityTerm]| {
                ts.iter()
                    .enumerate()
                    .all(|(i, t)| ts[..i].iter().all(|u| u.topology_key != t.topology_key))
            };
            let affinity_views = match affinity_entry {
                Some(e) if self.domain_views && distinct(&terms.affinity_required) => Some(
                    terms
                        .affinity_required
                        .iter()
                        .map(|t| self.domain_view(e, t.topology_key, &[t.topology_key]))
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            };
            let anti_views = (self.domain_views && distinct(&terms.anti_required)).then(|| {
                terms
                    .anti_required
                    .iter()
                    .zip(&anti_entries)
                    .map(|(t, &e)| self.domain_view(e, t.topology_key, &[t.topology_key]))
                    .collect::<Vec<_>>()
            });
            // The existing pods' required anti-affinity groups matching the pod, by
            // their kept domains when the groups' keys are distinct.
            let existing_views = if self.domain_views {
                let own: Vec<(u32, u32)> = self.namespace_labels(namespace).unwrap_or(&[]).to_vec();
                let matching: Vec<usize> = self
                    .anti_index
                    .groups
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| {
                        g.kind == TermKind::RequiredAnti
                            && g.total != 0
                            && g.term.matches(namespace, Some(&own), &labels)
                    })
                    .map(|(i, _)| i)
                    .collect();
                let key = |gi: usize| self.anti_index.groups[gi].term.topology_key;
                let distinct = matching
                    .iter()
                    .enumerate()
                    .all(|(i, &g)| matching[..i].iter().all(|&h| key(h) != key(g)));
                distinct.then(|| {
                    matching
                        .iter()
                        .map(|&gi| {
                            let k = self.anti_index.groups[gi].term.topology_key;
                            let (counts, nonzero) = self.group_domains(gi);
                            (k, counts, nonzero)
                        })
                        .collect::<Vec<_>>()
                })
            } else {
                None
            };
            st.ipa = self.ipa_prefilter(
                terms,
                namespace,
                &labels,
                affinity_entry,
                &anti_entries,
                affinity_views,
                anti_views,
                existing_views,
            );
        }
        st.labels = labels;
        self.volume_prefilter(pod, profile, &mut st);
        self.refresh_active_filters(profile, &mut st);
        st.own_nomination = self
            .nominated
            .node_of(&pod.uid)
            .and_then(|n| self.slot_of(n));
        st.dra = self.pending_dra.take();
        // NodeResourcesFit / BalancedAllocation score DRA-backed extended resources with
        // DynamicResources' device totals.
        if !st.fit_score.dra_names.is_empty() {
            st.fit_score.dra = st.dra.clone();
        }
        if let Some(b) = st.balanced_score.as_mut() {
            if !b.dra_names.is_empty() {
                b.dra = st.dra.clone();
            }
        }
        self.plan_evals(pod, profile, &mut st);
        st.only_fit_sees_pods = !st.active_filters.iter().any(|p| {
            matches!(
                p,
                Plugin::NodePorts
                    | Plugin::PodTopologySpread
                    | Plugin::InterPodAffinity
                    | Plugin::VolumeRestrictions
                    | Plugin::NodeVolumeLimits
            )
        });
        st
    }

    /// The volume plugins' PreFilters, from the requests their Python halves attached to
    /// the pod: each request's verdict, or the state its Filter reads. A rejection is
    /// applied in the profile's plugin order together with NodeAffinity's, as upstream
    /// stops at the first PreFilter that rejects.
    fn volume_prefilter(&mut self, pod: &CompiledPod, profile: &Profile, st: &mut PodState) {
        let k = &pod.kernel;
        if k.is_empty() {
            return;
        }
        let on = |p: Plugin| profile.filters.contains(&p) || profile.has_score(p);
        let mut verdicts: Vec<(Plugin, PreFilterReject)> = Vec::new();
        if let Some(r) = k
            .restrictions
            .as_ref()
            .filter(|_| on(Plugin::VolumeRestrictions))
        {
            match &r.reject {
                Some(v) => verdicts.push((Plugin::VolumeRestrictions, v.clone())),
                None => st.restrictions = volume_restrictions::prefilter(self, pod, r),
            }
        }
        if let Some(r) = k.limits.as_ref().filter(|_| on(Plugin::NodeVolumeLimits)) {
            st.limits = node_volume_limits::prefilter(self, r);
        }
        if let Some(r) = k.binding.as_ref().filter(|_| on(Plugin::VolumeBinding)) {
            match &r.reject {
                Some(v) => verdicts.push((Plugin::VolumeBinding, v.clone())),
                None => st.binding = Some(volume_binding::prefilter(self, r)),
            }
        }
        if let Some(r) = k.zone.as_ref().filter(|_| on(Plugin::VolumeZone)) {
            match &r.reject {
                Some(v) => verdicts.push((Plugin::VolumeZone, v.clone())),
                None => st.zone = volume_zone::prefilter(self, r),
            }
        }
        if verdicts.is_empty() {
            return;
        }
        let current = st.prefilter_reject.as_ref().map(|(p, _)| *p);
        for &p in &profile.filters {
            if Some(p) == current {
                return;
            }
            if let Some((_, v)) = verdicts.iter().find(|(q, _)| *q == p) {
                st.prefilter_reject = Some((p, v.message.clone()));
                st.prefilter_error = v.error;
                return;
            }
        }
        if current.is_none() {
            let (p, v) = &verdicts[0];
            st.prefilter_reject = Some((*p, v.message.clone()));
            st.prefilter_error = v.error;
        }
    }

    /// Upstream's PreFilter of plugin `p` returns Skip for the pod of `st` (its Filter is
    /// then not called either). Plugins without a PreFilter never skip.
    fn pre_filter_skips(&self, p: Plugin, pod: &CompiledPod, st: &PodState) -> bool {
        let rejector = st.prefilter_reject.as_ref().map(|(q, _)| *q);
        if rejector == Some(p) {
            return false;
        }
        match p {
            Plugin::NodeUnschedulable
            | Plugin::NodeName
            | Plugin::TaintToleration
            | Plugin::NodeResourcesFit => false,
            Plugin::NodeAffinity => {
                st.node_affinity.added_required.is_none()
                    && st.node_affinity.required.is_empty()
                    && st.allowed.is_none()
            }
            Plugin::NodePorts => st.ports.is_empty(),
            Plugin::PodTopologySpread => st.spread.constraints.is_empty(),
            Plugin::InterPodAffinity => {
                st.ipa.terms.affinity_required.is_empty()
                    && st.ipa.terms.anti_required.is_empty()
                    && st.ipa.existing_anti_affinity_counts.is_empty()
            }
            // The volume plugins' Python halves attach a request exactly when their
            // PreFilter has volumes to look at.
            Plugin::VolumeRestrictions => {
                pod.kernel.restrictions.is_none()
                    || (pod
                        .kernel
                        .restrictions
                        .as_ref()
                        .is_some_and(|r| r.reject.is_none())
                        && st.restrictions.is_none())
            }
            Plugin::NodeVolumeLimits => pod.kernel.limits.is_none(),
            Plugin::VolumeBinding => pod.kernel.binding.is_none(),
            Plugin::VolumeZone => pod.kernel.zone.is_none(),
            Plugin::NodeDeclaredFeatures => st.features.is_none(),
            Plugin::DynamicResources => st.dra.is_none(),
            Plugin::NodeResourcesBalancedAllocation | Plugin::ImageLocality => true,
        }
    }

    /// `st.called_filters` and `st.pre_filter_evals` (see [`Evals`]). The built-in
    /// PreFilters run in the profile's Filter order (DynamicResources' PreFilter is a
    /// Python one, counted there).
    fn plan_evals(&self, pod: &CompiledPod, profile: &Profile, st: &mut PodState) {
        let dra_index = profile.dynamic_resources_at;
        let mut called = Vec::with_capacity(profile.filters.len() + 1);
        for (i, &p) in profile.filters.iter().enumerate() {
            if dra_index == Some(i) && st.dra.is_some() {
                called.push(Plugin::DynamicResources);
            }
            if !self.pre_filter_skips(p, pod, st) {
                called.push(p);
            }
        }
        if dra_index == Some(profile.filters.len()) && st.dra.is_some() {
            called.push(Plugin::DynamicResources);
        }
        let rejector = st.prefilter_reject.as_ref().map(|(q, _)| *q);
        let mut pre = Vec::with_capacity(profile.pre_filters.len());
        for &p in &profile.pre_filters {
            if !self.pre_filter_skips(p, pod, st) {
                pre.push(p);
            }
            if Some(p) == rejector {
                break;
            }
        }
        st.called_filters = called;
        st.pre_filter_evals = pre;
    }

    /// The Filter evaluations of a tally (see [`Evals`]).
    pub fn filter_evals(st: &PodState, tally: &FilterTally, evals: &mut Evals) {
        let mut acc = tally.passed;
        for &p in st.called_filters.iter().rev() {
            acc += tally.rejected[p as usize];
            evals.filter[p as usize] += acc;
        }
    }

    /// Count one node's verdict in `tally` (`filter_node`'s answer on `slot`): a node
    /// with nominated pods that count against the pod passed the first of its two
    /// passes when it passed, or when the second pass rejected it.
    #[inline]
    pub fn tally(
        &self,
        st: &PodState,
        slot: u32,
        verdict: Option<&Reject>,
        tally: &mut FilterTally,
    ) {
        match verdict {
            None => tally.passed += 1,
            Some(r) => tally.rejected[r.plugin as usize] += 1,
        }
        if self.nominated_on[slot as usize] != 0 {
            self.tally_nominated(st, slot, verdict, tally);
        }
    }

    #[inline(never)]
    fn tally_nominated(
        &self,
        st: &PodState,
        slot: u32,
        verdict: Option<&Reject>,
        tally: &mut FilterTally,
    ) {
        if self
            .nominated_against(slot, st.priority, &st.uid)
            .next()
            .is_none()
        {
            return; // one pass only
        }
        let first_passed = match verdict {
            None => true,
            // Both passes were one: the rejection was the first pass's.
            Some(_) if st.only_fit_sees_pods => false,
            Some(_) => self
                .filter_with_nominated(st, slot, &NOTHING_FREED)
                .is_none(),
        };
        if first_passed {
            tally.passed += 1;
        }
    }

    /// Recompute which Filters can reject the pod (after its state changed).
    pub fn refresh_active_filters(&self, profile: &Profile, st: &mut PodState) {
        let dra_index = profile
            .dynamic_resources_at
            .unwrap_or(profile.filters.len());
        let mut active = Vec::with_capacity(profile.filters.len());
        let mut dra_at = 0;
        for (i, &p) in profile.filters.iter().enumerate() {
            if self.filter_can_reject(p, st) {
                if i < dra_index {
                    dra_at += 1;
                }
                active.push(p);
            }
        }
        st.active_filters = active;
        st.dra_at = dra_at;
    }

    /// The message of a Filter error (`DETAIL_ERROR`) on `slot`.
    pub fn error_message(&self, st: &PodState, slot: u32, reject: &Reject) -> String {
        match reject.plugin {
            Plugin::NodeVolumeLimits => st
                .limits
                .as_ref()
                .map(|l| node_volume_limits::error_message(self, l, slot))
                .unwrap_or_default(),
            Plugin::VolumeBinding => st
                .binding
                .as_ref()
                .map(|b| volume_binding::error_message(self, b, slot))
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Whether Filter plugin `p` can reject any node for the pod of `st`.
    fn filter_can_reject(&self, p: Plugin, st: &PodState) -> bool {
        match p {
            Plugin::NodeUnschedulable => self.num_unschedulable > 0 && !st.tolerates_unschedulable,
            Plugin::NodeName => st.node_name.is_some(),
            Plugin::TaintToleration => self.num_hard_taints > 0,
            Plugin::NodeAffinity => {
                st.node_affinity.added_required.is_some() || !st.node_affinity.required.is_empty()
            }
            Plugin::NodePorts => !st.ports.is_empty(),
            Plugin::NodeResourcesFit => true,
            Plugin::PodTopologySpread => !st.spread.constraints.is_empty(),
            Plugin::InterPodAffinity => st.ipa.active,
            Plugin::VolumeRestrictions => st.restrictions.is_some(),
            Plugin::NodeVolumeLimits => st.limits.is_some(),
            Plugin::VolumeBinding => st.binding.is_some(),
            Plugin::VolumeZone => st.zone.is_some(),
            Plugin::NodeDeclaredFeatures => st.features.is_some(),
            Plugin::NodeResourcesBalancedAllocation
            | Plugin::ImageLocality
            | Plugin::DynamicResources => false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ipa_prefilter(
        &self,
        terms: CompiledAffinity,
        ns: u32,
        labels: &[(u32, u32)],
        affinity_entry: Option<usize>,
        anti_entries: &[usize],
        affinity_views: Option<Vec<DomainSummary>>,
        anti_views: Option<Vec<DomainSummary>>,
        existing_views: Option<Vec<ExistingDomains>>,
    ) -> IpaFilterState {
        let walk_existing = existing_views.is_none();
        let mut st = IpaFilterState {
            active: !terms.affinity_required.is_empty()
                || !terms.anti_required.is_empty()
                || self.anti_index.of(TermKind::RequiredAnti).next().is_some(),
            ..IpaFilterState::default()
        };
        let own_ns_labels: &[(u32, u32)] = self.namespace_labels(ns).unwrap_or(&[]);
        if let Some(existing) = existing_views {
            for (key, counts, nonzero) in existing {
                st.existing_anti_affinity_counts
                    .set_shared(key, counts, nonzero);
            }
        }
        for g in self.anti_index.of(TermKind::RequiredAnti) {
            if !walk_existing || !g.term.matches(ns, Some(own_ns_labels), labels) {
                continue;
            }
            for (&slot, &c) in &g.per_slot {
                if !self.has_node[slot as usize] {
                    continue;
                }
                let v = self.label(slot, g.term.topology_key);
                add_count(
                    &mut st.existing_anti_affinity_counts,
                    g.term.topology_key,
                    (v != 0).then_some(v),
                    c,
                );
            }
        }
        // Matching pods per node come from the count cache: its domain views, or a walk
        // over the nodes.
        if let Some(views) = affinity_views {
            for (t, v) in terms.affinity_required.iter().zip(views) {
                st.affinity_counts.set_view(t.topology_key, v);
            }
        } else if let Some(e) = affinity_entry {
            let counts = self.count_cache.counts(e);
            for &slot in &self.order {
                let c = counts[slot as usize];
                if c > 0 {
                    for t in &terms.affinity_required {
                        let v = self.label(slot, t.topology_key);
                        add_count(
                            &mut st.affinity_counts,
                            t.topology_key,
                            (v != 0).then_some(v),
                            c,
                        );
                    }
                }
            }
        }
        match anti_views {
            Some(views) => {
                for (t, v) in terms.anti_required.iter().zip(views) {
                    st.anti_affinity_counts.set_view(t.topology_key, v);
                }
            }
            None => {
                for (t, &e) in terms.anti_required.iter().zip(anti_entries) {
                    let counts = self.count_cache.counts(e);
                    for &slot in &self.order {
                        let c = counts[slot as usize];
                        if c > 0 {
                            let v = self.label(slot, t.topology_key);
                            add_count(
                                &mut st.anti_affinity_counts,
                                t.topology_key,
                                (v != 0).then_some(v),
                                c,
                            );
                        }
                    }
                }
            }
        }
        st.skipped = st.existing_anti_affinity_counts.is_empty()
            && terms.affinity_required.is_empty()
            && terms.anti_required.is_empty();
        st.self_matches_affinity = !terms.affinity_required.is_empty()
            && terms
                .affinity_required
                .iter()
                .all(|t| t.matches(ns, self.namespace_labels(ns), labels));
        st.terms = terms;
        st
    }

    /// Run every Filter of the profile on one node, stopping at the first rejection.
    #[inline]
    pub fn filter_node(&self, profile: &Profile, st: &PodState, slot: u32) -> Option<Reject> {
        self.filter_node_freed(profile, st, slot, &NOTHING_FREED)
    }

    /// `filter_node` as if the room `freed` were free too (preemption's dry run; valid
    /// only while the pod's active filters other than NodeResourcesFit do not look at
    /// the node's pods, see `preemption`).
    ///
    /// A node with nominated pods that count against the pod is filtered twice, as
    /// upstream's `RunFilterPluginsWithNominatedPods`: with those pods added (see
    /// `nominated`), then as it is; the first failure is the node's.
    #[inline]
    pub fn filter_node_freed(
        &self,
        _profile: &Profile,
        st: &PodState,
        slot: u32,
        freed: &Freed,
    ) -> Option<Reject> {
        let mut added = &NOTHING_FREED;
        let counted: Freed;
        if self.nominated_on[slot as usize] != 0 {
            if st.only_fit_sees_pods {
                // Both passes in one: the other filters answer alike with or without the
                // nominated pods, and Fit passing with them passes without them.
                let sum = &self.nominated_sum[slot as usize];
                if sum.min_priority >= st.priority && st.own_nomination != Some(slot) {
                    added = &sum.room; // every one of them counts
                } else {
                    let mut c = Freed::default();
                    for p in self.nominated_against(slot, st.priority, &st.uid) {
                        c.add(&p.requests, 1);
                    }
                    counted = c;
                    added = &counted;
                }
            } else if let Some(r) = self.filter_with_nominated(st, slot, freed) {
                return Some(r);
            }
        }
        let (before, after) = st
            .active_filters
            .split_at(st.dra_at.min(st.active_filters.len()));
        for &plugin in before {
            if let Some((unresolvable, detail)) = self.filter_plugin(plugin, st, slot, freed, added)
            {
                return Some(Reject {
                    plugin,
                    unresolvable,
                    detail,
                });
            }
        }
        if let Some(r) = st.dra.as_ref().and_then(|dra| dra.filter(self, slot)) {
            return Some(r);
        }
        for &plugin in after {
            if let Some((unresolvable, detail)) = self.filter_plugin(plugin, st, slot, freed, added)
            {
                return Some(Reject {
                    plugin,
                    unresolvable,
                    detail,
                });
            }
        }
        None
    }

    /// `plugins` (active Filters, DynamicResources not among them) in order on one node
    /// as it is, without nominated pods: the first rejection.
    #[inline]
    fn run_filters(&self, st: &PodState, slot: u32, plugins: &[Plugin]) -> Option<Reject> {
        for &plugin in plugins {
            if let Some((unresolvable, detail)) =
                self.filter_plugin(plugin, st, slot, &NOTHING_FREED, &NOTHING_FREED)
            {
                return Some(Reject {
                    plugin,
                    unresolvable,
                    detail,
                });
            }
        }
        None
    }

    /// One Filter plugin on one node: `None` when it passes, else `(unresolvable, detail)`.
    #[inline(always)]
    fn filter_plugin(
        &self,
        plugin: Plugin,
        st: &PodState,
        slot: u32,
        freed: &Freed,
        added: &Freed,
    ) -> Option<(bool, u64)> {
        match plugin {
            Plugin::NodeUnschedulable => (!node_unschedulable::filter(
                self.unschedulable[slot as usize],
                st.tolerates_unschedulable,
            ))
            .then_some((true, 0)),
            Plugin::NodeName => (!node_name::filter(st.node_name, slot)).then_some((true, 0)),
            Plugin::TaintToleration => {
                taint_toleration::filter(self, &st.taints, slot).map(|d| (true, d))
            }
            Plugin::NodeAffinity => {
                node_affinity::filter(self, &st.node_affinity, slot).map(|d| (true, d))
            }
            Plugin::NodePorts => (!st.ports.is_empty()
                && !node_ports::filter(self, &st.ports, self.bind_all_ip, slot))
            .then_some((false, 0)),
            Plugin::NodeResourcesFit => fit::filter(self, &st.fit, slot, freed, added),
            Plugin::PodTopologySpread => pts::filter(self, &st.spread, slot).map(|d| (d == 0, d)),
            Plugin::InterPodAffinity => ipa::filter(
                &st.ipa,
                |k| {
                    let v = self.label(slot, k);
                    (v != 0).then_some(v)
                },
                &self.node_labels[slot as usize],
            ),
            Plugin::VolumeRestrictions => st.restrictions.as_ref().and_then(|r| {
                volume_restrictions::filter(self, r, slot, std::iter::empty::<&PodRecord>())
            }),
            Plugin::NodeVolumeLimits => st.limits.as_ref().and_then(|l| {
                node_volume_limits::filter(self, l, slot, std::iter::empty::<&PodRecord>())
            }),
            Plugin::VolumeBinding => st
                .binding
                .as_ref()
                .and_then(|b| volume_binding::filter(self, b, slot)),
            Plugin::VolumeZone => st
                .zone
                .as_ref()
                .and_then(|z| volume_zone::filter(self, z, slot)),
            Plugin::NodeDeclaredFeatures => st.features.as_ref().and_then(|r| {
                (!ndf::filter(r, &self.declared_features[slot as usize])).then_some((true, 0))
            }),
            Plugin::NodeResourcesBalancedAllocation
            | Plugin::ImageLocality
            | Plugin::DynamicResources => None,
        }
    }

    /// The first pass of `filter_node_freed` on a node with nominated pods: every Filter
    /// with the nominated pods of equal or higher priority (other than the pod itself)
    /// added to the node and, through the plugins' `AddPod`, to the PreFilter state.
    /// `None` when it passes or no such pod is nominated there.
    #[inline(never)]
    fn filter_with_nominated(&self, st: &PodState, slot: u32, freed: &Freed) -> Option<Reject> {
        let added = self.nominated_against(slot, st.priority, &st.uid);
        added.clone().next()?;
        let node_label = |k| {
            let v = self.label(slot, k);
            (v != 0).then_some(v)
        };
        for (i, &plugin) in st.active_filters.iter().enumerate() {
            if i == st.dra_at {
                // DynamicResources' Filter at its place in the profile's order, as in
                // the second pass (it has no AddPod: the nominated pods do not change it).
                if let Some(r) = st.dra.as_ref().and_then(|dra| dra.filter(self, slot)) {
                    return Some(r);
                }
            }
            let rejected = match plugin {
                Plugin::NodeResourcesFit => {
                    let mut with = Freed::default();
                    for p in added.clone() {
                        with.add(&p.requests, 1);
                    }
                    fit::filter(self, &st.fit, slot, freed, &with)
                }
                Plugin::NodePorts => (!st.ports.is_empty()
                    && (!node_ports::filter(self, &st.ports, self.bind_all_ip, slot)
                        || self.ports_conflict(&st.ports, added.clone())))
                .then_some((false, 0)),
                Plugin::PodTopologySpread => pts::filter_with_pods(
                    self,
                    &st.spread,
                    slot,
                    st.namespace,
                    added.clone(),
                    &st.node_affinity.required,
                    &st.taints,
                )
                .map(|d| (d == 0, d)),
                Plugin::InterPodAffinity => ipa::filter_with_pods(
                    &st.ipa,
                    node_label,
                    &self.node_labels[slot as usize],
                    &ipa::Incoming {
                        namespace: st.namespace,
                        namespace_labels: self.namespace_labels(st.namespace).unwrap_or(&[]),
                        labels: &st.labels,
                    },
                    |ns| self.namespace_labels(ns),
                    added.clone(),
                ),
                Plugin::VolumeRestrictions => st
                    .restrictions
                    .as_ref()
                    .and_then(|r| volume_restrictions::filter(self, r, slot, added.clone())),
                Plugin::NodeVolumeLimits => st
                    .limits
                    .as_ref()
                    .and_then(|l| node_volume_limits::filter(self, l, slot, added.clone())),
                _ => self.filter_plugin(plugin, st, slot, freed, &NOTHING_FREED),
            };
            if let Some((unresolvable, detail)) = rejected {
                return Some(Reject {
                    plugin,
                    unresolvable,
                    detail,
                });
            }
        }
        if st.dra_at >= st.active_filters.len() {
            if let Some(r) = st.dra.as_ref().and_then(|dra| dra.filter(self, slot)) {
                return Some(r);
            }
        }
        None
    }

    /// The reason strings of a rejection, as upstream's status reasons.
    pub fn reasons(&self, st: &PodState, slot: u32, reject: &Reject) -> Vec<String> {
        if reject.detail == DETAIL_NOT_IN_PREFILTER_RESULT {
            let plugins = if st.absent_plugins.is_empty() {
                reject.plugin.name().to_string()
            } else {
                st.absent_plugins.join(" ")
            };
            return vec![format!("node(s) didn't satisfy plugin(s) [{plugins}]")];
        }
        if let Some((_, msg)) = &st.prefilter_reject {
            return vec![msg.clone()];
        }
        if reject.detail == DETAIL_ERROR {
            return vec![self.error_message(st, slot, reject)];
        }
        let one = |s: &str| vec![s.to_string()];
        match reject.plugin {
            Plugin::NodeUnschedulable => one(node_unschedulable::ERR_REASON_UNSCHEDULABLE),
            Plugin::NodeName => one(node_name::ERR_REASON),
            Plugin::TaintToleration => one(taint_toleration::ERR_REASON),
            Plugin::NodeAffinity => one(node_affinity::reason(reject.detail)),
            Plugin::NodePorts => one(node_ports::ERR_REASON),
            Plugin::NodeResourcesFit => fit::reasons(self, &st.fit, reject.detail),
            Plugin::PodTopologySpread => one(pts::reason(reject.detail)),
            Plugin::InterPodAffinity => one(ipa::reason(reject.detail)),
            Plugin::VolumeRestrictions => one(volume_restrictions::reason(reject.detail)),
            Plugin::NodeVolumeLimits => st
                .limits
                .as_ref()
                .map(|l| node_volume_limits::reasons(l, reject.detail))
                .unwrap_or_default(),
            Plugin::VolumeBinding => volume_binding::reasons(reject.detail),
            Plugin::VolumeZone => one(volume_zone::ERR_REASON_CONFLICT),
            Plugin::NodeDeclaredFeatures => one(ndf::ERR_REASON_UNSATISFIED),
            Plugin::DynamicResources => match &st.dra {
                Some(dra) => vec![dra.reason(reject.detail)],
                None => Vec::new(),
            },
            Plugin::NodeResourcesBalancedAllocation | Plugin::ImageLocality => Vec::new(),
        }
    }

    /// Weighted total score of every node in `feasible` (same order).
    /// Its PreScore and Score evaluations go to `evals`.
    pub fn score_nodes(
        &self,
        profile: &Profile,
        st: &PodState,
        feasible: &[u32],
        all: &[u32],
        evals: &mut Evals,
    ) -> Vec<i64> {
        self.score_nodes_reusing(profile, st, feasible, all, evals, None)
    }

    /// Which of the kept raw score columns (`reuse::score_column`) this attempt uses:
    /// the profile scores with the plugin and its PreScore does not skip.
    fn kept_columns(profile: &Profile, st: &PodState) -> [bool; SCORED] {
        [
            profile.has_score(Plugin::NodeResourcesFit),
            profile.has_score(Plugin::NodeResourcesBalancedAllocation)
                && st.balanced_score.is_some(),
            profile.has_score(Plugin::TaintToleration),
            profile.has_score(Plugin::NodeAffinity) && !st.node_affinity.preferred.is_empty(),
        ]
    }

    /// The raw scores of the kept columns `need` on one node, in one pass.
    #[inline]
    fn raw_row(
        &self,
        profile: &Profile,
        st: &PodState,
        need: &[bool; SCORED],
        slot: u32,
    ) -> [i64; SCORED] {
        let mut row = [0i64; SCORED];
        if need[0] {
            let strategy = &profile.fit.strategy;
            row[0] = fit::score_with(self, &st.fit_score, slot, |r| {
                fit::strategy_score(strategy, r)
            });
        }
        if need[1] {
            if let Some(bs) = &st.balanced_score {
                row[1] = fit::score_with(self, bs, slot, |r| {
                    balanced_allocation::score(r, &bs.resources)
                });
            }
        }
        if need[2] {
            row[2] = taint_toleration::score(self, &st.taints, slot);
        }
        if need[3] {
            row[3] = node_affinity::score(self, &st.node_affinity, slot);
        }
        row
    }

    /// The kept columns' raw scores of every node in `feasible` (same order), reusing
    /// and filling `entry` when given.
    fn raw_rows(
        &self,
        profile: &Profile,
        st: &PodState,
        feasible: &[u32],
        need: &[bool; SCORED],
        entry: Option<&mut Entry>,
    ) -> Vec<[i64; SCORED]> {
        let Some(entry) = entry else {
            return if feasible.len() >= PARALLEL_MIN_NODES {
                feasible
                    .par_iter()
                    .with_min_len(PARALLEL_CHUNK)
                    .map(|&s| self.raw_row(profile, st, need, s))
                    .collect()
            } else {
                feasible
                    .iter()
                    .map(|&s| self.raw_row(profile, st, need, s))
                    .collect()
            };
        };
        let mut rows = Vec::with_capacity(feasible.len());
        for &slot in feasible {
            let stamp = self.slot_stamp[slot as usize];
            let row = match entry.scores(slot, stamp) {
                Some(r) => *r,
                None => {
                    let r = self.raw_row(profile, st, need, slot);
                    entry.store_scores(slot, stamp, r);
                    r
                }
            };
            rows.push(row);
        }
        rows
    }

    /// `score_nodes`, reusing and keeping the raw scores of the plugins `reuse` covers
    /// in `entry` when given.
    fn score_nodes_reusing(
        &self,
        profile: &Profile,
        st: &PodState,
        feasible: &[u32],
        all: &[u32],
        evals: &mut Evals,
        entry: Option<&mut Entry>,
    ) -> Vec<i64> {
        let mut totals = vec![0i64; feasible.len()];
        let need = Self::kept_columns(profile, st);
        let rows = need
            .iter()
            .any(|&b| b)
            .then(|| self.raw_rows(profile, st, feasible, &need, entry));
        for &plugin in &profile.pre_scores {
            // A PreScore enabled without its Score: called all the same.
            if !profile.has_score(plugin)
                && self
                    .plugin_scores_or_skip(profile, st, plugin, feasible, all)
                    .is_some()
            {
                evals.pre_score[plugin as usize] += 1;
            }
        }
        for &(plugin, weight) in &profile.scores {
            let Some((_, normalized)) =
                self.plugin_scores_from(profile, st, plugin, feasible, all, rows.as_deref())
            else {
                continue; // upstream's PreScore returned Skip: its Score is not called
            };
            if profile.pre_scores.contains(&plugin) {
                evals.pre_score[plugin as usize] += 1;
            }
            evals.score[plugin as usize] += feasible.len() as u32;
            for (t, s) in totals.iter_mut().zip(normalized) {
                *t += s * weight;
            }
        }
        totals
    }

    /// One Score plugin's raw scores and scores after its NormalizeScore, for `feasible`.
    pub fn plugin_scores(
        &self,
        profile: &Profile,
        st: &PodState,
        plugin: Plugin,
        feasible: &[u32],
        all: &[u32],
    ) -> (Vec<i64>, Vec<i64>) {
        self.plugin_scores_or_skip(profile, st, plugin, feasible, all)
            .unwrap_or_else(|| (vec![0; feasible.len()], vec![0; feasible.len()]))
    }

    /// `plugin_scores`, or None when upstream's PreScore of the plugin returns Skip for
    /// the pod (every score is then 0 and the Score is not called).
    fn plugin_scores_or_skip(
        &self,
        profile: &Profile,
        st: &PodState,
        plugin: Plugin,
        feasible: &[u32],
        all: &[u32],
    ) -> Option<(Vec<i64>, Vec<i64>)> {
        self.plugin_scores_from(profile, st, plugin, feasible, all, None)
    }

    /// `plugin_scores_or_skip`, taking the raw scores of the plugins `reuse` covers from
    /// `rows` when given (see `raw_rows`; same skips, same normalization).
    fn plugin_scores_from(
        &self,
        profile: &Profile,
        st: &PodState,
        plugin: Plugin,
        feasible: &[u32],
        all: &[u32],
        rows: Option<&[[i64; SCORED]]>,
    ) -> Option<(Vec<i64>, Vec<i64>)> {
        let zeros = || Some((vec![0; feasible.len()], vec![0; feasible.len()]));
        let column = |c: usize| rows.map(|rows| rows.iter().map(|r| r[c]).collect::<Vec<i64>>());
        match plugin {
            Plugin::NodeResourcesFit => {
                let strategy = &profile.fit.strategy;
                let raw = column(0).unwrap_or_else(|| {
                    map_nodes(feasible, |slot| {
                        fit::score_with(self, &st.fit_score, slot, |r| {
                            fit::strategy_score(strategy, r)
                        })
                    })
                });
                Some((raw.clone(), raw))
            }
            Plugin::NodeResourcesBalancedAllocation => match &st.balanced_score {
                None => None,
                Some(bs) => {
                    let raw = column(1).unwrap_or_else(|| {
                        map_nodes(feasible, |slot| {
                            fit::score_with(self, bs, slot, |r| {
                                balanced_allocation::score(r, &bs.resources)
                            })
                        })
                    });
                    Some((raw.clone(), raw))
                }
            },
            Plugin::TaintToleration => {
                let raw = column(2).unwrap_or_else(|| {
                    map_nodes(feasible, |slot| {
                        taint_toleration::score(self, &st.taints, slot)
                    })
                });
                let mut norm = raw.clone();
                default_normalize(100, true, &mut norm);
                Some((raw, norm))
            }
            Plugin::NodeAffinity => {
                if st.node_affinity.preferred.is_empty() {
                    return None;
                }
                let raw = column(3).unwrap_or_else(|| {
                    map_nodes(feasible, |slot| {
                        node_affinity::score(self, &st.node_affinity, slot)
                    })
                });
                let mut norm = raw.clone();
                default_normalize(100, false, &mut norm);
                Some((raw, norm))
            }
            Plugin::ImageLocality => {
                if !st
                    .images
                    .images
                    .iter()
                    .any(|i| self.image_states.contains_key(i))
                {
                    // No node holds any of the pod's images: every score is 0.
                    return zeros();
                }
                let total = all.len();
                let raw = map_nodes(feasible, |slot| {
                    image_locality::score(self, &st.images, slot, total)
                });
                Some((raw.clone(), raw))
            }
            Plugin::PodTopologySpread => {
                match pts::score_all(
                    self,
                    &st.spread_score,
                    &st.spread_score_counts,
                    st.spread_require_all,
                    &st.node_affinity.required,
                    &st.taints,
                    all,
                    feasible,
                ) {
                    None => None,
                    Some((raw, ignored)) => {
                        let mut norm = raw.clone();
                        pts::normalize(&mut norm, &ignored);
                        Some((raw, norm))
                    }
                }
            }
            Plugin::InterPodAffinity => self.ipa_scores(profile, st, feasible, all),
            // Without StorageCapacityScoring (no shape) upstream has no scorer and
            // skips; with it, the PreScore never skips.
            Plugin::VolumeBinding if profile.volume_binding.shape.is_empty() => None,
            Plugin::VolumeBinding => match &st.binding {
                Some(b) => {
                    let args = &profile.volume_binding;
                    let raw =
                        map_nodes(feasible, |slot| volume_binding::score(self, b, args, slot));
                    Some((raw.clone(), raw))
                }
                None => zeros(),
            },
            Plugin::NodeUnschedulable
            | Plugin::NodeName
            | Plugin::NodePorts
            | Plugin::VolumeRestrictions
            | Plugin::NodeVolumeLimits
            | Plugin::VolumeZone
            | Plugin::NodeDeclaredFeatures
            | Plugin::DynamicResources => zeros(),
        }
    }

    fn ipa_scores(
        &self,
        profile: &Profile,
        st: &PodState,
        feasible: &[u32],
        all: &[u32],
    ) -> Option<(Vec<i64>, Vec<i64>)> {
        let terms = &st.ipa.terms;
        let args = &profile.inter_pod_affinity;
        let has_constraints =
            !terms.affinity_preferred.is_empty() || !terms.anti_preferred.is_empty();
        if args.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return None;
        }
        let incoming_ns_labels: &[(u32, u32)] = self.namespace_labels(st.namespace).unwrap_or(&[]);
        let mut topo: AHashMap<u32, AHashMap<u32, i64>> = AHashMap::new();
        let mut touched = false;
        let mut add = |key: u32, slot: u32, delta: i64| {
            let v = self.label(slot, key);
            if v != 0 {
                *topo.entry(key).or_default().entry(v).or_insert(0) += delta;
                touched = true;
            }
        };
        // The incoming pod's preferred terms: matching pods per node from the count cache.
        let signed = terms
            .affinity_preferred
            .iter()
            .map(|(w, t)| (*w, t))
            .chain(terms.anti_preferred.iter().map(|(w, t)| (-*w, t)));
        for ((w, t), &e) in signed.zip(&st.ipa_preferred_counts) {
            let counts = self.count_cache.counts(e);
            for &slot in all {
                let c = counts[slot as usize];
                if c > 0 {
                    add(t.topology_key, slot, w * c);
                }
            }
        }
        // Existing pods' own terms, grouped by term: each distinct term is matched once.
        for (kind, sign) in [
            (TermKind::RequiredAffinity, 1),
            (TermKind::PreferredAffinity, 1),
            (TermKind::PreferredAnti, -1),
        ] {
            if kind == TermKind::RequiredAffinity && args.hard_pod_affinity_weight <= 0 {
                continue;
            }
            for g in self.anti_index.of(kind) {
                if !g
                    .term
                    .matches(st.namespace, Some(incoming_ns_labels), &st.labels)
                {
                    continue;
                }
                let weight = if kind == TermKind::RequiredAffinity {
                    args.hard_pod_affinity_weight
                } else {
                    g.weight
                };
                for (&slot, &c) in &g.per_slot {
                    if self.has_node[slot as usize] {
                        add(g.term.topology_key, slot, sign * weight * c);
                    }
                }
            }
        }
        if !touched {
            return None; // no node has a topology score: PreScore's Skip
        }
        let raw: Vec<i64> = feasible
            .iter()
            .map(|&slot| {
                topo.iter()
                    .map(|(&k, vals)| {
                        let v = self.label(slot, k);
                        if v == 0 {
                            0
                        } else {
                            vals.get(&v).copied().unwrap_or(0)
                        }
                    })
                    .sum()
            })
            .collect();
        let mut norm = raw.clone();
        ipa::normalize(&mut norm);
        Some((raw, norm))
    }

    /// Filter the node at position `p` of `order` (wrapping from `start`): the slot,
    /// its verdict, and the verdict of the leading reused Filters to keep (when it was
    /// computed here rather than read from `kept`).
    #[inline(always)]
    fn verdict_at(
        &self,
        order: &[u32],
        start: usize,
        p: usize,
        profile: &Profile,
        st: &PodState,
        kept: Option<(&Entry, usize)>,
    ) -> (u32, Option<Reject>, Option<Option<Reject>>) {
        let n = order.len();
        let at = start + p;
        let slot = order[if at >= n { at - n } else { at }];
        if let Some((e, prefix)) = kept {
            // Without nominated pods on the node, `filter_node` is the active
            // Filters in order on the node as it is: the leading `prefix` of them
            // (whose verdict is kept), then the rest.
            if self.nominated_on[slot as usize] == 0 {
                let (lead, rest) = st.active_filters.split_at(prefix);
                return match e.verdict(slot, self.slot_stamp[slot as usize]) {
                    Some(Some(r)) => (slot, Some(r), None),
                    // PodTopologySpread alone after them (spreading pods): in place.
                    Some(None) if rest == [Plugin::PodTopologySpread] => (
                        slot,
                        pts::filter(self, &st.spread, slot).map(|detail| Reject {
                            plugin: Plugin::PodTopologySpread,
                            unresolvable: detail == 0,
                            detail,
                        }),
                        None,
                    ),
                    Some(None) => (slot, self.run_filters(st, slot, rest), None),
                    None => {
                        let v = self.run_filters(st, slot, lead);
                        let all = v.or_else(|| self.run_filters(st, slot, rest));
                        (slot, all, Some(v))
                    }
                };
            }
        }
        (slot, self.filter_node(profile, st, slot), None)
    }

    /// Filter the nodes at positions `range` of `order` (wrapping from `start`) in
    /// parallel.
    fn filter_wave(
        &self,
        order: &[u32],
        start: usize,
        range: std::ops::Range<usize>,
        profile: &Profile,
        st: &PodState,
        kept: Option<(&Entry, usize)>,
    ) -> Vec<(u32, Option<Reject>, Option<Option<Reject>>)> {
        range
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|p| self.verdict_at(order, start, p, profile, st, kept))
            .collect()
    }

    /// Take one node's verdict into the attempt (in examination order): keep the
    /// leading Filters' verdict, tally it, and collect the node as feasible or
    /// rejected. Rejections are collected only while no node is feasible (they are
    /// the diagnosis of an attempt that finds none, and dropped otherwise). True when
    /// the walk stops here: enough feasible nodes, or a Filter error.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn take_verdict(
        &self,
        st: &PodState,
        slot: u32,
        verdict: Option<Reject>,
        to_keep: Option<Option<Reject>>,
        entry: Option<&mut Entry>,
        tally: &mut FilterTally,
        feasible: &mut Vec<u32>,
        want: usize,
        out: &mut Outcome,
    ) -> bool {
        if let (Some(kept), Some(e)) = (to_keep, entry) {
            e.store_verdict(slot, self.slot_stamp[slot as usize], kept);
        }
        self.tally(st, slot, verdict.as_ref(), tally);
        match verdict {
            None => {
                feasible.push(slot);
                if feasible.len() == 1 {
                    out.failures.clear();
                }
                feasible.len() == want
            }
            Some(r) if r.detail == DETAIL_ERROR => {
                out.error = Some((slot, r));
                true
            }
            Some(r) => {
                if feasible.is_empty() {
                    out.failures.push((slot, r));
                }
                false
            }
        }
    }

    /// One scheduling attempt. `keep_scores` keeps every scored node's total (for
    /// diagnostics); the hot path passes false.
    ///
    /// A pod nominated to a node (`status.nominatedNodeName`, set after it preempted) is
    /// tried there first, as upstream's `evaluateNominatedNode`: when that node passes
    /// every Filter it is chosen without looking at other nodes or scoring, and the
    /// start index does not move. `use_nomination` false skips this (the caller runs
    /// filters of its own on the nominated node first).
    ///
    /// When the nominated node fails, its rejection stays in the diagnosis, as upstream's
    /// `evaluateNominatedNode` leaves it in the `NodeToStatus` it shares with
    /// `findNodesThatFitPod`: a nominated node that NodeAffinity's PreFilter result
    /// leaves out reports that rejection instead of the left-out status. And the
    /// rejecting plugin joins the unschedulable plugins, which is the very set the
    /// left-out nodes' message lists (`sets.List(unscheduledPlugins)`), so the message
    /// names it too ("node(s) didn't satisfy plugin(s) [NodeAffinity TaintToleration]").
    /// That looks like an upstream bug; ksched mirrors it.
    pub fn schedule(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        keep_scores: bool,
        use_nomination: bool,
    ) -> Outcome {
        self.schedule_within(pod, profile, keep_scores, use_nomination, None)
    }

    /// `schedule` restricted to `within` (slots in examination order): a pod group's
    /// placement, as upstream's `AssumePlacement`. Only those nodes are filtered, counted
    /// in `num_all_nodes` and sampled (the start index wraps over them); a nominated
    /// node outside them is not tried first. PreFilter and Score still see every node
    /// (upstream's plugins list the whole snapshot).
    pub fn schedule_within(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        keep_scores: bool,
        use_nomination: bool,
        within: Option<&[u32]>,
    ) -> Outcome {
        let mut st = self.prefilter(pod, profile);
        let num_all_nodes = within.map_or_else(|| self.num_nodes(), <[u32]>::len);
        let mut nominated_failure: Option<(u32, Reject)> = None;
        let mut evals = Evals::default();
        if self.num_nodes() > 0 {
            // Without nodes upstream fails before PreFilter ("no nodes available").
            for &p in &st.pre_filter_evals {
                evals.pre_filter[p as usize] += 1;
            }
        }
        if use_nomination {
            let verdict = self.evaluate_nominated_node(pod, profile, &mut st, within);
            if let Some((slot, r)) = &verdict {
                let mut tally = FilterTally::default();
                self.tally(&st, *slot, r.as_ref(), &mut tally);
                Self::filter_evals(&st, &tally, &mut evals);
            }
            match verdict {
                Some((slot, None)) => {
                    return Outcome {
                        chosen: Some(slot),
                        evaluated_nodes: 1,
                        feasible_nodes: 1,
                        num_all_nodes,
                        evals,
                        ..Outcome::default()
                    }
                }
                // A Filter error on the nominated node fails the attempt (upstream's
                // evaluateNominatedNode returns findNodesThatPassFilters' error).
                Some((slot, Some(r))) if r.detail == DETAIL_ERROR => {
                    return Outcome {
                        evaluated_nodes: 1,
                        num_all_nodes,
                        error: Some((slot, r)),
                        state: Some(st),
                        evals,
                        ..Outcome::default()
                    };
                }
                Some((slot, Some(r))) => nominated_failure = Some((slot, r)),
                None => {}
            }
        }
        self.ensure_order();
        let order = std::mem::take(&mut self.order);
        let mut entry = Self::reuse_key(pod, profile, &st)
            .filter(|_| self.reuse_results)
            .map(|k| {
                let cap = self.capacity();
                self.reuse.take(k, cap)
            });
        let mut out = self.schedule_with(
            within.unwrap_or(&order),
            &order,
            profile,
            &st,
            keep_scores,
            nominated_failure,
            entry.as_mut(),
        );
        if let Some(e) = entry {
            self.reuse.put(e);
        }
        out.narrowed = st.allowed.is_some();
        out.evals.add(&evals);
        self.order = order;
        if out.chosen.is_none() {
            out.state = Some(st);
        }
        out
    }

    /// The key of the per-node results this attempt may reuse and keep (see `reuse`),
    /// `None` when it may not: the pod names its node, carries volume kernel requests,
    /// requires declared features, runs DynamicResources or a PreFilter rejected it.
    fn reuse_key(pod: &CompiledPod, profile: &Profile, st: &PodState) -> Option<reuse::Key> {
        if !pod.node_name.is_empty()
            || !pod.kernel.is_empty()
            || st.dra.is_some()
            || st.features.is_some()
            || st.prefilter_reject.is_some()
            || st.fit_score.dra.is_some()
            || st.balanced_score.as_ref().is_some_and(|b| b.dra.is_some())
        {
            return None;
        }
        // Every field of the pod the reused plugins read (their PreFilter/PreScore
        // state is built from these and the profile alone), compared in full.
        let pod_key = format!(
            "{:?}|{:?}|{}|{}|{:?}|{}|{:?}|{:?}|{:?}|{:?}|{:?}",
            pod.requests,
            pod.fit_score_requests,
            pod.non_zero_cpu,
            pod.non_zero_memory,
            pod.tolerations,
            pod.priority,
            pod.node_selector,
            pod.node_affinity,
            pod.host_ports,
            pod.required_features,
            pod.node_name,
        );
        Some(reuse::Key {
            profile: profile.id,
            active: st.active_filters.clone(),
            pod: pod_key,
        })
    }

    /// Upstream `evaluateNominatedNode`: the pod's nominated node (when it is a node of
    /// the snapshot, within the placement if any, and no PreFilter rejected the pod) and
    /// its Filter verdict. A rejection names its plugin in `st.absent_plugins` too (see
    /// [`Snapshot::schedule`]), which also gets NodeAffinity when its PreFilter result
    /// narrowed the nodes.
    fn evaluate_nominated_node(
        &self,
        pod: &CompiledPod,
        profile: &Profile,
        st: &mut PodState,
        within: Option<&[u32]>,
    ) -> Option<(u32, Option<Reject>)> {
        let mut verdict = None;
        if st.prefilter_reject.is_none() && !pod.nominated_node_name.is_empty() {
            verdict = self
                .slot_of(&pod.nominated_node_name)
                .filter(|&s| self.has_node[s as usize])
                .filter(|s| within.is_none_or(|w| w.contains(s)))
                .map(|slot| (slot, self.filter_node(profile, st, slot)));
        }
        if st.allowed.is_some() {
            let mut plugins = vec![Plugin::NodeAffinity.name()];
            if let Some((_, Some(r))) = &verdict {
                plugins.push(r.plugin.name());
            }
            plugins.sort_unstable();
            plugins.dedup();
            st.absent_plugins = plugins;
        }
        verdict
    }

    /// Filter `all` (from the start index, with sampling) and score the feasible nodes;
    /// `score_all` is every node of the snapshot, which scoring reads (`all` itself
    /// unless a placement restricts the attempt).
    #[allow(clippy::too_many_arguments)]
    fn schedule_with(
        &mut self,
        all: &[u32],
        score_all: &[u32],
        profile: &Profile,
        st: &PodState,
        keep_scores: bool,
        nominated_failure: Option<(u32, Reject)>,
        mut entry: Option<&mut Entry>,
    ) -> Outcome {
        let mut out = Outcome {
            num_all_nodes: all.len(),
            ..Outcome::default()
        };
        if all.is_empty() {
            return out;
        }
        if let Some((plugin, _)) = &st.prefilter_reject {
            out.failures = all
                .iter()
                .map(|&slot| {
                    (
                        slot,
                        Reject {
                            plugin: *plugin,
                            unresolvable: true,
                            detail: 0,
                        },
                    )
                })
                .collect();
            return out;
        }
        let restricted: Vec<u32>;
        let order: &[u32] = match &st.allowed {
            Some(allowed) => {
                restricted = all
                    .iter()
                    .copied()
                    .filter(|s| allowed.contains(s))
                    .collect();
                &restricted
            }
            None => all,
        };
        let n = order.len();
        let mut feasible: Vec<u32> = Vec::new();
        let mut processed = 0;
        let mut tally = FilterTally::default();
        if n > 0 {
            let want = num_feasible_nodes_to_find(n, profile.percentage_of_nodes_to_score);
            let start = self.next_start % n;
            feasible.reserve(want.min(n));
            processed = n;
            // The verdict of the leading active Filters whose verdicts are pure functions
            // of the pod and the node (see `reuse`) is reused; the Filters after them run
            // on the nodes that verdict passes.
            let prefix = if entry.is_some() && st.dra.is_none() {
                st.active_filters
                    .iter()
                    .take_while(|&&p| reuse::filter_reusable(p))
                    .count()
            } else {
                0
            };
            let reuse_filters = prefix > 0;
            let mut pos = 0;
            'waves: while pos < n {
                let need = want - feasible.len();
                // Size the wave by the feasibility seen so far, so a mostly-full cluster
                // is not walked in many small steps.
                let estimate = if feasible.is_empty() {
                    // Nothing feasible yet: double the ground covered (a full cluster
                    // is then walked in a few parallel waves, not many small ones).
                    need.max(pos)
                } else {
                    need * pos / feasible.len()
                };
                let wave = estimate.max(MIN_WAVE).min(n - pos);
                if feasible.is_empty() && pos > 0 && out.failures.capacity() < n {
                    // Likely a pod that fits nowhere: make room for every rejection once.
                    out.failures.reserve(n - out.failures.len());
                }
                if wave >= PARALLEL_MIN_WAVE {
                    let kept = entry
                        .as_deref()
                        .filter(|_| reuse_filters)
                        .map(|e| (e, prefix));
                    let verdicts =
                        self.filter_wave(order, start, pos..pos + wave, profile, st, kept);
                    for (off, (slot, verdict, to_keep)) in verdicts.into_iter().enumerate() {
                        if self.take_verdict(
                            st,
                            slot,
                            verdict,
                            to_keep,
                            entry.as_deref_mut(),
                            &mut tally,
                            &mut feasible,
                            want,
                            &mut out,
                        ) {
                            processed = pos + off + 1;
                            break 'waves;
                        }
                    }
                } else {
                    // A small wave in place: no list of verdicts in between.
                    for p in pos..pos + wave {
                        let kept = entry
                            .as_deref()
                            .filter(|_| reuse_filters)
                            .map(|e| (e, prefix));
                        let (slot, verdict, to_keep) =
                            self.verdict_at(order, start, p, profile, st, kept);
                        if self.take_verdict(
                            st,
                            slot,
                            verdict,
                            to_keep,
                            entry.as_deref_mut(),
                            &mut tally,
                            &mut feasible,
                            want,
                            &mut out,
                        ) {
                            processed = p + 1;
                            break 'waves;
                        }
                    }
                }
                pos += wave;
            }
            self.next_start = (start + processed) % n;
        }
        out.evaluated_nodes = processed;
        out.feasible_nodes = feasible.len();
        Self::filter_evals(st, &tally, &mut out.evals);
        if out.error.is_some() {
            out.failures.clear();
            return out;
        }

        match feasible.len() {
            0 => {
                if st.allowed.is_some() {
                    for &slot in all {
                        if !order.contains(&slot) {
                            let reject = match nominated_failure {
                                // Evaluated first as the nominated node: its own status.
                                Some((nominated, r)) if nominated == slot => r,
                                _ => Reject {
                                    plugin: Plugin::NodeAffinity,
                                    unresolvable: true,
                                    detail: DETAIL_NOT_IN_PREFILTER_RESULT,
                                },
                            };
                            out.failures.push((slot, reject));
                        }
                    }
                }
                return out;
            }
            1 => {
                out.chosen = Some(feasible[0]);
                out.failures.clear();
                return out;
            }
            _ => {}
        }
        out.failures.clear();
        let totals =
            self.score_nodes_reusing(profile, st, &feasible, score_all, &mut out.evals, entry);
        out.evals.scored = feasible.len() as u32;
        out.chosen = Some(self.select_host(&feasible, &totals));
        if keep_scores {
            let mut scored: Vec<(u32, i64)> = feasible.iter().copied().zip(totals).collect();
            scored.sort_by_key(|&(_, total)| std::cmp::Reverse(total));
            out.scores = scored;
        }
        out
    }

    /// Every node's Filter outcome and, for the feasible ones, every Score plugin's raw
    /// and normalized score and the weighted total. No sampling; the snapshot's start
    /// index is not moved.
    pub fn explain(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
    ) -> (Vec<NodeExplain>, PodState) {
        let mut st = self.prefilter(pod, profile);
        // The nominated node is examined whatever the PreFilter result (as the cycle
        // does first), so a left-out nominated node reports its own verdict.
        let nominated = match self.evaluate_nominated_node(pod, profile, &mut st, None) {
            Some((slot, Some(_))) => Some(slot),
            _ => None,
        };
        self.ensure_order();
        let all = self.order.clone();
        let mut rows: Vec<NodeExplain> = all
            .iter()
            .map(|&slot| {
                let reject = if let Some((plugin, _)) = &st.prefilter_reject {
                    Some(Reject {
                        plugin: *plugin,
                        unresolvable: true,
                        detail: 0,
                    })
                } else if nominated == Some(slot) {
                    self.filter_node(profile, &st, slot)
                } else if st.allowed.as_ref().is_some_and(|a| !a.contains(&slot)) {
                    Some(Reject {
                        plugin: Plugin::NodeAffinity,
                        unresolvable: true,
                        detail: DETAIL_NOT_IN_PREFILTER_RESULT,
                    })
                } else {
                    self.filter_node(profile, &st, slot)
                };
                NodeExplain {
                    slot,
                    reject,
                    scores: Vec::new(),
                    total: 0,
                }
            })
            .collect();
        let feasible: Vec<u32> = rows
            .iter()
            .filter(|r| r.reject.is_none())
            .map(|r| r.slot)
            .collect();
        if !feasible.is_empty() {
            let mut by_slot: AHashMap<u32, usize> = AHashMap::new();
            for (i, r) in rows.iter().enumerate() {
                by_slot.insert(r.slot, i);
            }
            for &(plugin, weight) in &profile.scores {
                let (raw, norm) = self.plugin_scores(profile, &st, plugin, &feasible, &all);
                for (k, &slot) in feasible.iter().enumerate() {
                    let row = &mut rows[by_slot[&slot]];
                    row.scores.push((plugin, raw[k], norm[k]));
                    row.total += norm[k] * weight;
                }
            }
        }
        (rows, st)
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
