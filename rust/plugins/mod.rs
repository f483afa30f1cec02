//! Built-in plugins with Rust kernels. One module per plugin, named as upstream names it.
//!
//! A kernel never allocates per node on the hot path: a Filter answers "fits" or a compact
//! [`Reject`] whose reason strings are produced only when a diagnosis is needed.

pub mod balanced_allocation;
pub mod dynamic_resources;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_declared_features;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod taint;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plugin {
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    NodeDeclaredFeatures,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    /// Runs after every other Filter for a pod whose PreFilter (in Python) handed the
    /// core an allocator; never listed in a profile (see `dynamic_resources`).
    DynamicResources,
}

impl Plugin {
    pub const ALL: [Plugin; 16] = [
        Plugin::NodeUnschedulable,
        Plugin::NodeName,
        Plugin::TaintToleration,
        Plugin::NodeAffinity,
        Plugin::NodePorts,
        Plugin::NodeResourcesFit,
        Plugin::VolumeRestrictions,
        Plugin::NodeVolumeLimits,
        Plugin::VolumeBinding,
        Plugin::VolumeZone,
        Plugin::PodTopologySpread,
        Plugin::InterPodAffinity,
        Plugin::NodeDeclaredFeatures,
        Plugin::NodeResourcesBalancedAllocation,
        Plugin::ImageLocality,
        Plugin::DynamicResources,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Plugin::NodeUnschedulable => node_unschedulable::NAME,
            Plugin::NodeName => node_name::NAME,
            Plugin::TaintToleration => taint_toleration::NAME,
            Plugin::NodeAffinity => node_affinity::NAME,
            Plugin::NodePorts => node_ports::NAME,
            Plugin::NodeResourcesFit => node_resources_fit::NAME,
            Plugin::VolumeRestrictions => volume_restrictions::NAME,
            Plugin::NodeVolumeLimits => node_volume_limits::NAME,
            Plugin::VolumeBinding => volume_binding::NAME,
            Plugin::VolumeZone => volume_zone::NAME,
            Plugin::PodTopologySpread => pod_topology_spread::NAME,
            Plugin::InterPodAffinity => inter_pod_affinity::NAME,
            Plugin::NodeDeclaredFeatures => node_declared_features::NAME,
            Plugin::NodeResourcesBalancedAllocation => balanced_allocation::NAME,
            Plugin::ImageLocality => image_locality::NAME,
            Plugin::DynamicResources => dynamic_resources::NAME,
        }
    }

    pub fn parse(name: &str) -> Option<Plugin> {
        Plugin::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn has_filter(self) -> bool {
        !matches!(
            self,
            Plugin::NodeResourcesBalancedAllocation
                | Plugin::ImageLocality
                | Plugin::DynamicResources
        )
    }

    /// Upstream's plugin has a PreFilter that the core runs (DynamicResources' runs in
    /// Python).
    pub fn has_pre_filter(self) -> bool {
        matches!(
            self,
            Plugin::NodeAffinity
                | Plugin::NodePorts
                | Plugin::NodeResourcesFit
                | Plugin::VolumeRestrictions
                | Plugin::NodeVolumeLimits
                | Plugin::VolumeBinding
                | Plugin::VolumeZone
                | Plugin::PodTopologySpread
                | Plugin::InterPodAffinity
                | Plugin::NodeDeclaredFeatures
        )
    }

    /// Upstream's Score plugin has a PreScore (ImageLocality's has none).
    pub fn has_pre_score(self) -> bool {
        self.has_score() && self != Plugin::ImageLocality
    }

    pub fn has_score(self) -> bool {
        matches!(
            self,
            Plugin::TaintToleration
                | Plugin::NodeAffinity
                | Plugin::NodeResourcesFit
                | Plugin::VolumeBinding
                | Plugin::PodTopologySpread
                | Plugin::InterPodAffinity
                | Plugin::NodeResourcesBalancedAllocation
                | Plugin::ImageLocality
        )
    }
}

/// Why a Filter rejected a node. `detail` is plugin-specific (a bitmask of failed
/// resources for NodeResourcesFit, the taint index for TaintToleration, ...) and turned
/// into reason strings only on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub plugin: Plugin,
    /// UnschedulableAndUnresolvable: removing pods from the node would not help.
    pub unresolvable: bool,
    pub detail: u64,
}

/// `detail` of a node left out by a PreFilter result (NodeAffinity's node names).
pub const DETAIL_NOT_IN_PREFILTER_RESULT: u64 = u64::MAX;

impl Reject {
    /// The plugin the node's status names: none for a node left out by a PreFilter
    /// result. Upstream gives those nodes the diagnosis' absent-nodes status
    /// (`findNodesThatFitPod`: `SetAbsentNodesStatus(NewStatus(UnschedulableAndUnresolvable,
    /// "node(s) didn't satisfy plugin(s) [...]"))`), which carries no plugin, although the
    /// narrowing plugin counts among the unschedulable plugins.
    pub fn status_plugin(&self) -> &'static str {
        if self.detail == DETAIL_NOT_IN_PREFILTER_RESULT {
            ""
        } else {
            self.plugin.name()
        }
    }
}

/// `detail` of a Filter that returned an error on the node (not a rejection): the
/// attempt fails with that error.
pub const DETAIL_ERROR: u64 = u64::MAX - 1;
