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
//! * Per slot, `pod_volumes`: the CSI volumes the slot's accounted pods attach (their
//!   resolved claims and migrated inline volumes), each unique volume once with the
//!   number of pods that attach it, so NodeVolumeLimits counts a node's attachments
//!   without walking its pods; `limit_users` indexes the pods by the claims they
//!   resolve, for when a claim's volume changes.
//!
//! All of it is maintained incrementally: a change touches one node's entry or one
//! claim's.

use ahash::AHashMap;

use crate::volume::RecVolumes;

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
    /// `namespace/claim` → the pods whose NodeVolumeLimits claims include it.
    pub limit_users: AHashMap<u32, Vec<u32>>,
    /// Per slot: `(driver, "driver/handle", pods attaching it)`.
    pub pod_volumes: Vec<Vec<(u32, u32, u32)>>,
}

fn index_add(index: &mut AHashMap<u32, Vec<u32>>, keys: &[u32], idx: u32) {
    for &k in keys {
        index.entry(k).or_default().push(idx);
    }
}

fn index_remove(index: &mut AHashMap<u32, Vec<u32>>, keys: &[u32], idx: u32) {
    for k in keys {
        if let Some(users) = index.get_mut(k) {
            if let Some(j) = users.iter().position(|&u| u == idx) {
                users.swap_remove(j);
            }
            if users.is_empty() {
                index.remove(k);
            }
        }
    }
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

    /// Pod `idx` with volumes `v` is accounted on `slot`.
    pub fn pod_attached(&mut self, slot: u32, v: &RecVolumes, idx: u32) {
        index_add(&mut self.claim_users, &v.claim_keys, idx);
        index_add(&mut self.limit_users, &v.limit_keys, idx);
        self.count_volumes(slot, v, true);
    }

    /// Pod `idx` with volumes `v` is no longer accounted on `slot`.
    pub fn pod_detached(&mut self, slot: u32, v: &RecVolumes, idx: u32) {
        index_remove(&mut self.claim_users, &v.claim_keys, idx);
        index_remove(&mut self.limit_users, &v.limit_keys, idx);
        self.count_volumes(slot, v, false);
    }

    fn count_volumes(&mut self, slot: u32, v: &RecVolumes, add: bool) {
        let resolved: Vec<(u32, u32)> = v
            .limit_keys
            .iter()
            .filter_map(|k| self.claim_volume.get(k).copied())
            .chain(v.inline.iter().copied())
            .collect();
        for dv in resolved {
            self.count_volume(slot, dv, add);
        }
    }

    fn count_volume(&mut self, slot: u32, (driver, unique): (u32, u32), add: bool) {
        let i = slot as usize;
        if self.pod_volumes.len() <= i {
            self.pod_volumes.resize_with(i + 1, Vec::new);
        }
        let list = &mut self.pod_volumes[i];
        match list.iter().position(|&(_, u, _)| u == unique) {
            Some(j) if add => list[j].2 += 1,
            Some(j) => {
                list[j].2 -= 1;
                if list[j].2 == 0 {
                    list.swap_remove(j);
                }
            }
            None if add => list.push((driver, unique, 1)),
            None => {}
        }
    }

    /// Claim `key` now counts as `volume` (None: as none): recount it on the nodes of
    /// the pods that resolve it (`slots` gives a pod's slot).
    pub fn set_claim_volume(
        &mut self,
        key: u32,
        volume: Option<(u32, u32)>,
        slots: impl Fn(u32) -> Option<(u32, usize)>,
    ) {
        let old = self.claim_volume.get(&key).copied();
        if old == volume {
            return;
        }
        match volume {
            Some(v) => self.claim_volume.insert(key, v),
            None => self.claim_volume.remove(&key),
        };
        let users = self.limit_users.get(&key).cloned().unwrap_or_default();
        for idx in users {
            // (slot, how many of the pod's claims are this one)
            let Some((slot, times)) = slots(idx) else {
                continue;
            };
            for _ in 0..times {
                if let Some(o) = old {
                    self.count_volume(slot, o, false);
                }
                if let Some(n) = volume {
                    self.count_volume(slot, n, true);
                }
            }
        }
    }

    /// Slot `slot` holds no pod any more.
    pub fn slot_cleared(&mut self, slot: u32) {
        if let Some(list) = self.pod_volumes.get_mut(slot as usize) {
            list.clear();
        }
    }
}
