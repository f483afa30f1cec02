//! Built-in plugins with Rust kernels. One module per plugin, named as upstream names it.
//!
//! A kernel never allocates per node on the hot path: a Filter answers "fits" or a compact
//! [`Reject`] whose reason strings are produced only when a diagnosis is needed.

pub mod node_name;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod taint;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plugin {
    NodeUnschedulable,
    NodeName,
    NodeResourcesFit,
}

impl Plugin {
    pub const ALL: [Plugin; 3] = [
        Plugin::NodeUnschedulable,
        Plugin::NodeName,
        Plugin::NodeResourcesFit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Plugin::NodeUnschedulable => node_unschedulable::NAME,
            Plugin::NodeName => node_name::NAME,
            Plugin::NodeResourcesFit => node_resources_fit::NAME,
        }
    }

    pub fn parse(name: &str) -> Option<Plugin> {
        Plugin::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn has_filter(self) -> bool {
        true
    }

    pub fn has_score(self) -> bool {
        matches!(self, Plugin::NodeResourcesFit)
    }
}

/// Why a Filter rejected a node. `detail` is plugin-specific (a bitmask of failed
/// resources for NodeResourcesFit) and turned into reason strings only on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub plugin: Plugin,
    /// UnschedulableAndUnresolvable: removing pods from the node would not help.
    pub unresolvable: bool,
    pub detail: u64,
}
