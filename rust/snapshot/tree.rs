//! Node iteration order: zones interleaved, as kube-scheduler's `nodeTree` lists nodes.
//!
//! Upstream groups nodes by zone (region + zone labels) and lists them round-robin across
//! zones: the first node of every zone, then the second of every zone, and so on. With
//! `percentageOfNodesToScore` sampling, this order is what spreads the examined nodes over
//! zones, so ksched keeps the same order. Zones keep their insertion order, nodes keep their
//! insertion order within a zone, and a zone that loses its last node is forgotten.

use ahash::AHashMap;

pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";
pub const LABEL_ZONE_LEGACY: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_REGION_LEGACY: &str = "failure-domain.beta.kubernetes.io/region";

/// The zone key of a node, `region + ":\0:" + zone`, or "" when it has neither label.
pub fn zone_key<'a>(label: impl Fn(&str) -> Option<&'a str>) -> String {
    let zone = label(LABEL_ZONE)
        .or_else(|| label(LABEL_ZONE_LEGACY))
        .unwrap_or("");
    let region = label(LABEL_REGION)
        .or_else(|| label(LABEL_REGION_LEGACY))
        .unwrap_or("");
    if zone.is_empty() && region.is_empty() {
        return String::new();
    }
    format!("{region}:\x00:{zone}")
}

#[derive(Default, Debug, Clone)]
pub struct NodeTree {
    zones: Vec<(String, Vec<u32>)>,
    zone_of: AHashMap<u32, String>,
    len: usize,
}

impl NodeTree {
    /// Add `slot` to `zone` (moving it if it was in another). Returns whether the
    /// listing changed.
    pub fn add(&mut self, slot: u32, zone: String) -> bool {
        if let Some(existing) = self.zone_of.get(&slot) {
            if *existing == zone {
                return false;
            }
            self.remove(slot);
        }
        match self.zones.iter_mut().find(|(z, _)| *z == zone) {
            Some((_, slots)) => slots.push(slot),
            None => self.zones.push((zone.clone(), vec![slot])),
        }
        self.zone_of.insert(slot, zone);
        self.len += 1;
        true
    }

    pub fn remove(&mut self, slot: u32) {
        let Some(zone) = self.zone_of.remove(&slot) else {
            return;
        };
        if let Some(i) = self.zones.iter().position(|(z, _)| *z == zone) {
            let slots = &mut self.zones[i].1;
            if let Some(j) = slots.iter().position(|&s| s == slot) {
                slots.remove(j);
                self.len -= 1;
            }
            if slots.is_empty() {
                self.zones.remove(i);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All nodes, zones interleaved.
    pub fn list(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len);
        let mut depth = 0;
        while out.len() < self.len {
            for (_, slots) in &self.zones {
                if let Some(&s) = slots.get(depth) {
                    out.push(s);
                }
            }
            depth += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaves_zones_in_insertion_order() {
        let mut t = NodeTree::default();
        for (slot, zone) in [(0, "a"), (1, "a"), (2, "b"), (3, "a"), (4, "c")] {
            t.add(slot, zone.to_string());
        }
        assert_eq!(t.list(), vec![0, 2, 4, 1, 3]);
        t.remove(2);
        assert_eq!(t.list(), vec![0, 4, 1, 3]);
        t.add(1, "c".to_string());
        assert_eq!(t.list(), vec![0, 4, 3, 1]);
    }

    #[test]
    fn zone_key_uses_region_and_zone() {
        let labels = [(LABEL_ZONE, "z1"), (LABEL_REGION, "r1")];
        let get = |k: &str| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| *v);
        assert_eq!(zone_key(get), "r1:\x00:z1");
        assert_eq!(zone_key(|_| None), "");
    }
}
