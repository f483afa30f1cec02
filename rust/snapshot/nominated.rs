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
    /// The nominated node's name: a nomination follows the name (as upstream's nominator
    /// does), not the slot, which a removed node frees for another.
    pub node: String,
    pub requests: Vec<(usize, i64)>,
    pub ports: Vec<HostPort>,
}

#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    by_uid: AHashMap<String, Nominated>,
    /// Node name → uids nominated there.
    by_node: AHashMap<String, Vec<String>>,
}

impl NominatedPods {
    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    /// Nominated pods on node `node` that count against a pod of `priority` and `uid`.
    pub fn against<'a>(
        &'a self,
        node: &str,
        priority: i32,
        uid: &'a str,
    ) -> impl Iterator<Item = &'a Nominated> + 'a {
        self.by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(move |u| self.by_uid.get(u))
            .filter(move |n| n.priority >= priority && n.uid != uid)
    }
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
            .by_node
            .entry(node_name.to_string())
            .or_default()
            .push(pod.uid.clone());
        self.nominated.by_uid.insert(
            pod.uid.clone(),
            Nominated {
                uid: pod.uid.clone(),
                priority: pod.priority,
                node: node_name.to_string(),
                requests,
                ports,
            },
        );
        self.generation += 1;
    }

    pub fn clear_nominated(&mut self, uid: &str) -> bool {
        let Some(n) = self.nominated.by_uid.remove(uid) else {
            return false;
        };
        if let Some(v) = self.nominated.by_node.get_mut(&n.node) {
            v.retain(|u| u != uid);
            if v.is_empty() {
                self.nominated.by_node.remove(&n.node);
            }
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
        let mut extra_pods = 0i64;
        let mut extra: Vec<(usize, i64)> = Vec::new();
        let mut used_ports: Vec<HostPort> = Vec::new();
        for n in self.nominated.against(&self.names[i], priority, uid) {
            extra_pods += 1;
            extra.extend_from_slice(&n.requests);
            used_ports.extend_from_slice(&n.ports);
        }
        if extra_pods == 0 {
            return None;
        }
        let mut mask = 0u64;
        if self.requested[PODS][i] - freed.pods + extra_pods + 1 > self.allocatable[PODS][i] {
            mask |= 1;
        }
        if !fit.requests_nothing {
            for (j, &(col, amount)) in fit.checks.iter().enumerate() {
                let more: i64 = extra
                    .iter()
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
            used_ports.iter().any(|&(up, uip, uport)| {
                up == proto
                    && uport == port
                    && (ip == self.bind_all_ip || uip == self.bind_all_ip || uip == ip)
            })
        });
        conflict.then_some(u64::MAX)
    }
}
