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

    /// The pods nominated to node `node`.
    #[inline]
    pub fn on(&self, node: &str) -> &[PodRecord] {
        self.by_node.get(node).map_or(&[], |v| v.as_slice())
    }
}

/// Whether nominated pod `n` counts against a pod of `priority` and `uid` (equal or
/// higher priority, not the pod itself).
#[inline]
fn counts_against(n: &PodRecord, priority: i32, uid: &str) -> bool {
    n.priority >= priority && n.uid != uid
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
        }
        self.generation += 1;
    }

    pub fn clear_nominated(&mut self, uid: &str) -> bool {
        let Some(node) = self.nominated.node_of.remove(uid) else {
            return false;
        };
        if let Some(v) = self.nominated.by_node.get_mut(&node) {
            v.retain(|n| n.uid != uid);
            if v.is_empty() {
                self.nominated.by_node.remove(&node);
            }
        }
        if let Some(slot) = self.slot_of(&node) {
            let n = &mut self.nominated_on[slot as usize];
            *n = n.saturating_sub(1);
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
