//! Per-signature reuse of per-node results across scheduling attempts.
//!
//! An attempt examines a window of a few hundred nodes (upstream's sampling) starting
//! where the previous one stopped, so after a dozen attempts of pods that look alike
//! every window has been seen, while only the few nodes the pods went to have changed.
//! For the plugins whose per-node answer is a pure function of the pod and that node's
//! own state, the answer computed in an earlier attempt is still the answer today as
//! long as the node's state is unchanged. This module keeps those answers:
//!
//! - **Key**: the profile (its id: a `Profile` is immutable once built, a clone keeps its
//!   id and its content) and every field of the pod the cached plugins read (requests,
//!   the non-zero cpu/memory, the Fit-score requests, tolerations, node selector, node
//!   affinity, host ports, priority), compared in full, never by hash, plus the list of
//!   the pod's active Filters. A pod that names its node, carries volume kernel requests,
//!   requires node declared features or runs DynamicResources is never keyed.
//! - **Validity**: each slot of the snapshot has a stamp (`Snapshot::slot_stamp`) set
//!   from a monotonic counter on every change of that slot's state: a pod accounted or
//!   taken off (add, remove, assume, forget, preemption's dry run), a node added, updated
//!   or removed, the slot freed or reused, host ports restored, pods nominated to it or
//!   no longer. A cached result is used only when its stamp equals the slot's current
//!   stamp; the counter never repeats, so a reused slot never matches an old result.
//!   Scheduler-wide inputs (the DRA-backed extended resource names NodeResourcesFit's
//!   Filter consults) clear the whole cache when they change.
//! - **What**: the verdict (first rejecting plugin, its code and detail) of the
//!   pod's leading active Filters that are among NodeUnschedulable, NodeName,
//!   TaintToleration, NodeAffinity, NodePorts and NodeResourcesFit (all of the default
//!   profile's Filters before the volume plugins, PodTopologySpread and
//!   InterPodAffinity), on nodes without nominated pods (with them, the verdict also
//!   depends on the incoming pod's uid and the nominations: those nodes are always
//!   filtered afresh). A node that verdict passes runs the Filters after them as
//!   usual, so the node's verdict is the one the Filters in order give. And the raw
//!   scores of NodeResourcesFit,
//!   NodeResourcesBalancedAllocation, TaintToleration and NodeAffinity (when none of them
//!   reads DRA device totals). PodTopologySpread, InterPodAffinity, ImageLocality (its
//!   score reads the cluster-wide image spread and node count), the volume plugins,
//!   DynamicResources and NodeDeclaredFeatures are always computed.
//!
//! Everything around the per-node answers is unchanged: the sampling order, the start
//! index, normalization, the weighted sum, tie-breaking draws, the evaluation counts
//! (counted from the verdicts, whether reused or not) and failure statuses. `explain`,
//! `explain_attempt`, `filter_node` and preemption never use the cache.
//!
//! Memory is bounded: at most [`MAX_ENTRIES`] keys, least recently used evicted, each
//! holding one fixed-size record per slot.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::plugins::{Plugin, Reject};

/// Most keys kept at once.
pub const MAX_ENTRIES: usize = 16;

/// Raw score columns kept per slot, indexed by [`score_column`].
pub const SCORED: usize = 4;

/// The column of a plugin whose raw scores are kept.
pub fn score_column(p: Plugin) -> Option<usize> {
    match p {
        Plugin::NodeResourcesFit => Some(0),
        Plugin::NodeResourcesBalancedAllocation => Some(1),
        Plugin::TaintToleration => Some(2),
        Plugin::NodeAffinity => Some(3),
        _ => None,
    }
}

/// Whether Filter plugin `p`'s verdict on a node (without nominated pods) is a pure
/// function of the pod and that node's state.
pub fn filter_reusable(p: Plugin) -> bool {
    matches!(
        p,
        Plugin::NodeUnschedulable
            | Plugin::NodeName
            | Plugin::TaintToleration
            | Plugin::NodeAffinity
            | Plugin::NodePorts
            | Plugin::NodeResourcesFit
    )
}

static NEXT_PROFILE_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh profile id (see the module docs).
pub fn next_profile_id() -> u64 {
    NEXT_PROFILE_ID.fetch_add(1, Ordering::Relaxed)
}

/// What identifies the pods and profile whose results an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub profile: u64,
    pub active: Vec<Plugin>,
    pub pod: String,
}

#[derive(Debug, Clone, Copy, Default)]
struct SlotResult {
    /// The slot's stamp the results were computed at (0: none).
    stamp: u64,
    has_verdict: bool,
    has_scores: bool,
    verdict: Option<Reject>,
    scores: [i64; SCORED],
}

#[derive(Debug)]
pub struct Entry {
    key: Key,
    last_used: u64,
    slots: Vec<SlotResult>,
}

impl Entry {
    /// The kept verdict of `slot` at `stamp`.
    #[inline]
    pub fn verdict(&self, slot: u32, stamp: u64) -> Option<Option<Reject>> {
        match self.slots.get(slot as usize) {
            Some(r) if r.stamp == stamp && r.has_verdict => Some(r.verdict),
            _ => None,
        }
    }

    /// The kept raw scores of `slot` at `stamp`.
    #[inline]
    pub fn scores(&self, slot: u32, stamp: u64) -> Option<&[i64; SCORED]> {
        match self.slots.get(slot as usize) {
            Some(r) if r.stamp == stamp && r.has_scores => Some(&r.scores),
            _ => None,
        }
    }

    fn at(&mut self, slot: u32, stamp: u64) -> &mut SlotResult {
        let i = slot as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, SlotResult::default());
        }
        let r = &mut self.slots[i];
        if r.stamp != stamp {
            *r = SlotResult {
                stamp,
                ..SlotResult::default()
            };
        }
        r
    }

    pub fn store_verdict(&mut self, slot: u32, stamp: u64, verdict: Option<Reject>) {
        let r = self.at(slot, stamp);
        r.verdict = verdict;
        r.has_verdict = true;
    }

    pub fn store_scores(&mut self, slot: u32, stamp: u64, scores: [i64; SCORED]) {
        let r = self.at(slot, stamp);
        r.scores = scores;
        r.has_scores = true;
    }
}

/// The cache: a few entries, least recently used evicted.
#[derive(Debug, Default)]
pub struct ReuseCache {
    entries: Vec<Entry>,
    clock: u64,
}

impl ReuseCache {
    /// Forget everything (a scheduler-wide input changed).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Take the entry of `key` out (creating it, evicting the least recently used when
    /// full); give it back with [`ReuseCache::put`].
    pub fn take(&mut self, key: Key, capacity: usize) -> Entry {
        self.clock += 1;
        if let Some(i) = self.entries.iter().position(|e| e.key == key) {
            let mut e = self.entries.swap_remove(i);
            e.last_used = self.clock;
            return e;
        }
        if self.entries.len() >= MAX_ENTRIES {
            if let Some((i, _)) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
            {
                self.entries.swap_remove(i);
            }
        }
        Entry {
            key,
            last_used: self.clock,
            slots: vec![SlotResult::default(); capacity],
        }
    }

    pub fn put(&mut self, e: Entry) {
        self.entries.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pod: &str) -> Key {
        Key {
            profile: 1,
            active: vec![Plugin::NodeResourcesFit],
            pod: pod.to_string(),
        }
    }

    #[test]
    fn a_result_is_kept_only_at_its_stamp() {
        let mut c = ReuseCache::default();
        let mut e = c.take(key("a"), 4);
        e.store_verdict(2, 7, None);
        assert_eq!(e.verdict(2, 7), Some(None));
        assert_eq!(e.verdict(2, 8), None);
        assert_eq!(e.scores(2, 7), None);
        e.store_scores(2, 8, [1, 2, 3, 4]);
        // A new stamp drops the verdict kept at the old one.
        assert_eq!(e.verdict(2, 8), None);
        assert_eq!(e.scores(2, 8), Some(&[1, 2, 3, 4]));
        // Slots beyond the first capacity grow the entry.
        e.store_verdict(9, 1, None);
        assert_eq!(e.verdict(9, 1), Some(None));
        c.put(e);
        let e = c.take(key("a"), 4);
        assert_eq!(e.verdict(9, 1), Some(None));
        c.put(e);
        let e = c.take(key("b"), 4);
        assert_eq!(e.verdict(9, 1), None);
        c.put(e);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn the_least_recently_used_key_is_evicted() {
        let mut c = ReuseCache::default();
        for i in 0..MAX_ENTRIES {
            let mut e = c.take(key(&i.to_string()), 1);
            e.store_verdict(0, 1, None);
            c.put(e);
        }
        // Touch "0" so "1" is the oldest.
        let e = c.take(key("0"), 1);
        c.put(e);
        let e = c.take(key("new"), 1);
        c.put(e);
        assert_eq!(c.len(), MAX_ENTRIES);
        let e = c.take(key("0"), 1);
        assert_eq!(e.verdict(0, 1), Some(None));
        c.put(e);
        let e = c.take(key("1"), 1);
        assert_eq!(e.verdict(0, 1), None, "evicted");
        c.put(e);
    }
}
