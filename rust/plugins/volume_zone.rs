//! VolumeZone: the zone and region labels of the pod's bound PVs must match the node's.
//!
//! PreFilter (Python): the topology labels (`failure-domain.beta.kubernetes.io/zone`
//! and `/region`, `topology.kubernetes.io/zone` and `/region`) of the PVs bound to the
//! pod's claims, each a set of values (`a__b` lists several); lookups that fail reject
//! the pod there. No such label: the plugin is skipped.
//!
//! Filter: a node with none of the four labels fits (single-zone clusters); otherwise
//! each PV label must be on the node (a beta key also matches the node's GA key) with
//! one of the PV's values, else "node(s) had no available volume zone",
//! UnschedulableAndUnresolvable.

use crate::snapshot::Snapshot;
use crate::volume::VolumeZoneRequest;

pub const NAME: &str = "VolumeZone";
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

pub const LABEL_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";

/// One PV topology label: its key, the GA key a beta key falls back to, the values.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub key: u32,
    pub ga_key: u32,
    pub values: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
pub struct ZoneState {
    pub topologies: Vec<Topology>,
    /// The four topology label keys, interned.
    pub node_keys: [u32; 4],
}

fn ga(key: &str) -> &str {
    match key {
        LABEL_BETA_REGION => LABEL_REGION,
        LABEL_BETA_ZONE => LABEL_ZONE,
        other => other,
    }
}

/// `None` when the plugin is skipped (no topology label on the pod's PVs).
pub fn prefilter(snap: &mut Snapshot, req: &VolumeZoneRequest) -> Option<ZoneState> {
    if req.topologies.is_empty() {
        return None;
    }
    let i = &mut snap.interner;
    let topologies = req
        .topologies
        .iter()
        .map(|(key, values)| Topology {
            key: i.intern(key),
            ga_key: i.intern(ga(key)),
            values: values.iter().map(|v| i.intern(v)).collect(),
        })
        .collect();
    let node_keys = [
        i.intern(LABEL_BETA_ZONE),
        i.intern(LABEL_BETA_REGION),
        i.intern(LABEL_ZONE),
        i.intern(LABEL_REGION),
    ];
    Some(ZoneState {
        topologies,
        node_keys,
    })
}

pub fn filter(snap: &Snapshot, st: &ZoneState, slot: u32) -> Option<(bool, u64)> {
    if st.node_keys.iter().all(|&k| snap.label(slot, k) == 0) {
        return None;
    }
    for t in &st.topologies {
        let mut v = snap.label(slot, t.key);
        if v == 0 {
            v = snap.label(slot, t.ga_key);
        }
        if v == 0 || !t.values.contains(&v) {
            return Some((true, 0));
        }
    }
    None
}
