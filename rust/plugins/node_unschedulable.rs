//! NodeUnschedulable: a node with `spec.unschedulable` rejects pods that do not tolerate
//! the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use super::taint::{tolerates, Effect, Toleration};

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// PreFilter: whether the pod tolerates the unschedulable taint (computed once per pod).
pub fn tolerates_unschedulable(tolerations: &[Toleration]) -> bool {
    tolerations
        .iter()
        .any(|t| tolerates(t, TAINT_NODE_UNSCHEDULABLE, "", Effect::NoSchedule))
}

/// Filter: passes unless the node is unschedulable and the pod does not tolerate that.
#[inline]
pub fn filter(node_unschedulable: bool, pod_tolerates: bool) -> bool {
    !node_unschedulable || pod_tolerates
}
