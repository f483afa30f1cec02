//! Nominated pods: pods that preemption placed on a node and that wait for their victims
//! to leave (`status.nominatedNodeName`).
//!
//! As upstream's `RunFilterPluginsWithNominatedPods`, a node that hosts nominated pods of
//! equal or higher priority than the pod being scheduled (other than the pod itself) must
//! fit the pod with those pods' requests and host ports added too, so a lower-priority pod
//! cannot take the room preemption freed. ksched accounts their resources, pod count and
//! host ports; unlike upstream it does not add them to PodTopologySpread and
//! InterPodAffinity counts (documented in the README).

use ahash::AHashMap;

use crate::plugins::node_ports::{self, HostPort};
use crate::plugins::node_resources_fit::{FilterState, Freed};
use crate::pod::CompiledPod;
use crate::snapshot::resources::PODS;
use crate::snapshot::Snapshot;

#[derive(Clone, Debug)]
pub struct Nominated {
    pub uid: String,
    pub priority: i32,
    pub requests: Vec<(usize, i64)>,
    pub ports: Vec<HostPort>,
}

#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    /// uid → the name of the node it is nominated to: a nomination follows the name
    /// (as upstream's nominator does), not the slot, which a removed node frees for
    /// another.
    node_of: AHashMap<String, String>,
    /// Node name → the pods nominated there, in nomination order. Filtering reads
    /// this once per node, so the pods are kept here rather than behind their uids.
    by_node: AHashMap<String, Vec<Nominated>>,
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
    pub fn on(&self, node: &str) -> &[Nominated] {
        self.by_node.get(node).map_or(&[], |v| v.as_slice())
    }
}

/// Whether nominated pod `n` counts against a pod of `priority` and `uid` (equal or
/// higher priority, not the pod itself).
#[inline]
fn counts_against(n: &Nominated, priority: i32, uid: &str) -> bool {
    n.priority >= priority && n.uid != uid
}

impl Snapshot {
    pub fn set_nominated(&mut self, pod: &CompiledPod, node_name: &str) {
        self.clear_nominated(&pod.uid);
        let requests = pod
            .requests
            .iter()
            .map(|(n, a)| (self.resource_column(n), *a))
            .collect();
        let ports = node_ports::compile(&pod.host_ports, &mut self.interner);
        self.nominated
            .node_of
            .insert(pod.uid.clone(), node_name.to_string());
        self.nominated
            .by_node
            .entry(node_name.to_string())
            .or_default()
            .push(Nominated {
                uid: pod.uid.clone(),
                priority: pod.priority,
                requests,
                ports,
            });
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

    /// Whether `slot` still fits the pod once the nominated pods that count against it
    /// are added: `None` when it fits (or nothing is nominated there), else the Fit
    /// bitmask (over `fit.checks`) or `u64::MAX` for a host port conflict. `freed` is
    /// taken off the node's requested amounts first.
    pub fn fits_with_nominated(
        &self,
        fit: &FilterState,
        ports: &[HostPort],
        priority: i32,
        uid: &str,
        slot: u32,
        freed: &Freed,
    ) -> Option<u64> {
        let i = slot as usize;
        let on_node = self.nominated.on(&self.names[i]);
        let counted = || on_node.iter().filter(|n| counts_against(n, priority, uid));
        let extra_pods = counted().count() as i64;
        if extra_pods == 0 {
            return None;
        }
        let mut mask = 0u64;
        if self.requested[PODS][i] - freed.pods + extra_pods + 1 > self.allocatable[PODS][i] {
            mask |= 1;
        }
        if !fit.requests_nothing {
            for (j, &(col, amount)) in fit.checks.iter().enumerate() {
                let more: i64 = counted()
                    .flat_map(|n| n.requests.iter())
                    .filter(|(c, _)| *c == col)
                    .map(|(_, a)| a)
                    .sum();
                if amount
                    > self.allocatable[col][i] - (self.requested[col][i] - freed.of(col)) - more
                {
                    mask |= 1u64 << (j + 1).min(63);
                }
            }
        }
        if mask != 0 {
            return Some(mask);
        }
        let conflict = ports.iter().any(|&(proto, ip, port)| {
            counted()
                .flat_map(|n| n.ports.iter())
                .any(|&(up, uip, uport)| {
                    up == proto
                        && uport == port
                        && (ip == self.bind_all_ip || uip == self.bind_all_ip || uip == ip)
                })
        });
        conflict.then_some(u64::MAX)
    }
}
