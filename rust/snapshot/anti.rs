//! Existing pods' affinity terms, grouped by term.
//!
//! Every attempt must know which topology domains host a pod whose required
//! anti-affinity term matches the incoming pod (upstream's existing anti-affinity
//! counts), and scoring adds the existing pods' required and preferred terms that match
//! it. Replicas of a workload carry identical terms, so the snapshot groups equal terms
//! (by kind and weight) and keeps, per group, how many pods on each node carry it: an
//! attempt then matches each distinct term once instead of every pod's terms.
//!
//! A required anti-affinity group also keeps, once an attempt asked for it, its pods per
//! domain of the term's topology key ([`GroupDomains`]): a pod of the group added or
//! removed on a node with the key moves its domain's count, a node gaining, changing
//! or losing the key moves all of the group's pods on it (`Snapshot::views_node`). The
//! incoming pod's PreFilter then shares those counts (copied on write) instead of
//! walking the group's nodes; `Snapshot.set_domain_views(False)` turns this off.

use std::sync::Arc;

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
    /// The pods per domain of the term's key, once asked for (required anti-affinity).
    pub domains: Option<GroupDomains>,
}

/// A group's pods per value of its term's topology key, over the nodes carrying it.
#[derive(Debug, Clone, Default)]
pub struct GroupDomains {
    /// By value id (0 where none).
    pub counts: Arc<Vec<i64>>,
    /// Values with a count other than 0.
    pub nonzero: usize,
}

impl GroupDomains {
    pub(crate) fn add(&mut self, value: u32, delta: i64) {
        if delta == 0 {
            return;
        }
        let counts = Arc::make_mut(&mut self.counts);
        if counts.len() <= value as usize {
            counts.resize(value as usize + 1, 0);
        }
        let before = counts[value as usize];
        let after = before + delta;
        counts[value as usize] = after;
        match (before == 0, after == 0) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct AntiIndex {
    pub groups: Vec<AntiGroup>,
}

impl AntiIndex {
    /// Account one term of a pod on `slot` (`delta` 1 or -1); `value` is the slot's
    /// value of the term's topology key (0: none).
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        kind: TermKind,
        weight: i64,
        t: &AffinityTerm,
        slot: u32,
        value: u32,
        delta: i64,
    ) {
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
                        domains: None,
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
            if let Some(d) = g.domains.as_mut() {
                if value != 0 {
                    d.add(value, delta);
                }
            }
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
            let v = self.label(slot, t.topology_key);
            self.anti_index
                .update(TermKind::RequiredAffinity, 0, t, slot, v, delta);
        }
        for t in &aff.anti_required {
            let v = self.label(slot, t.topology_key);
            self.anti_index
                .update(TermKind::RequiredAnti, 0, t, slot, v, delta);
        }
        for (w, t) in &aff.affinity_preferred {
            let v = self.label(slot, t.topology_key);
            self.anti_index
                .update(TermKind::PreferredAffinity, *w, t, slot, v, delta);
        }
        for (w, t) in &aff.anti_preferred {
            let v = self.label(slot, t.topology_key);
            self.anti_index
                .update(TermKind::PreferredAnti, *w, t, slot, v, delta);
        }
    }

    /// Group `gi`'s pods per domain of its term's key (built on first use).
    pub fn group_domains(&mut self, gi: usize) -> (Arc<Vec<i64>>, usize) {
        if self.anti_index.groups[gi].domains.is_none() {
            let g = &self.anti_index.groups[gi];
            let mut d = GroupDomains::default();
            for (&slot, &c) in &g.per_slot {
                let v = self.label(slot, g.term.topology_key);
                if v != 0 {
                    d.add(v, c);
                }
            }
            self.anti_index.groups[gi].domains = Some(d);
        }
        let d = self.anti_index.groups[gi]
            .domains
            .as_ref()
            .expect("built above");
        (Arc::clone(&d.counts), d.nonzero)
    }

    /// Move node `slot`'s pods of every group with domains in (`sign` 1) or out (-1).
    pub(crate) fn anti_domains_node(&mut self, slot: u32, sign: i64) {
        let mut groups = std::mem::take(&mut self.anti_index.groups);
        for g in &mut groups {
            if let Some(d) = g.domains.as_mut() {
                let c = g.per_slot.get(&slot).copied().unwrap_or(0);
                let v = self.label(slot, g.term.topology_key);
                if c != 0 && v != 0 {
                    d.add(v, sign * c);
                }
            }
        }
        self.anti_index.groups = groups;
    }

    /// Forget every group's domains.
    pub(crate) fn clear_anti_domains(&mut self) {
        for g in &mut self.anti_index.groups {
            g.domains = None;
        }
    }
}
