//! A pod group placed all-or-nothing in one call (upstream's pod group scheduling cycle,
//! `schedule_one_podgroup.go`, `podGroupSchedulingDefaultAlgorithm`).
//!
//! Upstream tries the group's pods one by one in a fixed order on one snapshot: each pod
//! runs the whole scheduling algorithm, and a pod that fits is assumed *in the snapshot*
//! so the next pods count it (its requests, its labels for PodTopologySpread and
//! InterPodAffinity, its host ports). Once the algorithm is over every assumption is
//! reverted, and only if enough pods fit does the scheduler assume them for real and
//! bind them. This module is that loop, with the same kernels as a single attempt
//! (`cycle`): each member is one `schedule` call, and a member that fits is accounted
//! on its node before the next is placed. Members are examined within a placement (a
//! subset of the nodes, for topology-aware scheduling) when one is given.
//!
//! A member's own nomination (`status.nominatedNodeName`) is suspended while it is
//! accounted, as upstream's assume takes the pod out of the nominator and the revert puts
//! it back, so the room it had reserved is not counted twice by the members after it.
//!
//! Every member is tried even when the group can no longer reach its count: the
//! scheduler reports each member's own diagnosis, as upstream does. The snapshot is
//! left as it was found (pod accounting and nominations restored), with the start
//! index and the random state advanced as by the individual attempts.

use pyo3::prelude::*;

use crate::cycle::Outcome;
use crate::pod::CompiledPod;
use crate::profile::Profile;
use crate::snapshot::py::ScheduleResult;
use crate::snapshot::Snapshot;

/// The outcome of one group placement, as Python sees it.
#[pyclass(frozen, module = "ksched._core")]
pub struct GangResult {
    /// One result per member, in the order they were given.
    #[pyo3(get)]
    pub results: Vec<Py<ScheduleResult>>,
    /// How many members fit.
    #[pyo3(get)]
    pub placed: usize,
    /// How many members had to fit for the group to be placed.
    #[pyo3(get)]
    pub need: usize,
}

#[pymethods]
impl GangResult {
    /// Whether at least `need` members fit: the group is placed.
    #[getter]
    fn schedulable(&self) -> bool {
        self.placed >= self.need && self.placed > 0
    }

    fn __repr__(&self) -> String {
        format!(
            "GangResult(placed={}/{}, need={})",
            self.placed,
            self.results.len(),
            self.need
        )
    }
}

impl Snapshot {
    /// The slots of `names` in examination order (unknown names are left out): the
    /// placement a group is restricted to.
    pub fn placement_slots(&mut self, names: &[String]) -> Vec<u32> {
        self.ensure_order();
        let wanted: ahash::AHashSet<u32> = names
            .iter()
            .filter_map(|n| self.slot_of(n))
            .filter(|&s| self.has_node[s as usize])
            .collect();
        self.order
            .iter()
            .copied()
            .filter(|s| wanted.contains(s))
            .collect()
    }

    /// Place `pods` in order within `within` (all nodes when None), each member that
    /// fits accounted before the next is tried; every accounting (and every suspended
    /// nomination) is undone before returning.
    pub fn schedule_gang(
        &mut self,
        pods: &[&CompiledPod],
        profile: &Profile,
        within: Option<&[u32]>,
    ) -> Vec<Outcome> {
        let mut outs = Vec::with_capacity(pods.len());
        let mut placed: Vec<&str> = Vec::new();
        let mut suspended: Vec<(&CompiledPod, String)> = Vec::new();
        let mut ports = Vec::new();
        for pod in pods {
            let out = self.schedule_within(pod, profile, false, true, within);
            if let Some(slot) = out.chosen {
                if !pod.host_ports.is_empty() {
                    self.save_ports(&mut ports, slot);
                }
                if let Some(node) = self.nominated.node_of(&pod.uid).map(str::to_string) {
                    self.clear_nominated(&pod.uid);
                    suspended.push((pod, node));
                }
                let node = self.names[slot as usize].to_string();
                self.add_pod(pod, &node, true);
                placed.push(&pod.uid);
            }
            outs.push(out);
        }
        for uid in placed {
            self.remove_pod(uid);
        }
        self.restore_ports(ports);
        for (pod, node) in suspended {
            self.set_nominated(pod, &node);
        }
        outs
    }
}
