//! Per-node counts of pods matching a predicate, maintained incrementally.
//!
//! PodTopologySpread and InterPodAffinity need, for every attempt, how many existing pods
//! on each node match a selector (in a namespace) or a set of affinity terms. Walking all
//! pods for every attempt costs O(pods); workloads reuse a handful of predicates (all
//! replicas of a deployment carry the same constraint), so the snapshot keeps the per-node
//! counts of recently used predicates and updates them as pods are added and removed:
//! O(cached predicates) per pod update, O(1) to fetch per attempt.
//!
//! Entries are built on first use by one full scan and evicted least-recently-used, but
//! never within the attempt that fetched them (an attempt holds their indices; a pod
//! with more distinct predicates than the bound grows the cache until the next attempt).
//! Any namespace change clears the cache (namespace selectors read namespace labels).
//!
//! **Domain views.** PodTopologySpread's PreFilter also needs, per constraint, the sum of
//! those counts per topology domain (the value of the constraint's key) over the nodes
//! that carry every topology key of the pod's constraints, which domains exist, and the
//! smallest and second smallest count: recomputed, that is a walk over every node per
//! attempt. A [`DomainView`] keeps them for one (entry, key, required keys) and follows
//! the per-node counts: a pod counted or uncounted on a qualifying node moves its
//! domain's count by one; a node that gains or loses a required key (added, relabeled,
//! removed: [`Snapshot::views_node`] before and after) takes its whole per-node count
//! into or out of its domain, creating or dropping the domain with its first or last
//! node. The counts of the existing domains are also kept as a multiset (ordered map
//! of count → domains), so the two smallest are read in O(log domains). Views live in
//! their entry: evicting or clearing the entry drops them, at most [`MAX_VIEWS`] per
//! entry (least recently used evicted). An attempt takes the per-domain counts as a
//! shared `Arc` (no copy); the view copies them on its next change while an attempt's
//! state still holds them (copy on write), so a state keeps the counts it was computed
//! with (preemption's dry run reads them later). Only constraints whose node inclusion
//! policies include every node for the pod use views (see `pod_topology_spread`); the
//! switch `Snapshot.set_domain_views(False)` turns them off, for tests that compare.
//! InterPodAffinity's PreFilter reads the same views for the incoming pod's required
//! terms (by each term's topology key, a node counting when it carries that key).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::plugins::inter_pod_affinity::AffinityTerm;
use crate::plugins::pod_topology_spread::NO_DOMAIN;
use crate::selector::Selector;
use crate::snapshot::{PodRecord, Snapshot};

const MAX_ENTRIES: usize = 32;
/// Most domain views kept per entry.
pub const MAX_VIEWS: usize = 4;

/// Which pods are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodPredicate {
    /// PodTopologySpread: pods in namespace `ns`, not terminating, matching `selector`.
    Spread { ns: u32, selector: Selector },
    /// InterPodAffinity: pods matching every term (namespaces and selector).
    AllTerms(Vec<AffinityTerm>),
}

impl PodPredicate {
    #[inline]
    fn matches(&self, snap: &Snapshot, rec: &PodRecord) -> bool {
        match self {
            PodPredicate::Spread { ns, selector } => {
                !rec.deleting && rec.namespace == *ns && selector.matches(&rec.labels)
            }
            PodPredicate::AllTerms(terms) => {
                let ns_labels = snap.namespace_labels(rec.namespace);
                !terms.is_empty()
                    && terms
                        .iter()
                        .all(|t| t.matches(rec.namespace, ns_labels, &rec.labels))
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    pred: PodPredicate,
    per_node: Vec<i64>,
    last_used: u64,
    views: Vec<DomainView>,
}

/// Per-domain sums of an entry's per-node counts (see the module docs).
#[derive(Debug, Clone)]
pub struct DomainView {
    /// The topology key whose values are the domains.
    key: u32,
    /// Sorted distinct keys a node must carry to count (the pod's constraints' keys).
    required: Vec<u32>,
    /// By value id: the domain's count, [`NO_DOMAIN`] where the domain does not exist.
    counts: Arc<Vec<i64>>,
    /// By value id: qualifying nodes in the domain.
    nodes: Vec<u32>,
    domains: usize,
    /// Count → number of existing domains with it.
    sorted: BTreeMap<i64, u32>,
    last_used: u64,
}

/// What PodTopologySpread's PreFilter reads of a view.
#[derive(Debug, Clone)]
pub struct DomainSummary {
    pub counts: Arc<Vec<i64>>,
    pub domains: usize,
    /// Domains whose count is 0.
    pub zero_domains: usize,
    /// The smallest count and the second smallest (the smallest again when two domains
    /// share it), `None` for what does not exist.
    pub first: Option<i64>,
    pub second: Option<i64>,
}

impl DomainView {
    #[inline]
    fn qualifies(&self, snap: &Snapshot, slot: u32) -> Option<u32> {
        if self.required.iter().any(|&k| snap.label(slot, k) == 0) {
            return None;
        }
        Some(snap.label(slot, self.key))
    }

    fn multiset(&mut self, count: i64, delta: i32) {
        let e = self.sorted.entry(count).or_insert(0);
        if delta > 0 {
            *e += 1;
        } else {
            *e -= 1;
            if *e == 0 {
                self.sorted.remove(&count);
            }
        }
    }

    /// Add `dcount` to domain `v`'s count and `dnodes` (±1 or 0) to its nodes.
    fn apply(&mut self, v: u32, dcount: i64, dnodes: i32) {
        if dcount == 0 && dnodes == 0 {
            return;
        }
        let i = v as usize;
        if i >= self.nodes.len() {
            self.nodes.resize(i + 1, 0);
        }
        let counts = Arc::make_mut(&mut self.counts);
        if i >= counts.len() {
            counts.resize(i + 1, NO_DOMAIN);
        }
        let had = self.nodes[i];
        let old = counts[i];
        let now = (had as i64 + dnodes as i64) as u32;
        self.nodes[i] = now;
        let new = if had > 0 { old + dcount } else { dcount };
        if had > 0 {
            let e = self.sorted.entry(old).or_insert(0);
            *e -= 1;
            if *e == 0 {
                self.sorted.remove(&old);
            }
        }
        if now > 0 {
            counts[i] = new;
            self.multiset(new, 1);
            if had == 0 {
                self.domains += 1;
            }
        } else {
            debug_assert_eq!(new, 0, "a domain's last node leaves with all its count");
            counts[i] = NO_DOMAIN;
            if had > 0 {
                self.domains -= 1;
            }
        }
    }

    fn summary(&self) -> DomainSummary {
        let mut it = self.sorted.iter();
        let (first, second) = match it.next() {
            None => (None, None),
            Some((&k, &n)) if n >= 2 => (Some(k), Some(k)),
            Some((&k, _)) => (Some(k), it.next().map(|(&k2, _)| k2)),
        };
        DomainSummary {
            counts: Arc::clone(&self.counts),
            domains: self.domains,
            zero_domains: self.sorted.get(&0).map_or(0, |&n| n as usize),
            first,
            second,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CountCache {
    entries: Vec<Entry>,
    tick: u64,
    /// Tick at which the current attempt began: entries used since then are pinned (the
    /// attempt holds their indices), so they are never evicted within it.
    attempt_start: u64,
}

impl CountCache {
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Start an attempt: entries may be evicted again, and a cache that grew past its
    /// bound during the previous attempt is trimmed (no index is held between attempts).
    pub fn begin_attempt(&mut self) {
        self.tick += 1;
        self.attempt_start = self.tick;
        if self.entries.len() > MAX_ENTRIES {
            self.entries.sort_by_key(|e| std::cmp::Reverse(e.last_used));
            self.entries.truncate(MAX_ENTRIES);
        }
    }

    pub fn grow(&mut self) {
        for e in &mut self.entries {
            e.per_node.push(0);
        }
    }

    pub fn counts(&self, idx: usize) -> &[i64] {
        &self.entries[idx].per_node
    }
}

impl Snapshot {
    /// The index of the cache entry for `pred`, building it when missing.
    pub fn count_entry(&mut self, pred: PodPredicate) -> usize {
        self.count_cache.tick += 1;
        let tick = self.count_cache.tick;
        if let Some(i) = self.count_cache.entries.iter().position(|e| e.pred == pred) {
            self.count_cache.entries[i].last_used = tick;
            return i;
        }
        let mut per_node = vec![0i64; self.capacity()];
        for rec in self.pods.iter().flatten() {
            if pred.matches(self, rec) {
                per_node[rec.slot as usize] += 1;
            }
        }
        let entry = Entry {
            pred,
            per_node,
            last_used: tick,
            views: Vec::new(),
        };
        let start = self.count_cache.attempt_start;
        let victim = if self.count_cache.entries.len() < MAX_ENTRIES {
            None
        } else {
            // Least recently used among the entries this attempt does not hold.
            self.count_cache
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.last_used < start)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i)
        };
        match victim {
            Some(i) => {
                self.count_cache.entries[i] = entry;
                i
            }
            None => {
                self.count_cache.entries.push(entry);
                self.count_cache.entries.len() - 1
            }
        }
    }

    /// Update every cached count for a pod added (`delta` 1) or removed (-1).
    pub(crate) fn update_counts(&mut self, rec: &PodRecord, delta: i64) {
        if self.count_cache.entries.is_empty() {
            return;
        }
        let mut entries = std::mem::take(&mut self.count_cache.entries);
        for e in &mut entries {
            if e.pred.matches(self, rec) {
                e.per_node[rec.slot as usize] += delta;
                for view in &mut e.views {
                    if let Some(v) = view.qualifies(self, rec.slot) {
                        view.apply(v, delta, 0);
                    }
                }
            }
        }
        self.count_cache.entries = entries;
    }

    /// Take node `slot` into the domain views (`sign` 1, after its labels are set) or
    /// out of them (-1, before its labels are cleared).
    pub(crate) fn views_node(&mut self, slot: u32, sign: i32) {
        self.anti_domains_node(slot, sign as i64);
        if self.count_cache.entries.iter().all(|e| e.views.is_empty()) {
            return;
        }
        let mut entries = std::mem::take(&mut self.count_cache.entries);
        for e in &mut entries {
            let n = e.per_node[slot as usize];
            for view in &mut e.views {
                if let Some(v) = view.qualifies(self, slot) {
                    view.apply(v, n * sign as i64, sign);
                }
            }
        }
        self.count_cache.entries = entries;
    }

    /// The per-domain counts of entry `idx` by topology `key` over the nodes carrying
    /// every key in `required` (sorted, distinct), from its view (built on first use by
    /// one walk over the nodes).
    pub fn domain_view(&mut self, idx: usize, key: u32, required: &[u32]) -> DomainSummary {
        self.count_cache.tick += 1;
        let tick = self.count_cache.tick;
        let entry = &mut self.count_cache.entries[idx];
        if let Some(view) = entry
            .views
            .iter_mut()
            .find(|v| v.key == key && v.required == required)
        {
            view.last_used = tick;
            return view.summary();
        }
        let mut view = DomainView {
            key,
            required: required.to_vec(),
            counts: Arc::new(Vec::new()),
            nodes: Vec::new(),
            domains: 0,
            sorted: BTreeMap::new(),
            last_used: tick,
        };
        // Sums first, then the multiset once per domain.
        let mut counts: Vec<i64> = Vec::new();
        let mut nodes: Vec<u32> = Vec::new();
        let per_node = &self.count_cache.entries[idx].per_node;
        for slot in 0..self.capacity() as u32 {
            if let Some(v) = view.qualifies(self, slot) {
                let i = v as usize;
                if i >= nodes.len() {
                    nodes.resize(i + 1, 0);
                    counts.resize(i + 1, 0);
                }
                nodes[i] += 1;
                counts[i] += per_node[slot as usize];
            }
        }
        for (c, &n) in counts.iter_mut().zip(&nodes) {
            if n == 0 {
                *c = NO_DOMAIN;
            } else {
                view.domains += 1;
                *view.sorted.entry(*c).or_insert(0) += 1;
            }
        }
        view.counts = Arc::new(counts);
        view.nodes = nodes;
        let summary = view.summary();
        let views = &mut self.count_cache.entries[idx].views;
        if views.len() >= MAX_VIEWS {
            if let Some((i, _)) = views.iter().enumerate().min_by_key(|(_, v)| v.last_used) {
                views.swap_remove(i);
            }
        }
        views.push(view);
        summary
    }

    /// Drop every domain view (the switch turned off, or a test's reset).
    pub fn clear_domain_views(&mut self) {
        self.clear_anti_domains();
        for e in &mut self.count_cache.entries {
            e.views.clear();
        }
    }
}
