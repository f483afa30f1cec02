//! VolumeRestrictions: in-tree disks that cannot be mounted twice, and
//! ReadWriteOncePod claims already in use.
//!
//! PreFilter (Python looks the pod's claims up; a missing claim rejects the pod there):
//! the pod's ReadWriteOncePod claims arrive in the request, and the kernel counts how
//! many of them some pod accounted on a node uses (upstream's `conflictingPVCRefCount`
//! over `usedPVCSet`, each claim counted once). With no disk to check and no such
//! claim in use, the plugin is skipped.
//!
//! Filter: a GCE PD, AWS EBS, iSCSI or RBD volume of the pod that conflicts with a
//! volume of a pod on the node fails with "node(s) had no available disk"; otherwise a
//! ReadWriteOncePod claim in use fails with the ReadWriteOncePod reason. Both are
//! Unschedulable: evicting the other pod helps, which is why AddPod/RemovePod
//! (nominated pods, preemption's victims) move the count by the number of the pod's
//! volumes that name one of the claims (by claim name, as upstream).

use crate::pod::CompiledPod;
use crate::snapshot::{PodRecord, Snapshot};
use crate::volume::{DiskRec, VolumeRestrictionsRequest};

pub const NAME: &str = "VolumeRestrictions";
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
pub const ERR_REASON_RWOP_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

const DETAIL_DISK: u64 = 0;
const DETAIL_RWOP: u64 = 1;

/// Per-pod state; absent when the plugin is skipped.
#[derive(Clone, Debug, Default)]
pub struct RestrictionsState {
    /// The pod's disks that need a conflict check.
    pub disks: Vec<DiskRec>,
    /// Names of the pod's claims with the ReadWriteOncePod access mode.
    pub rwop: Vec<u32>,
    /// How many of them scheduled pods use, moved by AddPod/RemovePod.
    pub conflicts: i64,
}

pub fn prefilter(
    snap: &mut Snapshot,
    pod: &CompiledPod,
    req: &VolumeRestrictionsRequest,
) -> Option<RestrictionsState> {
    let disks: Vec<DiskRec> = pod
        .volumes
        .as_ref()
        .map(|v| {
            v.disks
                .iter()
                .map(|d| d.intern(&mut snap.interner))
                .collect()
        })
        .unwrap_or_default();
    let mut rwop = Vec::with_capacity(req.rwop_claims.len());
    let mut conflicts = 0;
    for claim in &req.rwop_claims {
        let name = snap.interner.intern(claim);
        if rwop.contains(&name) {
            continue; // a set upstream
        }
        rwop.push(name);
        let key = snap.interner.intern(&format!("{}/{claim}", pod.namespace));
        if claim_in_use(snap, key) {
            conflicts += 1;
        }
    }
    (!disks.is_empty() || conflicts != 0).then_some(RestrictionsState {
        disks,
        rwop,
        conflicts,
    })
}

/// Whether a pod accounted on a node (not a node-less slot) uses claim `key`.
fn claim_in_use(snap: &Snapshot, key: u32) -> bool {
    snap.storage.claim_users.get(&key).is_some_and(|users| {
        users.iter().any(|&idx| {
            snap.pods[idx as usize]
                .as_ref()
                .is_some_and(|r| snap.has_node[r.slot as usize])
        })
    })
}

/// How many of `rec`'s volumes name one of the ReadWriteOncePod claims (upstream
/// `conflictingPVCRefCountForPod`).
pub fn refs(st: &RestrictionsState, rec: &PodRecord) -> i64 {
    rec.volumes.as_ref().map_or(0, |v| {
        v.claims.iter().filter(|c| st.rwop.contains(c)).count() as i64
    })
}

fn disk_conflict(st: &RestrictionsState, rec: &PodRecord) -> bool {
    rec.volumes.as_ref().is_some_and(|v| {
        st.disks
            .iter()
            .any(|d| v.disks.iter().any(|e| d.conflicts(e)))
    })
}

/// Filter on `slot`, with the pods `added` counted on the node too (nominated pods):
/// `None` when the pod fits, else `(unresolvable, detail)`.
pub fn filter<'a>(
    snap: &'a Snapshot,
    st: &RestrictionsState,
    slot: u32,
    added: impl Iterator<Item = &'a PodRecord> + Clone,
) -> Option<(bool, u64)> {
    if !st.disks.is_empty() {
        let on_node = snap.node_pods[slot as usize]
            .iter()
            .filter_map(|&idx| snap.pods[idx as usize].as_ref());
        if on_node.chain(added.clone()).any(|r| disk_conflict(st, r)) {
            return Some((false, DETAIL_DISK));
        }
    }
    let conflicts = st.conflicts + added.map(|r| refs(st, r)).sum::<i64>();
    (conflicts > 0).then_some((false, DETAIL_RWOP))
}

pub fn reason(detail: u64) -> &'static str {
    if detail == DETAIL_DISK {
        ERR_REASON_DISK_CONFLICT
    } else {
        ERR_REASON_RWOP_CONFLICT
    }
}
