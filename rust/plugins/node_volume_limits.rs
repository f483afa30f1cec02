//! NodeVolumeLimits (upstream's CSILimits): a node's CSI drivers attach at most the
//! number of volumes its CSINode allows.
//!
//! PreFilter (Python): the pod's attachable volumes as `(driver, "driver/handle")`: its
//! claims resolved through their PV (a CSI source, or an in-tree source that migrates
//! to CSI) or, unbound, their StorageClass's provisioner (with a handle made up from
//! the claim, as upstream), and its in-tree inline volumes that migrate to CSI. Errors
//! met on the way are kept in volume order, for the Filter to report.
//!
//! Filter on a node: the first lookup error that applies is the node's status; a pod
//! with no attachable volume fits; a node whose CSINode sets no limit fits. Otherwise
//! the volumes already attached are those of the pods on the node (resolved the same
//! way, from the snapshot's claim table) and of its VolumeAttachments, each unique
//! volume counted once; a volume of the pod already attached does not count again.
//! If the pod's new volumes of a driver would take it past the limit: "node(s) exceed
//! max volume count", Unschedulable (evicting pods frees attachments). The snapshot
//! keeps each node's attached volumes up to date (`Storage::pod_volumes`), so a node
//! costs a look at its few volumes, not a walk over its pods.
//!
//! Upstream differences, on objects no controller produces: a pod on the node whose
//! inline volume cannot be translated, or whose generic ephemeral claim is not its own,
//! is not counted (upstream fails that node's Filter with an error).

use std::borrow::Cow;

use crate::plugins::DETAIL_ERROR;
use crate::snapshot::{PodRecord, Snapshot};
use crate::volume::{unique_name, NodeVolumeLimitsRequest};

pub const NAME: &str = "NodeVolumeLimits";
pub const ERR_REASON_MAX_VOLUME_COUNT: &str = "node(s) exceed max volume count";

#[derive(Clone, Debug, Default)]
pub struct LimitsState {
    /// `(driver, unique name)` of the pod's volumes, each unique name once.
    pub new: Vec<(u32, u32)>,
    /// `(needs_csi_node, unresolvable, message)` in volume order.
    pub errors: Vec<(bool, bool, String)>,
}

/// `None` when the plugin has nothing to check for the pod.
pub fn prefilter(snap: &mut Snapshot, req: &NodeVolumeLimitsRequest) -> Option<LimitsState> {
    let mut new: Vec<(u32, u32)> = Vec::with_capacity(req.volumes.len());
    for (driver, handle) in &req.volumes {
        let d = snap.interner.intern(driver);
        let u = snap.interner.intern(&unique_name(driver, handle));
        if !new.iter().any(|&(_, x)| x == u) {
            new.push((d, u));
        }
    }
    (!new.is_empty() || !req.errors.is_empty()).then(|| LimitsState {
        new,
        errors: req.errors.clone(),
    })
}

fn first_error(st: &LimitsState, has_csi_node: bool) -> Option<usize> {
    st.errors
        .iter()
        .position(|&(needs_csi_node, _, _)| !needs_csi_node || has_csi_node)
}

fn push_unique(into: &mut Vec<(u32, u32)>, v: (u32, u32)) {
    if !into.iter().any(|&(_, u)| u == v.1) {
        into.push(v);
    }
}

/// The CSI volumes pod `rec` has attached: its resolved claims and its migrated
/// inline volumes.
fn attached_by(snap: &Snapshot, rec: &PodRecord, into: &mut Vec<(u32, u32)>) {
    let Some(v) = &rec.volumes else { return };
    for k in &v.limit_keys {
        if let Some(&dv) = snap.storage.claim_volume.get(k) {
            push_unique(into, dv);
        }
    }
    for &dv in &v.inline {
        push_unique(into, dv);
    }
}

/// The unique volumes the node's pods attach (the snapshot keeps them per slot,
/// `(driver, unique, pods)`), and those of the `added` pods (nominated, counted once
/// each with a pod count of 0).
fn attached_on<'a>(
    snap: &'a Snapshot,
    slot: u32,
    added: impl Iterator<Item = &'a PodRecord>,
) -> Cow<'a, [(u32, u32, u32)]> {
    static EMPTY: Vec<(u32, u32, u32)> = Vec::new();
    let base = snap
        .storage
        .pod_volumes
        .get(slot as usize)
        .unwrap_or(&EMPTY);
    let mut extra: Vec<(u32, u32)> = Vec::new();
    for rec in added {
        attached_by(snap, rec, &mut extra);
    }
    extra.retain(|&(_, u)| !base.iter().any(|&(_, x, _)| x == u));
    if extra.is_empty() {
        return Cow::Borrowed(base.as_slice());
    }
    let mut out = base.clone();
    out.extend(extra.into_iter().map(|(d, u)| (d, u, 0)));
    Cow::Owned(out)
}

/// Filter on `slot` with the pods `added` counted on the node too (nominated pods):
/// `None` when the pod fits, else `(unresolvable, detail)`.
pub fn filter<'a>(
    snap: &'a Snapshot,
    st: &LimitsState,
    slot: u32,
    added: impl Iterator<Item = &'a PodRecord>,
) -> Option<(bool, u64)> {
    let storage = &snap.storage.nodes[slot as usize];
    if let Some(i) = first_error(st, storage.csi.is_some()) {
        return Some(if st.errors[i].1 {
            (true, 1 + i as u64)
        } else {
            (false, DETAIL_ERROR)
        });
    }
    if st.new.is_empty() {
        return None;
    }
    let csi = storage.csi.as_ref()?;
    if csi.limits.is_empty() {
        return None;
    }
    let attached = attached_on(snap, slot, added);
    let count_of = |driver: u32| -> i64 {
        let from_pods = attached.iter().filter(|&&(d, _, _)| d == driver).count();
        let mut seen: Vec<u32> = Vec::new();
        for &(d, u) in &storage.attachments {
            if d == driver && !attached.iter().any(|&(_, x, _)| x == u) && !seen.contains(&u) {
                seen.push(u);
            }
        }
        (from_pods + seen.len()) as i64
    };
    let mut drivers: Vec<(u32, i64)> = Vec::new();
    for &(d, u) in &st.new {
        if attached.iter().any(|&(_, x, _)| x == u) {
            continue;
        }
        match drivers.iter_mut().find(|(x, _)| *x == d) {
            Some((_, n)) => *n += 1,
            None => drivers.push((d, 1)),
        }
    }
    for (driver, count) in drivers {
        if let Some(&(_, limit)) = csi.limits.iter().find(|&&(d, _)| d == driver) {
            if count_of(driver) + count > limit {
                return Some((false, 0));
            }
        }
    }
    None
}

pub fn reasons(st: &LimitsState, detail: u64) -> Vec<String> {
    if detail == 0 {
        return vec![ERR_REASON_MAX_VOLUME_COUNT.to_string()];
    }
    st.errors
        .get(detail as usize - 1)
        .map(|e| vec![e.2.clone()])
        .unwrap_or_default()
}

/// The message of the error `filter` returned for `slot`.
pub fn error_message(snap: &Snapshot, st: &LimitsState, slot: u32) -> String {
    let has = snap.storage.nodes[slot as usize].csi.is_some();
    first_error(st, has)
        .map(|i| st.errors[i].2.clone())
        .unwrap_or_default()
}
