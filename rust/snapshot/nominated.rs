//! Nominated pods: pods that preemption placed on a node and that wait for their victims
//! to leave (`status.nominatedNodeName`).
//!
//! As upstream's `RunFilterPluginsWithNominatedPods`, when pods of equal or higher
//! priority than the pod being scheduled (other than the pod itself) are nominated to a
//! node, the node's Filters run twice: first with those pods added to the node (their
//! requests, pod slots and host ports) and to the PreFilter state as the plugins'
//! `AddPod` extensions would (PodTopologySpread counts them in the node's domain and
//! recomputes the minimum as its critical paths would; InterPodAffinity counts their
//! required anti-affinity terms matching the pod, and their match of the pod's required
//! (anti-)affinity terms, in the node's domains), then as the node is. The node fits
//! only if both passes pass; a failure of the first pass is the one reported. A nominated
//! pod is kept as a [`PodRecord`] compiled like an accounted pod's (`pod_record`).
//!
//! Filtering looks the nominations up only for nodes that have some
//! (`Snapshot::nominated_on`), so other nodes cost what they did without nominations.

use ahash::AHashMap;

use crate::plugins::node_ports::HostPort;
use crate::plugins::node_resources_fit::Freed;
use crate::pod::CompiledPod;
use crate::snapshot::{PodRecord, Snapshot};

/// The slot of a nominated pod's record: it is accounted on no slot.
const NOT_ACCOUNTED: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    /// uid → the name of the node it is nominated to: a nomination follows the name
    /// (as upstream's nominator does), not the slot, which a removed node frees for
    /// another.
    node_of: AHashMap<String, String>,
    /// Node name → the pods nominated there, in nomination order. Filtering reads
    /// this once per node, so the pods are kept here rather than behind their uids.
    by_node: AHashMap<String, Vec<PodRecord>>,
}

impl NominatedPods {
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// The node `uid` is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }

    /// The pods nominated to node `node`.
    #[inline]
    pub fn on(&self, node: &str) -> &[PodRecord] {
        self.by_node.get(node).map_or(&[], |v| v.as_slice())
    }
}

/// What the pods nominated to one slot's node add up to: filtering a pod that all of
/// them count against (the common case) takes their room in one step.
#[derive(Clone, Debug)]
pub struct NominatedSum {
    /// The lowest priority among them (`i32::MAX` when there are none).
    pub min_priority: i32,
    /// Their pod count and summed requests.
    pub room: Freed,
}

impl Default for NominatedSum {
    fn default() -> Self {
        NominatedSum {
            min_priority: i32::MAX,
            room: Freed::default(),
        }
    }
}

/// Whether nominated pod `n` counts against a pod of `priority` and `uid` (equal or
/// higher priority, not the pod itself).
#[inline]
fn counts_against(n: &PodRecord, priority: i32, uid: &str) -> bool {
    n.priority >= priority && &*n.uid != uid
}

impl Snapshot {
    pub fn set_nominated(&mut self, pod: &CompiledPod, node_name: &str) {
        self.clear_nominated(&pod.uid);
        let rec = self.pod_record(pod, NOT_ACCOUNTED, false);
        self.nominated
            .node_of
            .insert(pod.uid.clone(), node_name.to_string());
        self.nominated
            .by_node
            .entry(node_name.to_string())
            .or_default()
            .push(rec);
        if let Some(slot) = self.slot_of(node_name) {
            self.nominated_on[slot as usize] += 1;
            self.refresh_nominated_sum(slot);
        }
        self.generation += 1;
    }

    /// Recompute `nominated_sum` of `slot` from the pods nominated to its node.
    pub(crate) fn refresh_nominated_sum(&mut self, slot: u32) {
        self.touch(slot);
        let mut sum = NominatedSum::default();
        for rec in self.nominated.on(&self.names[slot as usize]) {
            sum.min_priority = sum.min_priority.min(rec.priority);
            sum.room.add(&rec.requests, 1);
        }
        self.nominated_sum[slot as usize] = sum;
    }

    pub fn clear_nominated(&mut self, uid: &str) -> bool {
        let Some(node) = self.nominated.node_of.remove(uid) else {
            return false;
        };
        if let Some(v) = self.nominated.by_node.get_mut(&node) {
            v.retain(|n| &*n.uid != uid);
            if v.is_empty() {
                self.nominated.by_node.remove(&node);
            }
        }
        if let Some(slot) = self.slot_of(&node) {
            let n = &mut self.nominated_on[slot as usize];
            *n = n.saturating_sub(1);
            self.refresh_nominated_sum(slot);
        }
        self.generation += 1;
        true
    }

    /// The pods nominated to `slot`'s node that count against a pod of `priority` and
    /// `uid` (upstream's `addGENominatedPods`), in nomination order.
    #[inline]
    pub fn nominated_against<'a>(
        &'a self,
        slot: u32,
        priority: i32,
        uid: &'a str,
    ) -> impl Iterator<Item = &'a PodRecord> + Clone + 'a {
        self.nominated
            .on(&self.names[slot as usize])
            .iter()
            .filter(move |n| counts_against(n, priority, uid))
    }

    /// Whether host ports `wanted` conflict with the ports of pods `added` (the
    /// NodePorts check against pods added to the node).
    pub fn ports_conflict<'a>(
        &self,
        wanted: &[HostPort],
        added: impl Iterator<Item = &'a PodRecord> + Clone,
    ) -> bool {
        wanted.iter().any(|&(proto, ip, port)| {
            added
                .clone()
                .flat_map(|n| n.host_ports.iter())
                .any(|&(up, uip, uport)| {
                    up == proto
                        && uport == port
                        && (ip == self.bind_all_ip || uip == self.bind_all_ip || uip == ip)
                })
        })
    }
}
