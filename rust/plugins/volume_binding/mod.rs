//! VolumeBinding's node checks: upstream `FindPodVolumes` for every node, and the
//! storage capacity score.
//!
//! The Python plugin (`ksched.plugins.volume_binding`) does everything that reads API
//! objects: PreFilter splits the pod's claims into bound ones (with their PVs) and
//! unbound WaitForFirstConsumer ones (with the PVs that could fit each whatever the
//! node, and whether and under which topology and capacity constraints its class can
//! provision it), Reserve assumes the chosen PVs and claims, PreBind writes them. What
//! depends on the node is here, per node:
//!
//! 1. each bound claim's PV must exist and its node affinity match the node (after CSI
//!    translation when the node's CSINode lists the PV's in-tree plugin as migrated);
//! 2. an unbound claim already annotated `volume.kubernetes.io/selected-node` fits only
//!    its node;
//! 3. the other unbound claims, smallest request first, take a PV: the one pre-bound to
//!    the claim decides alone, else the smallest PV whose node affinity matches and that
//!    an earlier claim of the pod did not take;
//! 4. the claims left (and the annotated ones) must be provisionable on the node: the
//!    class's `allowedTopologies` match, and for drivers that track capacity some
//!    CSIStorageCapacity of the class big enough for the claim is accessible.
//!
//! The reasons, all UnschedulableAndUnresolvable, as upstream orders them: PV node
//! affinity conflict, no PV to bind, not enough free storage, PV missing. The same
//! walk produces the node's plan (which PV each claim binds, which capacity each
//! provisioned claim uses), read by Score and, for the chosen node, by Reserve.
//!
//! Score (only with `StorageCapacityScoring`, i.e. a `shape` in the args): per storage
//! class, the requested share of the chosen PVs' capacity (static bindings) or of the
//! node's capacity (dynamic provisioning), through the broken-linear shape, averaged.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, get};
use crate::plugins::node_affinity::{NodeReq, NodeTerm};
use crate::plugins::node_resources_fit::broken_linear;
use crate::plugins::DETAIL_ERROR;
use crate::selector::Selector;
use crate::snapshot::Snapshot;
use crate::volume::{Affinity, Candidate, Provision, VolumeBindingRequest};

pub const NAME: &str = "VolumeBinding";
pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
pub const ERR_REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

const NODE_CONFLICT: u64 = 1;
const BIND_CONFLICT: u64 = 2;
const NOT_ENOUGH_SPACE: u64 = 4;
const PV_NOT_EXIST: u64 = 8;

/// `MaxNodeScore / MaxCustomPriorityScore`: shape scores are given on 0-10.
const SHAPE_SCALE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

/// `VolumeBindingArgs` as the kernels read them.
#[derive(Clone, Debug, Default)]
pub struct VolumeBindingArgs {
    /// `(utilization, score × 10)`; empty: no storage capacity scoring.
    pub shape: Vec<(i64, i64)>,
}

impl VolumeBindingArgs {
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<VolumeBindingArgs> {
        let mut a = VolumeBindingArgs::default();
        if let Some(shape) = get(d, "shape")? {
            let shape = args::as_list(&shape, "VolumeBindingArgs.shape")?;
            for (i, p) in shape.iter().enumerate() {
                let path = format!("VolumeBindingArgs.shape[{i}]");
                let p = args::as_dict(&p, &path)?;
                let u = match get(&p, "utilization")? {
                    Some(u) => args::as_i64(&u, &format!("{path}.utilization"))?,
                    None => 0,
                };
                let s = match get(&p, "score")? {
                    Some(s) => args::as_i64(&s, &format!("{path}.score"))?,
                    None => 0,
                };
                a.shape.push((u, s * SHAPE_SCALE));
            }
        }
        Ok(a)
    }
}

/// A PV affinity compiled for the snapshot. PV affinity is checked against the node's
/// labels only: upstream builds a node with no name, and node fields are only compared
/// when the node has some, so `matchFields` requirements are ignored (a term of
/// `matchFields` alone matches every node).
#[derive(Clone, Debug)]
struct PvAffinity(Option<Vec<NodeTerm>>);

impl PvAffinity {
    fn compile(a: &Affinity, snap: &mut Snapshot) -> PvAffinity {
        PvAffinity(a.as_ref().map(|terms| {
            terms
                .iter()
                .map(|t| {
                    let mut c = NodeTerm::compile(t, snap);
                    c.reqs.retain(|r| !matches!(r, NodeReq::Name { .. }));
                    c
                })
                .collect()
        }))
    }

    #[inline]
    fn matches(&self, snap: &Snapshot, slot: u32) -> bool {
        match &self.0 {
            None => true,
            Some(terms) => terms.iter().any(|t| t.matches(snap, slot)),
        }
    }
}

#[derive(Clone, Debug)]
struct BoundClaim {
    affinity: PvAffinity,
    /// `(in-tree plugin, translated affinity or error)`.
    migrated: Option<(u32, Result<PvAffinity, String>)>,
}

#[derive(Clone, Debug)]
struct Cand {
    pv: u32,
    affinity: PvAffinity,
}

impl Cand {
    fn compile(c: &Candidate, snap: &mut Snapshot) -> Cand {
        Cand {
            pv: c.pv,
            affinity: PvAffinity::compile(&c.affinity, snap),
        }
    }
}

/// An `allowedTopologies` term compiled: `(label key, values)` requirements, `None` for
/// a term that matches no node.
type Topology = Option<Vec<(u32, Vec<u32>)>>;

#[derive(Clone, Debug)]
enum Prov {
    Unsupported,
    Error(String),
    Supported {
        /// `allowedTopologies` terms as `(key, values)` requirements; `None` terms
        /// match nothing.
        topologies: Vec<Topology>,
        capacity: Option<Vec<(u32, Selector)>>,
    },
}

#[derive(Clone, Debug)]
struct Delay {
    selected: Option<String>,
    prebound: Option<Cand>,
    candidates: Vec<Cand>,
    provision: Prov,
    request: i64,
    class: u32,
}

/// Per-pod state.
#[derive(Clone, Debug, Default)]
pub struct BindingState {
    bound: Vec<Option<BoundClaim>>,
    delay: Vec<Delay>,
    match_order: Vec<u32>,
    /// `(spec.storageClassName, capacity)` of the candidate PVs.
    pvs: Vec<(u32, i64)>,
    capacities: Vec<i64>,
}

/// One node's walk: which PV each matched claim takes and what each provisioned claim
/// uses, or why the node does not fit.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// `(claim index in delay, pv index)`.
    pub bindings: Vec<(u32, u32)>,
    /// `(claim index in delay, capacity index)` in upstream's order (annotated claims,
    /// then the unmatched ones).
    pub provisions: Vec<(u32, Option<u32>)>,
    /// Reason bits; 0: the node fits.
    pub reasons: u64,
    pub error: Option<String>,
}

pub fn prefilter(snap: &mut Snapshot, req: &VolumeBindingRequest) -> BindingState {
    let bound = req
        .bound
        .iter()
        .map(|b| {
            b.as_ref().map(|b| BoundClaim {
                affinity: PvAffinity::compile(&b.affinity, snap),
                migrated: b.migrated.as_ref().map(|(plugin, translated)| {
                    let plugin = snap.interner.intern(plugin);
                    let t = match translated {
                        Ok(a) => Ok(PvAffinity::compile(a, snap)),
                        Err(e) => Err(e.clone()),
                    };
                    (plugin, t)
                }),
            })
        })
        .collect();
    let delay = req
        .delay
        .iter()
        .map(|c| Delay {
            selected: c.selected_node.clone(),
            prebound: c.prebound.as_ref().map(|p| Cand::compile(p, snap)),
            candidates: c
                .candidates
                .iter()
                .map(|p| Cand::compile(p, snap))
                .collect(),
            provision: match &c.provision {
                Provision::Unsupported => Prov::Unsupported,
                Provision::Error(e) => Prov::Error(e.clone()),
                Provision::Supported {
                    topologies,
                    capacity,
                } => Prov::Supported {
                    topologies: topologies
                        .iter()
                        .map(|t| {
                            t.as_ref().map(|reqs| {
                                reqs.iter()
                                    .map(|(k, vs)| {
                                        (
                                            snap.interner.intern(k),
                                            vs.iter().map(|v| snap.interner.intern(v)).collect(),
                                        )
                                    })
                                    .collect()
                            })
                        })
                        .collect(),
                    capacity: capacity.as_ref().map(|cs| {
                        cs.iter()
                            .map(|(i, sel)| {
                                let s = match sel {
                                    Some(spec) => Selector::compile(Some(spec), &mut snap.interner),
                                    None => Selector::Nothing,
                                };
                                (*i, s)
                            })
                            .collect()
                    }),
                },
            },
            request: c.request,
            class: snap.interner.intern(&c.class),
        })
        .collect();
    let pvs = req
        .pvs
        .iter()
        .map(|(_, class, cap)| (snap.interner.intern(class), *cap))
        .collect();
    BindingState {
        bound,
        delay,
        match_order: req.match_order.clone(),
        pvs,
        capacities: req.capacities.clone(),
    }
}

fn topology_matches(snap: &Snapshot, terms: &[Topology], slot: u32) -> bool {
    terms.is_empty()
        || terms.iter().any(|t| {
            t.as_ref().is_some_and(|reqs| {
                reqs.iter().all(|(k, vs)| {
                    let v = snap.label(slot, *k);
                    v != 0 && vs.contains(&v)
                })
            })
        })
}

/// Upstream `FindPodVolumes` on one node.
pub fn plan(snap: &Snapshot, st: &BindingState, slot: u32) -> Plan {
    let mut p = Plan::default();
    let storage = &snap.storage.nodes[slot as usize];
    let migrated = |plugin: u32| {
        storage
            .csi
            .as_ref()
            .is_some_and(|c| c.migrated.contains(&plugin))
    };
    // Bound claims: the first missing PV or mismatching affinity ends the check.
    for b in &st.bound {
        let Some(b) = b else {
            p.reasons |= PV_NOT_EXIST;
            break;
        };
        let affinity = match &b.migrated {
            Some((plugin, translated)) if migrated(*plugin) => match translated {
                Ok(a) => a,
                Err(e) => {
                    p.error = Some(e.clone());
                    return p;
                }
            },
            _ => &b.affinity,
        };
        if !affinity.matches(snap, slot) {
            p.reasons |= NODE_CONFLICT;
            break;
        }
    }
    if st.delay.is_empty() {
        return p;
    }
    let node_name = &*snap.names[slot as usize];
    let mut provision: Vec<u32> = Vec::new();
    for (i, c) in st.delay.iter().enumerate() {
        if let Some(sel) = &c.selected {
            if sel != node_name {
                p.reasons |= BIND_CONFLICT;
                return p;
            }
            provision.push(i as u32);
        }
    }
    // Claims no PV fits are provisioned instead: checkVolumeProvisions alone decides
    // whether unbound claims are satisfied.
    for &ci in &st.match_order {
        let c = &st.delay[ci as usize];
        let chosen = match &c.prebound {
            Some(pb) => pb.affinity.matches(snap, slot).then_some(pb.pv),
            None => c
                .candidates
                .iter()
                .find(|cand| {
                    !p.bindings.iter().any(|&(_, pv)| pv == cand.pv)
                        && cand.affinity.matches(snap, slot)
                })
                .map(|cand| cand.pv),
        };
        match chosen {
            Some(pv) => p.bindings.push((ci, pv)),
            None => provision.push(ci),
        }
    }
    for &ci in &provision {
        let c = &st.delay[ci as usize];
        match &c.provision {
            Prov::Unsupported => {
                p.reasons |= BIND_CONFLICT;
                p.provisions.clear();
                return p;
            }
            Prov::Error(e) => {
                p.error = Some(e.clone());
                return p;
            }
            Prov::Supported {
                topologies,
                capacity,
            } => {
                if !topology_matches(snap, topologies, slot) {
                    p.reasons |= BIND_CONFLICT;
                    p.provisions.clear();
                    return p;
                }
                let cap = match capacity {
                    None => None,
                    Some(cs) => {
                        let labels = &snap.node_labels[slot as usize];
                        match cs.iter().find(|(_, sel)| sel.matches(labels)) {
                            Some(&(i, _)) => Some(i),
                            None => {
                                p.reasons |= NOT_ENOUGH_SPACE;
                                p.provisions.clear();
                                return p;
                            }
                        }
                    }
                };
                p.provisions.push((ci, cap));
            }
        }
    }
    p
}

/// Filter on `slot`: `None` when the pod fits, else `(unresolvable, detail)`.
pub fn filter(snap: &Snapshot, st: &BindingState, slot: u32) -> Option<(bool, u64)> {
    let p = plan(snap, st, slot);
    if p.error.is_some() {
        return Some((false, DETAIL_ERROR));
    }
    (p.reasons != 0).then_some((true, p.reasons))
}

pub fn reasons(detail: u64) -> Vec<String> {
    [
        (NODE_CONFLICT, ERR_REASON_NODE_CONFLICT),
        (BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
        (NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE),
        (PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST),
    ]
    .iter()
    .filter(|(bit, _)| detail & bit != 0)
    .map(|(_, r)| r.to_string())
    .collect()
}

pub fn error_message(snap: &Snapshot, st: &BindingState, slot: u32) -> String {
    plan(snap, st, slot).error.unwrap_or_default()
}

/// The storage capacity score of a feasible node (0 without a shape).
pub fn score(snap: &Snapshot, st: &BindingState, args: &VolumeBindingArgs, slot: u32) -> i64 {
    if args.shape.is_empty() || st.delay.is_empty() {
        return 0;
    }
    let p = plan(snap, st, slot);
    // (class, requested, capacity)
    let mut classes: Vec<(u32, i64, i64)> = Vec::new();
    fn at(classes: &mut Vec<(u32, i64, i64)>, class: u32) -> usize {
        match classes.iter().position(|c| c.0 == class) {
            Some(i) => i,
            None => {
                classes.push((class, 0, 0));
                classes.len() - 1
            }
        }
    }
    if !p.bindings.is_empty() {
        for &(ci, pv) in &p.bindings {
            let (class, capacity) = st.pvs[pv as usize];
            let i = at(&mut classes, class);
            classes[i].1 += st.delay[ci as usize].request;
            classes[i].2 += capacity;
        }
    } else {
        for &(ci, cap) in &p.provisions {
            let Some(cap) = cap else { continue };
            let c = &st.delay[ci as usize];
            let i = at(&mut classes, c.class);
            // Assigned, not added: two claims of one class share the node's capacity.
            classes[i].2 = st.capacities[cap as usize];
            classes[i].1 += c.request;
        }
    }
    if classes.is_empty() {
        return 0;
    }
    let total: i64 = classes
        .iter()
        .map(|&(_, requested, capacity)| {
            if capacity == 0 || requested > capacity {
                broken_linear(&args.shape, MAX_UTILIZATION)
            } else {
                broken_linear(&args.shape, requested * MAX_UTILIZATION / capacity)
            }
        })
        .sum();
    // math.Round: half away from zero.
    let n = classes.len() as f64;
    (total as f64 / n).round() as i64
}
