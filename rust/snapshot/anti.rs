//! Existing pods' affinity terms, grouped by term.
//!
//! Every attempt must know which topology domains host a pod whose required
//! anti-affinity term matches the incoming pod (upstream's existing anti-affinity
//! counts), and scoring adds the existing pods' required and preferred terms that match
//! it. Replicas of a workload carry identical terms, so the snapshot groups equal terms
//! (by kind and weight) and keeps, per group, how many pods on each node carry it: an
//! attempt then matches each distinct term once instead of every pod's terms.

use ahash::AHashMap;

use crate::plugins::inter_pod_affinity::AffinityTerm;
use crate::snapshot::Snapshot;

/// Which list of the owning pod a term comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermKind {
    RequiredAffinity,
    RequiredAnti,
    PreferredAffinity,
    PreferredAnti,
}

#[derive(Debug, Clone)]
pub struct AntiGroup {
    pub kind: TermKind,
    /// The preferred term's weight (0 for required terms).
    pub weight: i64,
    pub term: AffinityTerm,
    /// Node slot → pods on it carrying the term.
    pub per_slot: AHashMap<u32, i64>,
    pub total: i64,
}

#[derive(Debug, Clone, Default)]
pub struct AntiIndex {
    pub groups: Vec<AntiGroup>,
}

impl AntiIndex {
    /// Account one term of a pod on `slot` (`delta` 1 or -1).
    pub fn update(&mut self, kind: TermKind, weight: i64, t: &AffinityTerm, slot: u32, delta: i64) {
        {
            let found = self
                .groups
                .iter()
                .position(|g| g.kind == kind && g.weight == weight && g.term == *t);
            let g = match found {
                Some(i) => &mut self.groups[i],
                None => {
                    self.groups.push(AntiGroup {
                        kind,
                        weight,
                        term: t.clone(),
                        per_slot: AHashMap::new(),
                        total: 0,
                    });
                    self.groups.last_mut().expect("just pushed")
                }
            };
            let c = g.per_slot.entry(slot).or_insert(0);
            *c += delta;
            if *c == 0 {
                g.per_slot.remove(&slot);
            }
            g.total += delta;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.total == 0)
    }

    /// The live groups of `kind`.
    pub fn of(&self, kind: TermKind) -> impl Iterator<Item = &AntiGroup> {
        self.groups
            .iter()
            .filter(move |g| g.kind == kind && g.total != 0)
    }
}

impl Snapshot {
    pub(crate) fn index_anti(&mut self, idx: u32, delta: i64) {
        let Some(rec) = self.pods[idx as usize].as_ref() else {
            return;
        };
        let Some(aff) = rec.affinity.clone() else {
            return;
        };
        let slot = rec.slot;
        for t in &aff.affinity_required {
            self.anti_index
                .update(TermKind::RequiredAffinity, 0, t, slot, delta);
        }
        for t in &aff.anti_required {
            self.anti_index
                .update(TermKind::RequiredAnti, 0, t, slot, delta);
        }
        for (w, t) in &aff.affinity_preferred {
            self.anti_index
                .update(TermKind::PreferredAffinity, *w, t, slot, delta);
        }
        for (w, t) in &aff.anti_preferred {
            self.anti_index
                .update(TermKind::PreferredAnti, *w, t, slot, delta);
        }
    }
}
