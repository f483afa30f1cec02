//! The node snapshot: struct-of-arrays over node slots.
//!
//! A node occupies a slot; every per-node attribute is a column indexed by slot, so a
//! kernel that looks at one attribute over all nodes walks one contiguous array. A
//! deleted node frees its slot for reuse. Updates are incremental and touch only the
//! changed node: `upsert_node`, `remove_node`, `add_pod`, `remove_pod` (assume and forget
//! are `add_pod`/`remove_pod` of a pod the scheduler placed itself).
//!
//! As in kube-scheduler's cache, a pod may arrive before its node (informers are not
//! ordered): the slot then exists without a node object (`has_node == false`) and only
//! accounts the pod; it becomes a candidate when the node arrives. A removed node whose
//! pods are still known stays as such a ghost until its last pod leaves.

pub mod anti;
pub mod counts;
pub mod intern;
pub mod nominated;
pub mod py;
pub mod resources;
pub mod storage;
pub mod tree;

use std::sync::Arc;

use ahash::AHashMap;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::plugins::inter_pod_affinity::CompiledAffinity;
use crate::plugins::node_declared_features::{FeatureSet, FeatureTable};
use crate::plugins::node_ports::{self, HostPort};
use crate::plugins::taint::{Effect, Taint};
use crate::pod::CompiledPod;
use crate::selector::intern_labels;
use crate::volume::RecVolumes;
use intern::Interner;
use resources::{ResourceTable, PODS};
use tree::NodeTree;

/// A pod accounted on a node, with its requests resolved to resource columns and what
/// InterPodAffinity, PodTopologySpread and NodePorts need of it, interned.
#[derive(Debug, Clone)]
pub struct PodRecord {
    /// Shared, so preemption's candidates name their victims without copying.
    pub uid: Arc<str>,
    pub name: String,
    pub slot: u32,
    pub priority: i32,
    /// `status.startTime` in seconds since the epoch (`None`: not started).
    pub start_time: Option<f64>,
    pub requests: Vec<(usize, i64)>,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    /// Placed by this scheduler and not yet confirmed by the API server.
    pub assumed: bool,
    pub namespace: u32,
    /// Sorted `(key, value)` ids.
    pub labels: Vec<(u32, u32)>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Compiled affinity terms, when the pod has any.
    pub affinity: Option<Box<CompiledAffinity>>,
    pub host_ports: Vec<HostPort>,
    /// The pod's volumes the volume kernels read, when it has any.
    pub volumes: Option<Box<RecVolumes>>,
}

/// Node fields as the API describes them, in canonical units.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    pub name: String,
    pub allocatable: Vec<(String, i64)>,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<(String, String, Effect)>,
    pub unschedulable: bool,
    /// `(names, size in bytes)` of the images on the node.
    pub images: Vec<(Vec<String>, i64)>,
    /// `status.declaredFeatures` mapped onto the feature registry (NodeDeclaredFeatures).
    pub declared_features: Vec<String>,
}

/// One image name across the cluster (upstream `fwk.ImageStateSummary`).
#[derive(Debug, Clone, Copy)]
pub struct ImageStateSummary {
    /// `sizeBytes` as reported by the first node that listed the name.
    pub size: i64,
    /// Nodes listing the name.
    pub num_nodes: u32,
}

#[pyo3::pyclass(module = "ksched._core")]
#[derive(Debug)]
pub struct Snapshot {
    /// Node names by slot; shared (`Arc`) so results can hold them without copying.
    pub names: Vec<Arc<str>>,
    /// The slot holds a node object (is a scheduling candidate).
    pub has_node: Vec<bool>,
    /// The slot is allocated (a node, or a ghost that still accounts pods).
    pub in_use: Vec<bool>,
    free: Vec<u32>,
    by_name: AHashMap<String, u32>,

    pub resources: ResourceTable,
    /// `allocatable[r][slot]`, `requested[r][slot]`; `requested[PODS]` counts pods.
    pub allocatable: Vec<Vec<i64>>,
    pub requested: Vec<Vec<i64>>,
    pub non_zero_cpu: Vec<i64>,
    pub non_zero_memory: Vec<i64>,
    /// Per slot, the resource columns the node lists in its allocatable with amount 0
    /// (upstream's `Allocatable.ScalarResources` keeps such names: DynamicResources'
    /// extended-resource Filter tells "listed as 0" from "not listed").
    pub zero_allocatable: Vec<Vec<usize>>,
    /// Extended resource names some DeviceClass maps to (`spec.extendedResourceName` or
    /// `deviceclass.resource.kubernetes.io/<class>`), scheduler-wide as upstream's
    /// `DeviceClassResolver` (DRAExtendedResource): NodeResourcesFit leaves a request
    /// of one of them to DynamicResources on a node whose allocatable has none of it.
    pub dra_extended: ahash::AHashSet<String>,

    pub unschedulable: Vec<bool>,
    pub taints: Vec<Vec<Taint>>,
    /// Nodes marked unschedulable, NoSchedule/NoExecute taints and PreferNoSchedule taints
    /// in the whole snapshot: when 0, the plugins that look at them skip every node.
    pub num_unschedulable: usize,
    pub num_hard_taints: usize,
    pub num_prefer_taints: usize,
    /// DynamicResources' Filter for the next attempt (set by the Python call, taken by
    /// `prefilter`).
    pub pending_dra: Option<std::sync::Arc<crate::plugins::dynamic_resources::DraFilter>>,

    pub interner: Interner,
    /// Label key id → label column; `label_cols[col][slot]` is the value id (0 = absent).
    pub label_index: AHashMap<u32, usize>,
    /// Dense form of `label_index` for the hot path: key id → column + 1 (0 = none).
    label_col_of: Vec<u32>,
    pub label_cols: Vec<Vec<u32>>,
    pub node_labels: Vec<Vec<(u32, u32)>>,
    /// Node declared feature names → bits, and each slot's declared features over them.
    pub feature_table: FeatureTable,
    pub declared_features: Vec<FeatureSet>,

    /// Pods, in a slab indexed by `pod_index`.
    pub pods: Vec<Option<PodRecord>>,
    pub pod_index: AHashMap<String, u32>,
    free_pods: Vec<u32>,
    /// The pods (slab indices) accounted on each slot, in the order they arrived.
    pub node_pods: Vec<Vec<u32>>,
    /// Bumped whenever the pods accounted on a slot change or the slot changes hands.
    pub slot_gen: Vec<u32>,
    /// Per slot, the value of `stamp_clock` at the last change of anything about the
    /// slot the reused per-node results depend on (see `reuse`): its node, its pods,
    /// its host ports, the pods nominated to it, the slot changing hands.
    pub slot_stamp: Vec<u64>,
    stamp_clock: u64,
    /// Per-signature per-node results of earlier attempts (see `reuse`).
    pub(crate) reuse: crate::reuse::ReuseCache,
    /// Whether attempts reuse per-node results at all (tests compare with and without).
    pub(crate) reuse_results: bool,
    /// Whether PodTopologySpread's PreFilter reads the count cache's domain views (see
    /// `counts`) instead of walking the nodes (tests compare with and without).
    pub(crate) domain_views: bool,
    /// Preemption's per-slot memo of what the pods below some priority would free
    /// (valid while `slot_gen` stays), see `preemption`.
    pub(crate) lower_pods: Vec<crate::preemption::LowerPods>,
    /// Host ports in use per node (a port counts while it is listed; see `detach` for
    /// when it stops).
    pub node_ports: Vec<Vec<HostPort>>,
    /// The image name ids each node lists (each once).
    pub node_images: Vec<Vec<u32>>,
    /// One summary per image name listed by some node (upstream's cache
    /// `imageStates`): the size the first node listing it reported, and how many nodes
    /// list it.
    pub image_states: AHashMap<u32, ImageStateSummary>,
    /// Namespace id → sorted label ids.
    pub namespaces: AHashMap<u32, Vec<(u32, u32)>>,
    /// Interned "0.0.0.0", the bind-all host IP.
    pub bind_all_ip: u32,
    /// Per-node counts of pods matching recently used predicates.
    pub count_cache: counts::CountCache,
    /// Pods nominated to nodes by preemption.
    pub nominated: nominated::NominatedPods,
    /// How many pods are nominated to each slot's node (by name), so filtering skips
    /// the nominations lookup for the other nodes.
    pub nominated_on: Vec<u32>,
    /// Per slot, what the pods nominated to its node add up to.
    pub nominated_sum: Vec<nominated::NominatedSum>,
    /// Existing pods' required anti-affinity terms, grouped.
    pub anti_index: anti::AntiIndex,
    /// CSINodes, VolumeAttachments and claims, for the volume kernels.
    pub storage: storage::Storage,

    tree: NodeTree,
    pub(crate) order: Vec<u32>,
    order_dirty: bool,
    /// Where the next scheduling attempt starts in `order` (upstream's nextStartNodeIndex).
    pub next_start: usize,
    pub rng: SmallRng,
    /// Bumped on every change; lets callers detect a changed snapshot.
    pub generation: u64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Snapshot {
    pub fn new(seed: Option<u64>) -> Self {
        let resources = ResourceTable::new();
        let ncols = resources.len();
        let mut snap = Snapshot {
            names: Vec::new(),
            has_node: Vec::new(),
            in_use: Vec::new(),
            free: Vec::new(),
            by_name: AHashMap::new(),
            resources,
            allocatable: vec![Vec::new(); ncols],
            requested: vec![Vec::new(); ncols],
            non_zero_cpu: Vec::new(),
            non_zero_memory: Vec::new(),
            zero_allocatable: Vec::new(),
            dra_extended: ahash::AHashSet::new(),
            unschedulable: Vec::new(),
            taints: Vec::new(),
            num_unschedulable: 0,
            num_hard_taints: 0,
            num_prefer_taints: 0,
            pending_dra: None,
            interner: Interner::new(),
            label_index: AHashMap::new(),
            label_col_of: Vec::new(),
            label_cols: Vec::new(),
            node_labels: Vec::new(),
            feature_table: FeatureTable::default(),
            declared_features: Vec::new(),
            pods: Vec::new(),
            pod_index: AHashMap::new(),
            free_pods: Vec::new(),
            node_pods: Vec::new(),
            slot_gen: Vec::new(),
            slot_stamp: Vec::new(),
            stamp_clock: 0,
            reuse: crate::reuse::ReuseCache::default(),
            reuse_results: true,
            domain_views: true,
            lower_pods: Vec::new(),
            node_ports: Vec::new(),
            node_images: Vec::new(),
            image_states: AHashMap::new(),
            namespaces: AHashMap::new(),
            bind_all_ip: 0,
            count_cache: counts::CountCache::default(),
            nominated: nominated::NominatedPods::default(),
            nominated_on: Vec::new(),
            nominated_sum: Vec::new(),
            anti_index: anti::AntiIndex::default(),
            storage: storage::Storage::default(),
            tree: NodeTree::default(),
            order: Vec::new(),
            order_dirty: false,
            next_start: 0,
            rng: match seed {
                Some(s) => SmallRng::seed_from_u64(s),
                None => SmallRng::seed_from_u64(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64),
                ),
            },
            generation: 0,
        };
        snap.bind_all_ip = snap.interner.intern(node_ports::BIND_ALL);
        snap
    }

    pub fn capacity(&self) -> usize {
        self.names.len()
    }

    /// Number of nodes (slots with a node object).
    pub fn num_nodes(&self) -> usize {
        self.tree.len()
    }

    pub fn slot_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// Rebuild the zone-interleaved candidate order if nodes were added or removed.
    pub fn ensure_order(&mut self) {
        if self.order_dirty {
            self.order = self.tree.list();
            self.order_dirty = false;
        }
    }

    /// The candidate nodes in zone-interleaved order.
    pub fn order(&mut self) -> &[u32] {
        self.ensure_order();
        &self.order
    }

    /// The column of resource `name`, adding a zero column when new.
    pub fn resource_column(&mut self, name: &str) -> usize {
        let (col, created) = self.resources.column_for(name);
        if created {
            let cap = self.capacity();
            self.allocatable.push(vec![0; cap]);
            self.requested.push(vec![0; cap]);
        }
        col
    }

    fn label_column(&mut self, key: u32) -> usize {
        if let Some(&c) = self.label_index.get(&key) {
            return c;
        }
        let c = self.label_cols.len();
        self.label_cols.push(vec![0; self.capacity()]);
        self.label_index.insert(key, c);
        if self.label_col_of.len() <= key as usize {
            self.label_col_of.resize(key as usize + 1, 0);
        }
        self.label_col_of[key as usize] = c as u32 + 1;
        c
    }

    /// DynamicResources' extended resources backed by DRA: the distinct sets, over the
    /// snapshot's nodes, of the indices into `names` of the resources a node must get
    /// from DRA (its allocatable has none of them, upstream `filterExtendedResources`'
    /// `allocatable == 0`), sorted. The pod's claim for them needs one variant per set,
    /// so PreFilter builds only the variants some node can use.
    pub fn extended_patterns(&self, names: &[String]) -> Vec<Vec<usize>> {
        let cols: Vec<Option<usize>> = names.iter().map(|n| self.resources.get(n)).collect();
        let mut seen = std::collections::BTreeSet::new();
        for slot in self.tree.list() {
            let i = slot as usize;
            let pattern: Vec<usize> = cols
                .iter()
                .enumerate()
                .filter(|(_, col)| col.is_none_or(|c| self.allocatable[c][i] == 0))
                .map(|(k, _)| k)
                .collect();
            seen.insert(pattern);
        }
        seen.into_iter().collect()
    }

    /// Node `slot`'s allocatable amount of resource `name`, None when its allocatable
    /// does not list the name (upstream's `ScalarResources[name]` lookup with `ok`).
    pub fn listed_allocatable(&self, slot: u32, name: &str) -> Option<i64> {
        let col = self.resources.get(name)?;
        let i = slot as usize;
        let amount = self.allocatable[col][i];
        if amount != 0 || self.zero_allocatable[i].contains(&col) {
            Some(amount)
        } else {
            None
        }
    }

    /// The value id of label `key` on `slot`, 0 when absent.
    #[inline]
    pub fn label(&self, slot: u32, key: u32) -> u32 {
        match self.label_col_of.get(key as usize) {
            Some(&c) if c != 0 => self.label_cols[c as usize - 1][slot as usize],
            _ => 0,
        }
    }

    fn alloc_slot(&mut self, name: &str) -> u32 {
        if let Some(&s) = self.by_name.get(name) {
            return s;
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = self.names.len() as u32;
                self.names.push(Arc::from(""));
                self.has_node.push(false);
                self.in_use.push(false);
                for col in self.allocatable.iter_mut().chain(self.requested.iter_mut()) {
                    col.push(0);
                }
                self.non_zero_cpu.push(0);
                self.non_zero_memory.push(0);
                self.zero_allocatable.push(Vec::new());
                self.unschedulable.push(false);
                self.taints.push(Vec::new());
                for col in self.label_cols.iter_mut() {
                    col.push(0);
                }
                self.node_labels.push(Vec::new());
                self.declared_features.push(FeatureSet::default());
                self.node_pods.push(Vec::new());
                self.slot_gen.push(0);
                self.slot_stamp.push(0);
                self.nominated_on.push(0);
                self.nominated_sum.push(Default::default());
                self.lower_pods.push(Default::default());
                self.node_ports.push(Vec::new());
                self.node_images.push(Vec::new());
                self.count_cache.grow();
                s
            }
        };
        let i = slot as usize;
        self.slot_gen[i] = self.slot_gen[i].wrapping_add(1);
        self.touch(slot);
        self.nominated_on[i] = self.nominated.on(name).len() as u32;
        self.names[i] = Arc::from(name);
        self.refresh_nominated_sum(slot);
        self.storage.slot_allocated(slot, name);
        self.in_use[i] = true;
        self.by_name.insert(name.to_owned(), slot);
        slot
    }

    /// Mark `slot`'s state changed for the reused results (see `reuse`): a new stamp
    /// from a counter that never repeats.
    #[inline]
    pub(crate) fn touch(&mut self, slot: u32) {
        self.stamp_clock += 1;
        self.slot_stamp[slot as usize] = self.stamp_clock;
    }

    fn release_slot(&mut self, slot: u32) {
        let i = slot as usize;
        self.touch(slot);
        let name = self.names[i].clone();
        self.storage.slot_released(slot, &name);
        self.by_name.remove(&*self.names[i]);
        self.names[i] = Arc::from("");
        self.in_use[i] = false;
        self.has_node[i] = false;
        for col in self.allocatable.iter_mut().chain(self.requested.iter_mut()) {
            col[i] = 0;
        }
        self.non_zero_cpu[i] = 0;
        self.non_zero_memory[i] = 0;
        self.clear_node_fields(slot);
        self.node_pods[i].clear();
        self.storage.slot_cleared(slot);
        self.nominated_on[i] = 0;
        self.nominated_sum[i] = Default::default();
        self.node_ports[i].clear();
        self.free.push(slot);
    }

    fn clear_node_fields(&mut self, slot: u32) {
        let i = slot as usize;
        // Out of the domain views while its labels are still set.
        self.views_node(slot, -1);
        self.touch(slot);
        for col in self.allocatable.iter_mut() {
            col[i] = 0;
        }
        self.zero_allocatable[i].clear();
        if self.unschedulable[i] {
            self.num_unschedulable -= 1;
        }
        self.unschedulable[i] = false;
        for t in self.taints[i].drain(..) {
            if t.effect == Effect::PreferNoSchedule {
                self.num_prefer_taints -= 1;
            } else {
                self.num_hard_taints -= 1;
            }
        }
        self.declared_features[i] = FeatureSet::default();
        let old = std::mem::take(&mut self.node_labels[i]);
        for (k, _) in old {
            if let Some(&c) = self.label_index.get(&k) {
                self.label_cols[c][i] = 0;
            }
        }
        // Upstream removeNodeImageStates: a name no node lists any more is forgotten
        // (with its size).
        for img in std::mem::take(&mut self.node_images[i]) {
            if let Some(state) = self.image_states.get_mut(&img) {
                state.num_nodes -= 1;
                if state.num_nodes == 0 {
                    self.image_states.remove(&img);
                }
            }
        }
    }

    /// Add or replace a node. O(labels + taints + resources of this node).
    pub fn upsert_node(&mut self, spec: &NodeSpec) -> u32 {
        let slot = self.alloc_slot(&spec.name);
        let i = slot as usize;
        self.clear_node_fields(slot);
        for (rname, amount) in &spec.allocatable {
            let col = self.resource_column(rname);
            self.allocatable[col][i] = *amount;
            if *amount == 0 {
                self.zero_allocatable[i].push(col);
            }
        }
        self.unschedulable[i] = spec.unschedulable;
        if spec.unschedulable {
            self.num_unschedulable += 1;
        }
        for (k, v, effect) in &spec.taints {
            let t = Taint {
                key: self.interner.intern(k),
                value: self.interner.intern(v),
                effect: *effect,
            };
            if t.effect == Effect::PreferNoSchedule {
                self.num_prefer_taints += 1;
            } else {
                self.num_hard_taints += 1;
            }
            self.taints[i].push(t);
        }
        let mut labels = Vec::with_capacity(spec.labels.len());
        for (k, v) in &spec.labels {
            let kid = self.interner.intern(k);
            let vid = self.interner.intern(v);
            let col = self.label_column(kid);
            self.label_cols[col][i] = vid;
            labels.push((kid, vid));
        }
        labels.sort_unstable();
        self.node_labels[i] = labels;
        self.views_node(slot, 1);
        self.declared_features[i] = self.feature_table.set_of(&spec.declared_features);
        // Upstream addNodeImageStates: a name new to the cluster takes this node's size;
        // a known one keeps the size it has.
        let mut images: Vec<u32> = Vec::new();
        for (names, size) in &spec.images {
            for name in names {
                let id = self.interner.intern(name);
                if !images.contains(&id) {
                    images.push(id);
                    self.image_states
                        .entry(id)
                        .or_insert(ImageStateSummary {
                            size: *size,
                            num_nodes: 0,
                        })
                        .num_nodes += 1;
                }
            }
        }
        self.node_images[i] = images;
        let zone = tree::zone_key(|k| {
            spec.labels
                .iter()
                .find(|(lk, _)| lk == k)
                .map(|(_, v)| v.as_str())
        });
        self.has_node[i] = true;
        self.touch(slot);
        if self.tree.add(slot, zone) {
            self.order_dirty = true;
        }
        self.generation += 1;
        slot
    }

    /// Remove a node. Its slot is freed unless pods are still accounted on it.
    pub fn remove_node(&mut self, name: &str) -> bool {
        let Some(slot) = self.slot_of(name) else {
            return false;
        };
        let i = slot as usize;
        if !self.has_node[i] {
            return false;
        }
        self.tree.remove(slot);
        self.order_dirty = true;
        self.has_node[i] = false;
        self.clear_node_fields(slot);
        if self.node_pods[i].is_empty() {
            self.release_slot(slot);
        }
        self.generation += 1;
        true
    }

    /// Remember the used host ports of `slot` (once per slot in `undo`) before a
    /// tentative placement there, to put them back with [`Snapshot::restore_ports`] once
    /// the placements are undone. `detach` takes a pod's ports off its node whoever else
    /// holds them (upstream's `RemovePod` on a set), which is right for a pod that goes,
    /// not for undoing one that was never there (upstream places those on a copy).
    pub(crate) fn save_ports(&self, undo: &mut Vec<(u32, Vec<HostPort>)>, slot: u32) {
        if !undo.iter().any(|(s, _)| *s == slot) {
            undo.push((slot, self.node_ports[slot as usize].clone()));
        }
    }

    /// Put back the host ports [`Snapshot::save_ports`] remembered.
    pub(crate) fn restore_ports(&mut self, undo: Vec<(u32, Vec<HostPort>)>) {
        for (slot, ports) in undo {
            let i = slot as usize;
            if self.node_ports[i] != ports {
                self.node_ports[i] = ports;
                self.slot_gen[i] = self.slot_gen[i].wrapping_add(1);
                self.touch(slot);
                self.generation += 1;
            }
        }
    }

    /// Account `pod` on node `node_name`. A pod already known is moved (its old
    /// accounting is removed first), so repeated adds are idempotent.
    pub fn add_pod(&mut self, pod: &CompiledPod, node_name: &str, assumed: bool) {
        if self.pod_index.contains_key(&pod.uid) {
            self.remove_pod(&pod.uid);
        }
        let slot = self.alloc_slot(node_name);
        let rec = self.pod_record(pod, slot, assumed);
        self.attach(rec);
    }

    /// `pod` compiled into a record for `slot` (interning what it names), not yet
    /// accounted anywhere. Nominated pods keep such a record too (see `nominated`).
    pub(crate) fn pod_record(&mut self, pod: &CompiledPod, slot: u32, assumed: bool) -> PodRecord {
        let requests = pod
            .requests
            .iter()
            .map(|(rname, amount)| (self.resource_column(rname), *amount))
            .collect();
        let namespace = self.interner.intern(&pod.namespace);
        let labels = intern_labels(&pod.labels, &mut self.interner);
        let affinity = if pod.pod_affinity.is_empty() {
            None
        } else {
            Some(Box::new(CompiledAffinity::compile(
                &pod.pod_affinity,
                namespace,
                &labels,
                &mut self.interner,
            )))
        };
        let host_ports = node_ports::compile(&pod.host_ports, &mut self.interner);
        let volumes = pod
            .volumes
            .as_ref()
            .map(|v| Box::new(RecVolumes::compile(v, &pod.namespace, &mut self.interner)));
        PodRecord {
            uid: Arc::from(pod.uid.as_str()),
            name: pod.name.clone(),
            slot,
            priority: pod.priority,
            start_time: pod.start_time,
            requests,
            non_zero_cpu: pod.non_zero_cpu,
            non_zero_memory: pod.non_zero_memory,
            assumed,
            namespace,
            labels,
            deleting: pod.deleting,
            affinity,
            host_ports,
            volumes,
        }
    }

    /// Account a pod record on its slot (which must be allocated); returns its index.
    /// Preemption's dry run re-attaches the records it detached.
    pub(crate) fn attach(&mut self, rec: PodRecord) -> u32 {
        let i = rec.slot as usize;
        self.slot_gen[i] = self.slot_gen[i].wrapping_add(1);
        self.touch(rec.slot);
        for (col, amount) in &rec.requests {
            self.requested[*col][i] += amount;
        }
        self.requested[PODS][i] += 1;
        self.non_zero_cpu[i] += rec.non_zero_cpu;
        self.non_zero_memory[i] += rec.non_zero_memory;
        self.node_ports[i].extend_from_slice(&rec.host_ports);
        let idx = match self.free_pods.pop() {
            Some(idx) => idx,
            None => {
                self.pods.push(None);
                (self.pods.len() - 1) as u32
            }
        };
        self.node_pods[i].push(idx);
        if let Some(v) = &rec.volumes {
            self.storage.pod_attached(rec.slot, v, idx);
        }
        self.update_counts(&rec, 1);
        self.pod_index.insert(rec.uid.to_string(), idx);
        self.pods[idx as usize] = Some(rec);
        self.index_anti(idx, 1);
        self.generation += 1;
        idx
    }

    /// Take a pod's accounting off its slot and return the record; the slot stays
    /// allocated even when it was the last pod of a removed node (see `remove_pod`).
    pub(crate) fn detach(&mut self, idx: u32) -> Option<PodRecord> {
        self.index_anti(idx, -1);
        let rec = self.pods[idx as usize].take()?;
        if let Some(v) = &rec.volumes {
            self.storage.pod_detached(rec.slot, v, idx);
        }
        self.pod_index.remove(&*rec.uid);
        self.update_counts(&rec, -1);
        self.free_pods.push(idx);
        let i = rec.slot as usize;
        self.slot_gen[i] = self.slot_gen[i].wrapping_add(1);
        self.touch(rec.slot);
        for (col, amount) in &rec.requests {
            self.requested[*col][i] -= amount;
        }
        self.requested[PODS][i] -= 1;
        self.non_zero_cpu[i] -= rec.non_zero_cpu;
        self.non_zero_memory[i] -= rec.non_zero_memory;
        let list = &mut self.node_pods[i];
        if let Some(j) = list.iter().position(|&x| x == idx) {
            list.remove(j);
        }
        // Upstream's NodeInfo keeps its used host ports as a set (HostPortInfo), and
        // RemovePod (updateUsedPorts) deletes each of the pod's ports from it, even when
        // another pod on the node uses the same one: such a port is free from then on
        // (for preemption's dry run too, which removes victims from a NodeInfo copy).
        // That looks like an upstream bug; ksched mirrors it.
        if !rec.host_ports.is_empty() {
            self.node_ports[i].retain(|q| !rec.host_ports.contains(q));
        }
        self.generation += 1;
        Some(rec)
    }

    /// Remove a pod's accounting. Returns false when the pod was not known.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(&idx) = self.pod_index.get(uid) else {
            return false;
        };
        let Some(rec) = self.detach(idx) else {
            return false;
        };
        let i = rec.slot as usize;
        if self.node_pods[i].is_empty() && !self.has_node[i] {
            self.release_slot(rec.slot);
        }
        true
    }

    pub fn pod(&self, uid: &str) -> Option<&PodRecord> {
        let idx = *self.pod_index.get(uid)?;
        self.pods[idx as usize].as_ref()
    }

    pub fn num_pods(&self) -> usize {
        self.pod_index.len()
    }

    /// Mark an assumed pod as confirmed by the API server (bound). Returns whether the
    /// pod was known on `node_name`.
    pub fn confirm_pod(&mut self, uid: &str, node_name: &str) -> bool {
        let slot = self.slot_of(node_name);
        let Some(&idx) = self.pod_index.get(uid) else {
            return false;
        };
        match self.pods[idx as usize].as_mut() {
            Some(rec) if Some(rec.slot) == slot => {
                rec.assumed = false;
                true
            }
            _ => false,
        }
    }

    pub fn is_assumed(&self, uid: &str) -> Option<bool> {
        self.pod(uid).map(|r| r.assumed)
    }

    /// Add or replace a namespace's labels (for namespaceSelector in affinity terms).
    pub fn upsert_namespace(&mut self, name: &str, labels: &[(String, String)]) {
        let id = self.interner.intern(name);
        let labels = intern_labels(labels, &mut self.interner);
        self.namespaces.insert(id, labels);
        self.count_cache.clear();
        self.generation += 1;
    }

    pub fn remove_namespace(&mut self, name: &str) -> bool {
        let Some(id) = self.interner.get(name) else {
            return false;
        };
        self.generation += 1;
        self.count_cache.clear();
        self.namespaces.remove(&id).is_some()
    }

    /// The labels of namespace `ns`, `None` when the namespace is not known.
    #[inline]
    pub fn namespace_labels(&self, ns: u32) -> Option<&[(u32, u32)]> {
        self.namespaces.get(&ns).map(|v| v.as_slice())
    }

    /// Requested amount of resource `name` on node `node`, for tests and diagnostics.
    pub fn requested_of(&self, node: &str, name: &str) -> Option<i64> {
        let slot = self.slot_of(node)? as usize;
        let col = self.resources.get(name)?;
        Some(self.requested[col][slot])
    }
}
