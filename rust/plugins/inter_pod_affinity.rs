//! InterPodAffinity: required and preferred pod affinity and anti-affinity.
//!
//! Filter (upstream semantics):
//! * the incoming pod's required affinity terms: for every term the node must carry the
//!   topology key, and some pod matching the term must run in the node's domain — unless
//!   no pod in the cluster matches the terms and the pod matches its own terms (the first
//!   pod of a series), "node(s) didn't match pod affinity rules" (UnschedulableAndUnresolvable);
//! * the incoming pod's required anti-affinity: no matching pod in the node's domain,
//!   "node(s) didn't match pod anti-affinity rules";
//! * existing pods' required anti-affinity (symmetry): no pod whose anti-affinity term
//!   matches the incoming pod may run in the node's domain for that term's key,
//!   "node(s) didn't satisfy existing pods anti-affinity rules".
//!
//! Counts per topology pair are computed once per pod (PreFilter); Filter is a lookup.
//! The incoming pod's required terms count the pods of the count cache's entries per
//! node; when every term has its own topology key, each key's per-domain counts are
//! the entry's domain view by that key (see `snapshot::counts`), shared, not summed
//! over the nodes again.
//!
//! Score: for every existing pod (all of them when the incoming pod has preferred terms,
//! otherwise only pods with affinity), the incoming pod's preferred terms that match it
//! add (affinity) or subtract (anti-affinity) their weight to the existing pod's domain;
//! the existing pod's required affinity terms matching the incoming pod add
//! `hardPodAffinityWeight`, its preferred terms add/subtract their weight. A node scores
//! the sum over its domains; NormalizeScore maps min..max to 0..100.
//!
//! Term matching: the pod's namespace is in the term's namespaces (default: the term
//! owner's namespace) or matches its namespaceSelector, and its labels match the term's
//! selector (with matchLabelKeys/mismatchLabelKeys merged in).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, get};
use crate::plugins::pod_topology_spread::NO_DOMAIN;
use crate::selector::{label_value, LabelSelectorSpec, SelOp, Selector};
use crate::snapshot::counts::DomainSummary;
use crate::snapshot::intern::Interner;
use crate::snapshot::PodRecord;

pub const NAME: &str = "InterPodAffinity";
pub const ERR_REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";

/// A `v1.PodAffinityTerm` with strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinityTermSpec {
    pub selector: Option<LabelSelectorSpec>,
    pub namespaces: Vec<String>,
    pub namespace_selector: Option<LabelSelectorSpec>,
    pub topology_key: String,
    pub match_label_keys: Vec<String>,
    pub mismatch_label_keys: Vec<String>,
}

/// The pod's affinity and anti-affinity terms with strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinitySpec {
    pub affinity_required: Vec<PodAffinityTermSpec>,
    pub affinity_preferred: Vec<(i64, PodAffinityTermSpec)>,
    pub anti_required: Vec<PodAffinityTermSpec>,
    pub anti_preferred: Vec<(i64, PodAffinityTermSpec)>,
}

impl PodAffinitySpec {
    pub fn is_empty(&self) -> bool {
        self.affinity_required.is_empty()
            && self.affinity_preferred.is_empty()
            && self.anti_required.is_empty()
            && self.anti_preferred.is_empty()
    }

    /// Parse `podAffinity` / `podAntiAffinity` of a pod's `spec.affinity`.
    pub fn parse(affinity: &Bound<'_, PyDict>) -> PyResult<PodAffinitySpec> {
        let mut s = PodAffinitySpec::default();
        for (field, anti) in [("podAffinity", false), ("podAntiAffinity", true)] {
            let Some(pa) = get(affinity, field)? else {
                continue;
            };
            let path = format!("spec.affinity.{field}");
            let pa = args::as_dict(&pa, &path)?;
            if let Some(req) = get(&pa, "requiredDuringSchedulingIgnoredDuringExecution")? {
                let rpath = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution");
                let req = args::as_list(&req, &rpath)?;
                for (i, t) in req.iter().enumerate() {
                    let term = parse_term(&t, &format!("{rpath}[{i}]"))?;
                    if anti {
                        s.anti_required.push(term);
                    } else {
                        s.affinity_required.push(term);
                    }
                }
            }
            if let Some(pref) = get(&pa, "preferredDuringSchedulingIgnoredDuringExecution")? {
                let ppath = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
                let pref = args::as_list(&pref, &ppath)?;
                for (i, w) in pref.iter().enumerate() {
                    let wpath = format!("{ppath}[{i}]");
                    let w = args::as_dict(&w, &wpath)?;
                    let weight = match get(&w, "weight")? {
                        Some(v) => args::as_i64(&v, &format!("{wpath}.weight"))?,
                        None => 0,
                    };
                    let term = match get(&w, "podAffinityTerm")? {
                        Some(t) => parse_term(&t, &format!("{wpath}.podAffinityTerm"))?,
                        None => {
                            return Err(args::err(
                                &format!("{wpath}.podAffinityTerm"),
                                "is required",
                            ))
                        }
                    };
                    if anti {
                        s.anti_preferred.push((weight, term));
                    } else {
                        s.affinity_preferred.push((weight, term));
                    }
                }
            }
        }
        Ok(s)
    }
}

fn parse_term(v: &Bound<'_, PyAny>, path: &str) -> PyResult<PodAffinityTermSpec> {
    let d = args::as_dict(v, path)?;
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
    Ok(PodAffinityTermSpec {
        selector: LabelSelectorSpec::parse_opt(&d, "labelSelector", path)?,
        namespaces: args::str_list(&d, "namespaces", path)?,
        namespace_selector: LabelSelectorSpec::parse_opt(&d, "namespaceSelector", path)?,
        topology_key,
        match_label_keys: args::str_list(&d, "matchLabelKeys", path)?,
        mismatch_label_keys: args::str_list(&d, "mismatchLabelKeys", path)?,
    })
}

/// A compiled affinity term (upstream's `framework.AffinityTerm`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityTerm {
    pub namespaces: Vec<u32>,
    /// `None`: no namespaceSelector; `Some(Selector::Reqs([]))` ({}) matches all.
    pub namespace_selector: Option<Selector>,
    pub selector: Selector,
    pub topology_key: u32,
}

impl AffinityTerm {
    /// Compile a term owned by a pod in namespace `owner_ns` with labels `owner_labels`.
    pub fn compile(
        spec: &PodAffinityTermSpec,
        owner_ns: u32,
        owner_labels: &[(u32, u32)],
        interner: &mut Interner,
    ) -> AffinityTerm {
        let mut selector = Selector::compile(spec.selector.as_ref(), interner);
        if spec.selector.is_some() {
            for (keys, op) in [
                (&spec.match_label_keys, SelOp::In),
                (&spec.mismatch_label_keys, SelOp::NotIn),
            ] {
                for k in keys {
                    let kid = interner.intern(k);
                    if let Some(v) = label_value(owner_labels, kid) {
                        selector.push(kid, op, v);
                    }
                }
            }
        }
        let namespace_selector = spec
            .namespace_selector
            .as_ref()
            .map(|s| Selector::compile(Some(s), interner));
        let mut namespaces: Vec<u32> = spec.namespaces.iter().map(|n| interner.intern(n)).collect();
        if namespaces.is_empty() && namespace_selector.is_none() {
            namespaces.push(owner_ns);
        }
        AffinityTerm {
            namespaces,
            namespace_selector,
            selector,
            topology_key: interner.intern(&spec.topology_key),
        }
    }

    /// Whether a pod in namespace `ns` (with namespace labels `ns_labels`, `None` when the
    /// namespace is not known) and labels `labels` matches the term.
    #[inline]
    pub fn matches(
        &self,
        ns: u32,
        ns_labels: Option<&[(u32, u32)]>,
        labels: &[(u32, u32)],
    ) -> bool {
        let ns_ok = self.namespaces.contains(&ns)
            || match (&self.namespace_selector, ns_labels) {
                // An empty selector matches every namespace, known or not.
                (Some(sel), _) if sel.is_empty() => true,
                (Some(sel), Some(l)) => sel.matches(l),
                _ => false,
            };
        ns_ok && self.selector.matches(labels)
    }
}

/// Compiled terms of a pod.
#[derive(Clone, Debug, Default)]
pub struct CompiledAffinity {
    pub affinity_required: Vec<AffinityTerm>,
    pub affinity_preferred: Vec<(i64, AffinityTerm)>,
    pub anti_required: Vec<AffinityTerm>,
    pub anti_preferred: Vec<(i64, AffinityTerm)>,
}

impl CompiledAffinity {
    pub fn compile(
        spec: &PodAffinitySpec,
        ns: u32,
        labels: &[(u32, u32)],
        interner: &mut Interner,
    ) -> CompiledAffinity {
        let one =
            |t: &PodAffinityTermSpec, i: &mut Interner| AffinityTerm::compile(t, ns, labels, i);
        CompiledAffinity {
            affinity_required: spec
                .affinity_required
                .iter()
                .map(|t| one(t, interner))
                .collect(),
            affinity_preferred: spec
                .affinity_preferred
                .iter()
                .map(|(w, t)| (*w, one(t, interner)))
                .collect(),
            anti_required: spec
                .anti_required
                .iter()
                .map(|t| one(t, interner))
                .collect(),
            anti_preferred: spec
                .anti_preferred
                .iter()
                .map(|(w, t)| (*w, one(t, interner)))
                .collect(),
        }
    }
}

impl CompiledAffinity {
    /// The terms of the pod being scheduled as upstream's InterPodAffinity matches them.
    /// Its PreFilter and PreScore merge the namespaces a term's `namespaceSelector`
    /// selects into the term's namespaces (`mergeAffinityTermNamespacesIfNotEmpty`) and
    /// from then on match pods with nil namespace labels (`AffinityTerm.Matches(pod,
    /// nil)`, in `updateWithAffinityTerms`, `updateWithAntiAffinityTerms`,
    /// `podMatchesAllAffinityTerms` and `processExistingPod`), meaning the selector has
    /// been replaced by `labels.Nothing()`. But that function sets `NamespaceSelector` on
    /// its copy of the term only: the term keeps its selector, and a selector that
    /// matches an empty label set (`DoesNotExist`, `NotIn`) then matches pods of every
    /// namespace. Mirrored: such a selector becomes `{}`. Any other selector matches the
    /// namespaces it selects, as the merged names do.
    pub fn as_incoming(mut self) -> CompiledAffinity {
        let quirk = |t: &mut AffinityTerm| {
            if let Some(sel) = &t.namespace_selector {
                if !sel.is_empty() && sel.matches(&[]) {
                    t.namespace_selector = Some(Selector::everything());
                }
            }
        };
        self.affinity_required.iter_mut().for_each(quirk);
        self.anti_required.iter_mut().for_each(quirk);
        self.affinity_preferred
            .iter_mut()
            .for_each(|(_, t)| quirk(t));
        self.anti_preferred.iter_mut().for_each(|(_, t)| quirk(t));
        self
    }
}

#[derive(Clone, Debug)]
pub struct IpaArgs {
    pub hard_pod_affinity_weight: i64,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for IpaArgs {
    fn default() -> Self {
        IpaArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl IpaArgs {
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<IpaArgs> {
        let mut a = IpaArgs::default();
        if let Some(w) = get(d, "hardPodAffinityWeight")? {
            a.hard_pod_affinity_weight =
                args::as_i64(&w, "InterPodAffinityArgs.hardPodAffinityWeight")?;
        }
        if let Some(v) = get(d, "ignorePreferredTermsOfExistingPods")? {
            a.ignore_preferred_terms_of_existing_pods = v.extract::<bool>().map_err(|_| {
                args::err(
                    "InterPodAffinityArgs.ignorePreferredTermsOfExistingPods",
                    "must be a boolean",
                )
            })?;
        }
        Ok(a)
    }
}

/// `(topology key, value) → count`, as one dense array over value ids per topology key
/// (terms use one or two keys; hashing thousands of hostname pairs per attempt was the
/// hot spot). Entries that return to 0 are gone, as in upstream's map. A key's array
/// may be a count cache domain view's (shared until changed here), where a value that
/// is no domain holds [`NO_DOMAIN`]: read as 0.
#[derive(Clone, Debug, Default)]
pub struct TopologyCounts {
    keys: Vec<(u32, Vals)>,
    nonzero: usize,
}

/// One key's counts: built here, or a domain view's (copied on the first change).
#[derive(Clone, Debug)]
enum Vals {
    Own(Vec<i64>),
    Shared(Arc<Vec<i64>>),
}

impl TopologyCounts {
    #[inline]
    pub fn get(&self, key: u32, value: u32) -> i64 {
        for (k, vals) in &self.keys {
            if *k == key {
                let vals = match vals {
                    Vals::Own(v) => v.as_slice(),
                    Vals::Shared(v) => v.as_slice(),
                };
                return match vals.get(value as usize) {
                    Some(&c) if c != NO_DOMAIN => c,
                    _ => 0,
                };
            }
        }
        0
    }

    pub fn is_empty(&self) -> bool {
        self.nonzero == 0
    }

    /// Take key `key`'s counts from a domain view (the key must not be here yet).
    pub fn set_view(&mut self, key: u32, view: DomainSummary) {
        self.set_shared(key, view.counts, view.domains - view.zero_domains);
    }

    /// Take key `key`'s counts, `nonzero` of them other than 0, shared (the key must
    /// not be here yet).
    pub fn set_shared(&mut self, key: u32, counts: Arc<Vec<i64>>, nonzero: usize) {
        debug_assert!(self.keys.iter().all(|(k, _)| *k != key));
        self.nonzero += nonzero;
        self.keys.push((key, Vals::Shared(counts)));
    }

    fn add(&mut self, key: u32, value: u32, delta: i64) {
        let i = match self.keys.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.keys.push((key, Vals::Own(Vec::new())));
                self.keys.len() - 1
            }
        };
        let slot = &mut self.keys[i].1;
        if let Vals::Shared(v) = slot {
            *slot = Vals::Own(v.as_ref().clone());
        }
        let Vals::Own(vals) = slot else {
            unreachable!("made owned above")
        };
        if vals.len() <= value as usize {
            vals.resize(value as usize + 1, 0);
        }
        let before = match vals[value as usize] {
            NO_DOMAIN => 0,
            c => c,
        };
        let after = before + delta;
        vals[value as usize] = after;
        match (before == 0, after == 0) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }
}

/// Per-pod Filter state.
#[derive(Clone, Debug, Default)]
pub struct IpaFilterState {
    pub active: bool,
    pub terms: CompiledAffinity,
    pub affinity_counts: TopologyCounts,
    pub anti_affinity_counts: TopologyCounts,
    pub existing_anti_affinity_counts: TopologyCounts,
    /// The pod matches all of its own required affinity terms.
    pub self_matches_affinity: bool,
    /// Upstream's PreFilter returned Skip for the pod (no required terms of its own, no
    /// existing pod's required anti-affinity term matching it): its AddPod (the
    /// nominated pods) and Filter do not run in the cycle, preemption's dry run included.
    pub skipped: bool,
}

pub fn add_count(m: &mut TopologyCounts, key: u32, value: Option<u32>, delta: i64) {
    if let Some(v) = value {
        m.add(key, v, delta);
    }
}

/// Read access to topology pair counts: the PreFilter state's, or those plus the pods
/// added to one node (`filter_with_pods`).
trait Counts {
    fn get(&self, key: u32, value: u32) -> i64;
    fn is_empty(&self) -> bool;
}

impl Counts for TopologyCounts {
    #[inline]
    fn get(&self, key: u32, value: u32) -> i64 {
        TopologyCounts::get(self, key, value)
    }

    #[inline]
    fn is_empty(&self) -> bool {
        TopologyCounts::is_empty(self)
    }
}

/// PreFilter counts plus one per `(key, value)` in `added` (pairs of the node the pods
/// were added to; counts only grow, so no entry returns to 0).
struct Plus<'a> {
    base: &'a TopologyCounts,
    added: &'a [(u32, u32)],
}

impl Counts for Plus<'_> {
    fn get(&self, key: u32, value: u32) -> i64 {
        self.base.get(key, value) + self.added.iter().filter(|&&p| p == (key, value)).count() as i64
    }

    fn is_empty(&self) -> bool {
        self.base.is_empty() && self.added.is_empty()
    }
}

/// Filter: the first failing check's reason, or `None`.
#[inline]
pub fn filter(
    st: &IpaFilterState,
    node_label: impl Fn(u32) -> Option<u32>,
    node_labels: &[(u32, u32)],
) -> Option<(bool, u64)> {
    if !st.active {
        return None;
    }
    check(
        st,
        &st.affinity_counts,
        &st.anti_affinity_counts,
        &st.existing_anti_affinity_counts,
        node_label,
        node_labels,
    )
}

#[inline(always)]
fn check<C: Counts>(
    st: &IpaFilterState,
    affinity_counts: &C,
    anti_affinity_counts: &C,
    existing_anti_affinity_counts: &C,
    node_label: impl Fn(u32) -> Option<u32>,
    node_labels: &[(u32, u32)],
) -> Option<(bool, u64)> {
    // Incoming pod's required affinity.
    if !st.terms.affinity_required.is_empty() {
        let mut pods_exist = true;
        for t in &st.terms.affinity_required {
            match node_label(t.topology_key) {
                Some(v) => {
                    if affinity_counts.get(t.topology_key, v) <= 0 {
                        pods_exist = false;
                    }
                }
                None => return Some((true, 0)),
            }
        }
        let first_of_series = affinity_counts.is_empty() && st.self_matches_affinity;
        if !pods_exist && !first_of_series {
            return Some((true, 0));
        }
    }
    // Incoming pod's required anti-affinity.
    if !anti_affinity_counts.is_empty() {
        for t in &st.terms.anti_required {
            if let Some(v) = node_label(t.topology_key) {
                if anti_affinity_counts.get(t.topology_key, v) > 0 {
                    return Some((false, 1));
                }
            }
        }
    }
    // Existing pods' anti-affinity.
    if !existing_anti_affinity_counts.is_empty() {
        for &(k, v) in node_labels {
            if existing_anti_affinity_counts.get(k, v) > 0 {
                return Some((false, 2));
            }
        }
    }
    None
}

/// The incoming pod as the terms of pods added to a node see it.
pub struct Incoming<'a> {
    pub namespace: u32,
    /// Its namespace's labels (empty when the namespace is not known).
    pub namespace_labels: &'a [(u32, u32)],
    pub labels: &'a [(u32, u32)],
}

/// Filter with pods `added` to the node first, as upstream's `AddPod` then `Filter`:
/// an added pod's required anti-affinity terms matching the incoming pod count in the
/// node's domain for the term's key (existing anti-affinity), and an added pod matching
/// all of the incoming pod's required affinity terms, or one of its required
/// anti-affinity terms, counts in the node's domain for that term's key. `ns_labels`
/// gives a namespace's labels (`None`: not known). Nothing is added when upstream's
/// PreFilter skips the plugin for this pod (no required terms of its own and no
/// existing pod's anti-affinity term matching it).
pub fn filter_with_pods<'a>(
    st: &IpaFilterState,
    node_label: impl Fn(u32) -> Option<u32>,
    node_labels: &[(u32, u32)],
    incoming: &Incoming<'_>,
    ns_labels: impl Fn(u32) -> Option<&'a [(u32, u32)]>,
    added: impl Iterator<Item = &'a PodRecord>,
) -> Option<(bool, u64)> {
    let terms = &st.terms;
    if !st.active || st.skipped {
        return None;
    }
    let mut existing: Vec<(u32, u32)> = Vec::new();
    let mut affinity: Vec<(u32, u32)> = Vec::new();
    let mut anti: Vec<(u32, u32)> = Vec::new();
    let pair = |out: &mut Vec<(u32, u32)>, key: u32| {
        if let Some(v) = node_label(key) {
            out.push((key, v));
        }
    };
    for p in added {
        if let Some(a) = &p.affinity {
            for t in &a.anti_required {
                if t.matches(
                    incoming.namespace,
                    Some(incoming.namespace_labels),
                    incoming.labels,
                ) {
                    pair(&mut existing, t.topology_key);
                }
            }
        }
        let p_ns_labels = ns_labels(p.namespace);
        if !terms.affinity_required.is_empty()
            && terms
                .affinity_required
                .iter()
                .all(|t| t.matches(p.namespace, p_ns_labels, &p.labels))
        {
            for t in &terms.affinity_required {
                pair(&mut affinity, t.topology_key);
            }
        }
        for t in &terms.anti_required {
            if t.matches(p.namespace, p_ns_labels, &p.labels) {
                pair(&mut anti, t.topology_key);
            }
        }
    }
    let plus = |base, added| Plus { base, added };
    check(
        st,
        &plus(&st.affinity_counts, &affinity),
        &plus(&st.anti_affinity_counts, &anti),
        &plus(&st.existing_anti_affinity_counts, &existing),
        node_label,
        node_labels,
    )
}

pub fn reason(detail: u64) -> &'static str {
    match detail {
        0 => ERR_REASON_AFFINITY,
        1 => ERR_REASON_ANTI_AFFINITY,
        _ => ERR_REASON_EXISTING_ANTI_AFFINITY,
    }
}

/// NormalizeScore: min..max → 0..MaxNodeScore (all 0 when max == min).
pub fn normalize(scores: &mut [i64]) {
    if scores.is_empty() {
        return;
    }
    let max = *scores.iter().max().unwrap_or(&0);
    let min = *scores.iter().min().unwrap_or(&0);
    let diff = max - min;
    for s in scores.iter_mut() {
        *s = if diff > 0 {
            (100.0 * ((*s - min) as f64 / diff as f64)) as i64
        } else {
            0
        };
    }
}
