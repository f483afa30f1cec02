//! NodeName: a pod that sets `spec.nodeName` fits only the node of that name.

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// Filter: `wanted` is the slot of the requested node, resolved once per pod
/// (`None` when the pod names no node, `Some(None)` when it names a node not in the snapshot).
#[inline]
pub fn filter(wanted: Option<Option<u32>>, slot: u32) -> bool {
    match wanted {
        None => true,
        Some(want) => want == Some(slot),
    }
}
