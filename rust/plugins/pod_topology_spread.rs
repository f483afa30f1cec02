//! PodTopologySpread: spread matching pods evenly across topology domains.
//!
//! Constraints come from the pod (`whenUnsatisfiable: DoNotSchedule` for Filter,
//! `ScheduleAnyway` for Score) or, when the pod has none, from the plugin's default
//! constraints: the System defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
//! or a configured List, with the selector of the Services/controllers the pod belongs
//! to (no such selector: no default constraints).
//!
//! Filter (PreFilter computes per-domain counts once): a node is counted when it has every
//! constraint's topology key and passes the constraint's node inclusion policies
//! (nodeAffinityPolicy Honor by default, nodeTaintsPolicy Ignore by default); the count of
//! a domain is the number of pods in the incoming pod's namespace, not terminating, that
//! match the constraint's selector (with matchLabelKeys merged). A node fails when it lacks
//! the topology key ("... (missing required label)", UnschedulableAndUnresolvable) or when
//! `count(domain) + selfMatch - globalMin > maxSkew` (Unschedulable); the global minimum is
//! 0 when fewer than minDomains domains exist.
//!
//! The per-domain counts, domains and two smallest counts come from the count cache's
//! domain views (`snapshot::counts`), kept up to date as pods and nodes change, when
//! every constraint has a selector and includes every node for the pod
//! ([`includes_every_node`]: no required node affinity or selector under
//! nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore); otherwise PreFilter sums them
//! over the nodes. Either way they are the same. Filter, called on most nodes of an
//! attempt, reads per constraint one label column and one count against a threshold
//! fixed at PreFilter (`count > maxSkew + minMatch − selfMatch`).
//!
//! Score: per constraint, `count × log(domains + 2) + (maxSkew − 1)` summed and rounded,
//! where counts cover the domains of the feasible nodes (hostname: the node's own pods);
//! nodes missing a required key are ignored (score 0); NormalizeScore maps
//! `100 × (max + min − s) / max`.

use std::sync::Arc;

use ahash::AHashMap;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::node_affinity::RequiredNodeAffinity;
use super::taint::Effect;
use super::taint_toleration::TaintState;
use crate::args::{self, get};
use crate::selector::{label_value, LabelSelectorSpec, SelOp, Selector};
use crate::snapshot::counts::{DomainSummary, PodPredicate};
use crate::snapshot::{PodRecord, Snapshot};

pub const NAME: &str = "PodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

/// A `v1.TopologySpreadConstraint` with strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadConstraintSpec {
    pub max_skew: i64,
    pub topology_key: String,
    pub when_unsatisfiable: Unsatisfiable,
    pub selector: Option<LabelSelectorSpec>,
    pub min_domains: Option<i64>,
    pub node_affinity_honor: Option<bool>,
    pub node_taints_honor: Option<bool>,
    pub match_label_keys: Vec<String>,
}

fn policy(d: &Bound<'_, PyDict>, key: &str, path: &str) -> PyResult<Option<bool>> {
    match get(d, key)? {
        None => Ok(None),
        Some(v) => match args::as_str(&v, &format!("{path}.{key}"))?.as_str() {
            "Honor" => Ok(Some(true)),
            "Ignore" => Ok(Some(false)),
            other => Err(args::err(
                &format!("{path}.{key}"),
                format!("unsupported value {other:?}: must be Honor or Ignore"),
            )),
        },
    }
}

impl SpreadConstraintSpec {
    pub fn parse(v: &Bound<'_, PyAny>, path: &str, selector_allowed: bool) -> PyResult<Self> {
        let d = args::as_dict(v, path)?;
        let max_skew = match get(&d, "maxSkew")? {
            Some(m) => args::as_i64(&m, &format!("{path}.maxSkew"))?,
            None => return Err(args::err(&format!("{path}.maxSkew"), "is required")),
        };
        if max_skew <= 0 {
            return Err(args::err(
                &format!("{path}.maxSkew"),
                format!("must be greater than zero (got {max_skew})"),
            ));
        }
        let topology_key = match get(&d, "topologyKey")? {
            Some(k) => args::as_str(&k, &format!("{path}.topologyKey"))?,
            None => String::new(),
        };
        if topology_key.is_empty() {
            return Err(args::err(
                &format!("{path}.topologyKey"),
                "can not be empty",
            ));
        }
        let when_unsatisfiable = match get(&d, "whenUnsatisfiable")? {
            Some(w) => match args::as_str(&w, &format!("{path}.whenUnsatisfiable"))?.as_str() {
                "DoNotSchedule" => Unsatisfiable::DoNotSchedule,
                "ScheduleAnyway" => Unsatisfiable::ScheduleAnyway,
                other => {
                    return Err(args::err(
                        &format!("{path}.whenUnsatisfiable"),
                        format!("unsupported value {other:?}"),
                    ))
                }
            },
            None => {
                return Err(args::err(
                    &format!("{path}.whenUnsatisfiable"),
                    "is required",
                ))
            }
        };
        let selector = if selector_allowed {
            LabelSelectorSpec::parse_opt(&d, "labelSelector", path)?
        } else {
            None
        };
        let min_domains = match get(&d, "minDomains")? {
            Some(m) => Some(args::as_i64(&m, &format!("{path}.minDomains"))?),
            None => None,
        };
        Ok(SpreadConstraintSpec {
            max_skew,
            topology_key,
            when_unsatisfiable,
            selector,
            min_domains,
            node_affinity_honor: policy(&d, "nodeAffinityPolicy", path)?,
            node_taints_honor: policy(&d, "nodeTaintsPolicy", path)?,
            match_label_keys: args::str_list(&d, "matchLabelKeys", path)?,
        })
    }

    pub fn parse_list(v: &Bound<'_, PyAny>, path: &str) -> PyResult<Vec<Self>> {
        let list = args::as_list(v, path)?;
        list.iter()
            .enumerate()
            .map(|(i, c)| Self::parse(&c, &format!("{path}[{i}]"), true))
            .collect()
    }
}

/// `PodTopologySpreadArgs`.
#[derive(Clone, Debug)]
pub struct SpreadArgs {
    pub default_constraints: Vec<SpreadConstraintSpec>,
    pub system_defaulted: bool,
}

impl Default for SpreadArgs {
    fn default() -> Self {
        SpreadArgs {
            default_constraints: system_default_constraints(),
            system_defaulted: true,
        }
    }
}

fn system_default_constraints() -> Vec<SpreadConstraintSpec> {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
        .into_iter()
        .map(|(key, skew)| SpreadConstraintSpec {
            max_skew: skew,
            topology_key: key.to_string(),
            when_unsatisfiable: Unsatisfiable::ScheduleAnyway,
            selector: None,
            min_domains: None,
            node_affinity_honor: None,
            node_taints_honor: None,
            match_label_keys: Vec::new(),
        })
        .collect()
}

impl SpreadArgs {
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<SpreadArgs> {
        let path = "PodTopologySpreadArgs";
        let defaulting = match get(d, "defaultingType")? {
            Some(t) => args::as_str(&t, &format!("{path}.defaultingType"))?,
            None => "System".to_string(),
        };
        match defaulting.as_str() {
            "System" => Ok(SpreadArgs::default()),
            "List" => {
                let mut defaults = Vec::new();
                if let Some(list) = get(d, "defaultConstraints")? {
                    let list = args::as_list(&list, &format!("{path}.defaultConstraints"))?;
                    for (i, c) in list.iter().enumerate() {
                        defaults.push(SpreadConstraintSpec::parse(
                            &c,
                            &format!("{path}.defaultConstraints[{i}]"),
                            false,
                        )?);
                    }
                }
                Ok(SpreadArgs {
                    default_constraints: defaults,
                    system_defaulted: false,
                })
            }
            other => Err(args::err(
                &format!("{path}.defaultingType"),
                format!("unsupported value {other:?}: must be System or List"),
            )),
        }
    }
}

/// A compiled constraint.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub max_skew: i64,
    pub key: u32,
    pub key_is_hostname: bool,
    pub selector: Selector,
    pub min_domains: i64,
    pub affinity_honor: bool,
    pub taints_honor: bool,
}

/// Constraints of the pod for `action`: its own, or the defaults when it has none.
pub fn constraints_for(
    snap: &mut Snapshot,
    own: &[SpreadConstraintSpec],
    default_selector: Option<&LabelSelectorSpec>,
    pod_labels: &[(u32, u32)],
    args: &SpreadArgs,
    action: Unsatisfiable,
) -> Vec<Constraint> {
    let hostname = snap.interner.intern(LABEL_HOSTNAME);
    let mut out = Vec::new();
    if !own.is_empty() {
        for c in own.iter().filter(|c| c.when_unsatisfiable == action) {
            let mut selector = Selector::compile(c.selector.as_ref(), &mut snap.interner);
            for k in &c.match_label_keys {
                let kid = snap.interner.intern(k);
                if let Some(v) = label_value(pod_labels, kid) {
                    selector.push(kid, SelOp::In, v);
                }
            }
            let key = snap.interner.intern(&c.topology_key);
            out.push(Constraint {
                max_skew: c.max_skew,
                key,
                key_is_hostname: key == hostname,
                selector,
                min_domains: c.min_domains.unwrap_or(1),
                affinity_honor: c.node_affinity_honor.unwrap_or(true),
                taints_honor: c.node_taints_honor.unwrap_or(false),
            });
        }
        return out;
    }
    let Some(sel) = default_selector else {
        return out;
    };
    let selector = Selector::compile(Some(sel), &mut snap.interner);
    if selector.is_empty() {
        return out;
    }
    for c in args
        .default_constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
    {
        let key = snap.interner.intern(&c.topology_key);
        out.push(Constraint {
            max_skew: c.max_skew,
            key,
            key_is_hostname: key == hostname,
            selector: selector.clone(),
            min_domains: c.min_domains.unwrap_or(1),
            affinity_honor: c.node_affinity_honor.unwrap_or(true),
            taints_honor: c.node_taints_honor.unwrap_or(false),
        });
    }
    out
}

/// Whether `slot` passes a constraint's node inclusion policies.
fn included(
    snap: &Snapshot,
    c: &Constraint,
    slot: u32,
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
) -> bool {
    if c.affinity_honor && !affinity.matches(snap, slot) {
        return false;
    }
    if c.taints_honor {
        let untolerated = snap.taints[slot as usize].iter().any(|t| {
            t.effect != Effect::PreferNoSchedule
                && !taints.tolerations.iter().any(|tol| tol.tolerates(t))
        });
        if untolerated {
            return false;
        }
    }
    true
}

fn has_all_keys(snap: &Snapshot, constraints: &[Constraint], slot: u32) -> bool {
    constraints.iter().all(|c| snap.label(slot, c.key) != 0)
}

/// Matching pods per topology domain, as a dense array over value ids (hashing
/// thousands of hostname domains per attempt was the hot spot), shared with the count
/// cache's domain view it came from (see `snapshot::counts`) until changed here. A
/// count may go below zero: upstream's RemovePod takes away pods its PreFilter never
/// counted (see [`remove_uncounted`]).
#[derive(Clone, Debug, Default)]
pub struct DomainCounts {
    /// `counts[value id]`, [`NO_DOMAIN`] where the domain does not exist (or beyond).
    counts: Arc<Vec<i64>>,
    domains: usize,
}

/// The count of a domain that does not exist.
pub const NO_DOMAIN: i64 = i64::MIN;

impl DomainCounts {
    fn shared(counts: Arc<Vec<i64>>, domains: usize) -> Self {
        DomainCounts { counts, domains }
    }

    #[inline]
    fn add(&mut self, v: u32, n: i64) {
        let counts = Arc::make_mut(&mut self.counts);
        if v as usize >= counts.len() {
            counts.resize(v as usize + 1, NO_DOMAIN);
        }
        let c = &mut counts[v as usize];
        if *c == NO_DOMAIN {
            *c = 0;
            self.domains += 1;
        }
        *c += n;
    }

    #[inline]
    pub fn get(&self, v: u32) -> i64 {
        match self.counts.get(v as usize).copied() {
            None | Some(NO_DOMAIN) => 0,
            Some(c) => c,
        }
    }

    pub fn len(&self) -> usize {
        self.domains
    }

    pub fn is_empty(&self) -> bool {
        self.domains == 0
    }

    /// Every existing domain's value id and count, in value id order (for tests).
    pub fn domains(&self) -> Vec<(u32, i64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != NO_DOMAIN)
            .map(|(v, &c)| (v as u32, c))
            .collect()
    }

    /// The smallest and second smallest counts over the domains (equal when two
    /// domains share the minimum), `None` for what does not exist.
    fn two_smallest(&self) -> (Option<i64>, Option<i64>) {
        let (mut first, mut second) = (i64::MAX, i64::MAX);
        for &c in self.counts.iter() {
            if c == NO_DOMAIN {
                continue;
            }
            if c < first {
                second = first;
                first = c;
            } else if c < second {
                second = c;
            }
        }
        let some = |v: i64| (v != i64::MAX).then_some(v);
        (some(first), some(second))
    }
}

/// The per-node count cache entry of each constraint's selector (`None` for an empty or
/// nil selector, which counts no pod, as upstream's `countPodsMatchSelector`).
pub fn count_entries(
    snap: &mut Snapshot,
    constraints: &[Constraint],
    ns: u32,
) -> Vec<Option<usize>> {
    constraints
        .iter()
        .map(|c| {
            if c.selector.is_empty() || c.selector.is_nothing() {
                None
            } else {
                Some(snap.count_entry(PodPredicate::Spread {
                    ns,
                    selector: c.selector.clone(),
                }))
            }
        })
        .collect()
}

#[inline]
fn node_count(snap: &Snapshot, entry: Option<usize>, slot: u32) -> i64 {
    entry.map_or(0, |e| snap.count_cache.counts(e)[slot as usize])
}

/// Filter state.
#[derive(Clone, Debug, Default)]
pub struct SpreadFilterState {
    pub constraints: Vec<Constraint>,
    /// Per constraint: matching pods per domain.
    pub domain_counts: Vec<DomainCounts>,
    /// Per constraint: the minimum over domains (0 below minDomains).
    pub min_match: Vec<i64>,
    /// Per constraint: the second smallest count over domains (the minimum again when
    /// two domains share it; `i32::MAX` with a single domain): what the minimum becomes
    /// when pods are added to the only domain at the minimum (`filter_with_pods`).
    pub second_match: Vec<i64>,
    /// Per constraint: whether the incoming pod matches its own selector.
    pub self_match: Vec<i64>,
    /// Per constraint, what [`filter`] reads on every node: the label column of its
    /// key (when the key had one at PreFilter) and the largest count its domain may
    /// hold, `maxSkew + min_match - self_match`.
    checks: Vec<Check>,
}

#[derive(Clone, Copy, Debug)]
struct Check {
    key: u32,
    col: Option<usize>,
    most: i64,
}

impl SpreadFilterState {
    /// Derive [`Check`]s from the constraints and minima (after either changes).
    fn refresh_checks(&mut self, snap: &Snapshot) {
        self.checks = self
            .constraints
            .iter()
            .enumerate()
            .map(|(i, c)| Check {
                key: c.key,
                col: snap.label_index.get(&c.key).copied(),
                most: c.max_skew + self.min_match[i] - self.self_match[i],
            })
            .collect();
    }
}

/// Whether constraint `c`'s node inclusion policies include every node for the pod
/// (nodeAffinityPolicy Honor with no required node affinity or selector, and
/// nodeTaintsPolicy Ignore): its domains are then the same for every such pod, which
/// the count cache's domain views keep (see `snapshot::counts`).
pub fn includes_every_node(c: &Constraint, affinity: &RequiredNodeAffinity) -> bool {
    (!c.affinity_honor || affinity.is_empty()) && !c.taints_honor
}

/// The sorted distinct topology keys of `constraints`: a node counts in any of their
/// domains only when it carries all of them.
pub fn required_keys(constraints: &[Constraint]) -> Vec<u32> {
    let mut keys: Vec<u32> = constraints.iter().map(|c| c.key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// A domain set's smallest and second smallest counts (see [`DomainCounts::two_smallest`]).
type TwoSmallest = (Option<i64>, Option<i64>);

/// PreFilter. `views` are the constraints' per-domain counts kept by the count cache
/// (one per constraint, when every constraint can use one); without them the counts
/// are summed over `nodes`, with the same result.
#[allow(clippy::too_many_arguments)]
pub fn prefilter(
    snap: &Snapshot,
    constraints: Vec<Constraint>,
    entries: &[Option<usize>],
    views: Option<Vec<DomainSummary>>,
    pod_labels: &[(u32, u32)],
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
    nodes: &[u32],
) -> SpreadFilterState {
    if constraints.is_empty() {
        return SpreadFilterState::default();
    }
    let self_match = constraints
        .iter()
        .map(|c| i64::from(c.selector.matches(pod_labels)))
        .collect();
    // Per constraint: the domains' counts and their two smallest, kept or summed.
    let (domain_counts, smallest): (Vec<DomainCounts>, Vec<TwoSmallest>) = match views {
        Some(views) => {
            debug_assert_eq!(views.len(), constraints.len());
            views
                .into_iter()
                .map(|v| {
                    (
                        DomainCounts::shared(v.counts, v.domains),
                        (v.first, v.second),
                    )
                })
                .unzip()
        }
        None => {
            let counts = summed_domain_counts(snap, &constraints, entries, affinity, taints, nodes);
            let smallest = counts.iter().map(DomainCounts::two_smallest).collect();
            (counts, smallest)
        }
    };
    let min_match = constraints
        .iter()
        .zip(&domain_counts)
        .zip(&smallest)
        .map(|((c, dc), &(first, _))| {
            if (dc.len() as i64) < c.min_domains {
                0
            } else {
                first.unwrap_or(i32::MAX as i64)
            }
        })
        .collect();
    let second_match = smallest
        .iter()
        .map(|&(_, second)| second.unwrap_or(i32::MAX as i64))
        .collect();
    let mut st = SpreadFilterState {
        constraints,
        domain_counts,
        min_match,
        second_match,
        self_match,
        checks: Vec::new(),
    };
    st.refresh_checks(snap);
    st
}

/// The constraints' matching pods per domain, summed over `nodes` (the PreFilter's walk
/// when the count cache keeps no domain view for them).
fn summed_domain_counts(
    snap: &Snapshot,
    constraints: &[Constraint],
    entries: &[Option<usize>],
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
    nodes: &[u32],
) -> Vec<DomainCounts> {
    let ids = snap.interner.len();
    // Plain vectors while summing (no copy-on-write check per node), shared after.
    let mut sums: Vec<(Vec<i64>, usize)> = constraints
        .iter()
        .map(|_| (vec![NO_DOMAIN; ids], 0))
        .collect();
    let cols: Vec<Option<usize>> = constraints
        .iter()
        .map(|c| snap.label_index.get(&c.key).copied())
        .collect();
    if cols.iter().all(Option::is_some) {
        // Hoisted out of the node loop: column slices, count slices, and whether a
        // constraint's node inclusion policy can exclude any node for this pod.
        let col_slices: Vec<&[u32]> = cols
            .iter()
            .map(|c| snap.label_cols[c.unwrap_or(0)].as_slice())
            .collect();
        let count_slices: Vec<Option<&[i64]>> = entries
            .iter()
            .map(|e| e.map(|e| snap.count_cache.counts(e)))
            .collect();
        let always_included: Vec<bool> = constraints
            .iter()
            .map(|c| includes_every_node(c, affinity))
            .collect();
        for &slot in nodes {
            let s = slot as usize;
            if col_slices.iter().any(|col| col[s] == 0) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !always_included[i] && !included(snap, c, slot, affinity, taints) {
                    continue;
                }
                let n = count_slices[i].map_or(0, |counts| counts[s]);
                let (counts, domains) = &mut sums[i];
                let c = &mut counts[col_slices[i][s] as usize];
                if *c == NO_DOMAIN {
                    *c = 0;
                    *domains += 1;
                }
                *c += n;
            }
        }
    }
    sums.into_iter()
        .map(|(counts, domains)| DomainCounts::shared(Arc::new(counts), domains))
        .collect()
}

/// Upstream's RemovePod (`updateWithPod` with delta -1) for pods taken off `slot` that
/// its PreFilter never counted, applied to a state computed afresh without them: a pod
/// is taken away from its domain when it is in the preemptor's namespace (`ns`), the
/// node has every constraint's key and passes the constraint's node inclusion policies,
/// and the constraint's selector matches it, whether or not the pod was counted. The
/// PreFilter (`countPodsMatchSelector`) skipped terminating pods and counted nothing for
/// an empty selector, so preemption's dry run sees those counts one lower per such pod
/// (possibly below zero), and the minimum with them (the critical paths' update). This
/// mirrors `PodTopologySpread.updateWithPod` (filtering.go), an upstream quirk.
pub fn remove_uncounted<'a>(
    snap: &Snapshot,
    st: &mut SpreadFilterState,
    slot: u32,
    ns: u32,
    removed: impl Iterator<Item = &'a PodRecord>,
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
) {
    if st.constraints.is_empty() || !has_all_keys(snap, &st.constraints, slot) {
        return;
    }
    let mut changed = vec![false; st.constraints.len()];
    for rec in removed {
        if rec.namespace != ns {
            continue;
        }
        for (i, c) in st.constraints.iter().enumerate() {
            let counted = !rec.deleting && !c.selector.is_empty();
            if counted || !c.selector.matches(&rec.labels) {
                continue;
            }
            if !included(snap, c, slot, affinity, taints) {
                continue;
            }
            st.domain_counts[i].add(snap.label(slot, c.key), -1);
            changed[i] = true;
        }
    }
    for (i, c) in st.constraints.iter().enumerate() {
        if !changed[i] {
            continue;
        }
        let dc = &st.domain_counts[i];
        let (first, second) = dc.two_smallest();
        st.min_match[i] = if (dc.len() as i64) < c.min_domains {
            0
        } else {
            first.unwrap_or(i32::MAX as i64)
        };
        st.second_match[i] = second.unwrap_or(i32::MAX as i64);
    }
    if changed.iter().any(|&c| c) {
        st.refresh_checks(snap);
    }
}

/// Filter: 0 = missing topology label (unresolvable), 1 = skew exceeded
/// (`count + selfMatch - minMatch > maxSkew`, read as `count > maxSkew + minMatch -
/// selfMatch`). Called on most nodes of an attempt: one column read and one count
/// read per constraint.
#[inline(always)]
pub fn filter(snap: &Snapshot, st: &SpreadFilterState, slot: u32) -> Option<u64> {
    for (check, counts) in st.checks.iter().zip(&st.domain_counts) {
        let v = match check.col {
            Some(col) => snap.label_cols[col][slot as usize],
            None => snap.label(slot, check.key),
        };
        if v == 0 {
            return Some(0);
        }
        if counts.get(v) > check.most {
            return Some(1);
        }
    }
    None
}

/// Filter with pods `added` to `slot` first, as upstream's `AddPod` then `Filter`: a pod
/// in the incoming pod's namespace (`ns`) that matches a constraint's selector counts in
/// the node's domain when the node has every constraint's topology key and passes that
/// constraint's node inclusion policies, and the minimum becomes what the critical
/// paths hold after the update (the true minimum over the domains: it only moves when
/// the node's domain was the only one at the minimum).
pub fn filter_with_pods<'a>(
    snap: &Snapshot,
    st: &SpreadFilterState,
    slot: u32,
    ns: u32,
    added: impl Iterator<Item = &'a PodRecord> + Clone,
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
) -> Option<u64> {
    let counted = has_all_keys(snap, &st.constraints, slot);
    for (i, c) in st.constraints.iter().enumerate() {
        let v = snap.label(slot, c.key);
        if v == 0 {
            return Some(0);
        }
        let before = st.domain_counts[i].get(v);
        let more = if counted && included(snap, c, slot, affinity, taints) {
            added
                .clone()
                .filter(|p| p.namespace == ns && c.selector.matches(&p.labels))
                .count() as i64
        } else {
            0
        };
        let min = if more == 0
            || before != st.min_match[i]
            || (st.domain_counts[i].len() as i64) < c.min_domains
        {
            st.min_match[i]
        } else {
            (before + more).min(st.second_match[i])
        };
        if before + more + st.self_match[i] - min > c.max_skew {
            return Some(1);
        }
    }
    None
}

pub fn reason(detail: u64) -> &'static str {
    if detail == 0 {
        ERR_REASON_NODE_LABEL_NOT_MATCH
    } else {
        ERR_REASON_CONSTRAINTS_NOT_MATCH
    }
}

/// Score state (PreScore over the feasible nodes).
#[derive(Clone, Debug, Default)]
pub struct SpreadScoreState {
    pub constraints: Vec<Constraint>,
    pub require_all_topologies: bool,
    /// Per constraint: domain value → matching pods (non-hostname keys).
    pub pair_counts: Vec<AHashMap<u32, i64>>,
    /// Per constraint: per node slot counts (hostname keys).
    pub node_counts: Vec<Vec<i64>>,
    pub weights: Vec<f64>,
}

/// PreScore and Score over `feasible`; returns raw scores and the ignored mask.
#[allow(clippy::too_many_arguments)]
pub fn score_all(
    snap: &Snapshot,
    constraints: &[Constraint],
    entries: &[Option<usize>],
    require_all_topologies: bool,
    affinity: &RequiredNodeAffinity,
    taints: &TaintState,
    all_nodes: &[u32],
    feasible: &[u32],
) -> Option<(Vec<i64>, Vec<bool>)> {
    if constraints.is_empty() || feasible.is_empty() || all_nodes.is_empty() {
        return None;
    }
    let mut ignored = vec![false; feasible.len()];
    let mut pair_counts: Vec<AHashMap<u32, i64>> = vec![AHashMap::new(); constraints.len()];
    let mut topo_size = vec![0usize; constraints.len()];
    let mut ignored_count = 0usize;
    for (fi, &slot) in feasible.iter().enumerate() {
        if require_all_topologies && !has_all_keys(snap, constraints, slot) {
            ignored[fi] = true;
            ignored_count += 1;
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.key_is_hostname {
                continue;
            }
            let v = snap.label(slot, c.key);
            if let std::collections::hash_map::Entry::Vacant(e) = pair_counts[i].entry(v) {
                e.insert(0);
                topo_size[i] += 1;
            }
        }
    }
    for &slot in all_nodes {
        if require_all_topologies && !has_all_keys(snap, constraints, slot) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.key_is_hostname || !included(snap, c, slot, affinity, taints) {
                continue;
            }
            let v = snap.label(slot, c.key);
            if let Some(cnt) = pair_counts[i].get_mut(&v) {
                *cnt += node_count(snap, entries[i], slot);
            }
        }
    }
    let weights: Vec<f64> = constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let size = if c.key_is_hostname {
                feasible.len() - ignored_count
            } else {
                topo_size[i]
            };
            ((size + 2) as f64).ln()
        })
        .collect();
    let scores = feasible
        .iter()
        .enumerate()
        .map(|(fi, &slot)| {
            if ignored[fi] {
                return 0;
            }
            let mut score = 0f64;
            for (i, c) in constraints.iter().enumerate() {
                let v = snap.label(slot, c.key);
                if v == 0 {
                    continue;
                }
                let cnt = if c.key_is_hostname {
                    node_count(snap, entries[i], slot)
                } else {
                    pair_counts[i].get(&v).copied().unwrap_or(0)
                };
                score += cnt as f64 * weights[i] + (c.max_skew - 1) as f64;
            }
            score.round() as i64
        })
        .collect();
    Some((scores, ignored))
}

/// NormalizeScore with ignored nodes.
pub fn normalize(scores: &mut [i64], ignored: &[bool]) {
    let mut min = i64::MAX;
    let mut max = 0i64;
    for (s, &ig) in scores.iter().zip(ignored) {
        if ig {
            continue;
        }
        min = min.min(*s);
        max = max.max(*s);
    }
    for (s, &ig) in scores.iter_mut().zip(ignored) {
        if ig {
            *s = 0;
        } else if max == 0 {
            *s = 100;
        } else {
            *s = 100 * (max + min - *s) / max;
        }
    }
}
