//! Storage columns: what the volume kernels read per node and per claim, beside the pods.
//!
//! * Per node ([`NodeStorage`], one per slot): the node's CSINode (the attach limit of
//!   each driver, the in-tree plugins it lists as migrated, the drivers it runs) and its
//!   VolumeAttachments, as `(driver, "driver/handle")` of the CSI volumes they attach.
//!   A CSINode or VolumeAttachment may arrive before its Node (informers are not
//!   ordered), or outlive it: such entries wait in `pending` under the node name and
//!   move into the slot when one is allocated for that name.
//! * Per claim: `claim_volume`, the CSI volume a `namespace/claim` counts as on a node
//!   (NodeVolumeLimits' `getCSIDriverInfo`, resolved by Python from the PVC, its PV and
//!   its StorageClass, and kept up to date as they change); and `claim_users`, the
//!   accounted pods that name each claim in a PVC volume (VolumeRestrictions'
//!   ReadWriteOncePod check counts claims in use, as upstream's `usedPVCSet`).
//!
//! All of it is maintained incrementally: a change touches one node's entry or one
//! claim's.

use ahash::AHashMap;

/// A node's CSINode, interned.
#[derive(Clone, Debug, Default)]
pub struct CsiNode {
    /// `(driver, spec.drivers[].allocatable.count)` of the drivers that set a count.
    pub limits: Vec<(u32, i64)>,
    /// The in-tree plugins of the `storage.alpha.kubernetes.io/migrated-plugins`
    /// annotation.
    pub migrated: Vec<u32>,
    /// Every `spec.drivers[].name`.
    pub drivers: Vec<u32>,
}

/// What the volume kernels know of one node besides its labels and pods.
#[derive(Clone, Debug, Default)]
pub struct NodeStorage {
    pub csi: Option<CsiNode>,
    /// `(attacher, "attacher/handle")` of the VolumeAttachments to this node.
    pub attachments: Vec<(u32, u32)>,
}

impl NodeStorage {
    pub fn is_empty(&self) -> bool {
        self.csi.is_none() && self.attachments.is_empty()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Storage {
    /// Per slot.
    pub nodes: Vec<NodeStorage>,
    /// By node name, for nodes that have no slot.
    pub pending: AHashMap<String, NodeStorage>,
    /// `namespace/claim` → `(driver, "driver/handle")`.
    pub claim_volume: AHashMap<u32, (u32, u32)>,
    /// `namespace/claim` → the pods (slab indices) that name it in a PVC volume.
    pub claim_users: AHashMap<u32, Vec<u32>>,
}

impl Storage {
    /// The entry of node `name` at `slot` when the slot holds it, else its pending one.
    pub fn entry<'a>(&'a mut self, slot: Option<u32>, name: &str) -> &'a mut NodeStorage {
        match slot {
            Some(s) => &mut self.nodes[s as usize],
            None => self.pending.entry(name.to_owned()).or_default(),
        }
    }

    /// A slot was allocated to `name`: move its pending entry in.
    pub fn slot_allocated(&mut self, slot: u32, name: &str) {
        let i = slot as usize;
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, NodeStorage::default);
        }
        self.nodes[i] = self.pending.remove(name).unwrap_or_default();
    }

    /// A slot was released by `name`: keep what it holds for a node of that name.
    pub fn slot_released(&mut self, slot: u32, name: &str) {
        let entry = std::mem::take(&mut self.nodes[slot as usize]);
        if !entry.is_empty() {
            self.pending.insert(name.to_owned(), entry);
        }
    }

    /// Drop a pending entry that became empty.
    pub fn tidy(&mut self, name: &str) {
        if self.pending.get(name).is_some_and(NodeStorage::is_empty) {
            self.pending.remove(name);
        }
    }

    pub fn add_users(&mut self, keys: &[u32], idx: u32) {
        for &k in keys {
            self.claim_users.entry(k).or_default().push(idx);
        }
    }

    pub fn remove_users(&mut self, keys: &[u32], idx: u32) {
        for k in keys {
            if let Some(users) = self.claim_users.get_mut(k) {
                if let Some(j) = users.iter().position(|&u| u == idx) {
                    users.swap_remove(j);
                }
                if users.is_empty() {
                    self.claim_users.remove(k);
                }
            }
        }
    }
}
