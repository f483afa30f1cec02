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

use crate::plugins::inter_pod_affinity::AffinityTerm;
use crate::selector::Selector;
use crate::snapshot::{PodRecord, Snapshot};

const MAX_ENTRIES: usize = 32;

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
            }
        }
        self.count_cache.entries = entries;
    }
}
