//! `ksched._core`: the node snapshot and the built-in Filter/Score kernels.
//!
//! This file only registers classes and functions; the logic lives in the modules.

pub mod args;
pub mod cycle;
pub mod explain;
pub mod gang;
pub mod normalize;
pub mod plugins;
pub mod pod;
pub mod preemption;
pub mod profile;
pub mod reuse;
pub mod sample;
pub mod selector;
pub mod snapshot;
pub mod volume;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<snapshot::py::ScheduleResult>()?;
    m.add_class::<gang::GangResult>()?;
    m.add_class::<cycle::EvaluationCounts>()?;
    m.add_class::<preemption::PreemptionDryRun>()?;
    m.add_class::<explain::AttemptTrace>()?;
    m.add_class::<explain::AttemptState>()?;
    m.add_class::<pod::CompiledPod>()?;
    m.add_class::<profile::Profile>()?;
    m.add_class::<volume::VolumeRestrictionsRequest>()?;
    m.add_class::<volume::VolumeZoneRequest>()?;
    m.add_class::<volume::NodeVolumeLimitsRequest>()?;
    m.add_class::<volume::VolumeBindingRequest>()?;
    m.add_class::<plugins::dynamic_resources::DraDevices>()?;
    m.add_class::<plugins::dynamic_resources::DraAllocator>()?;
    m.add("FILTER_PLUGINS", profile::filter_plugin_names())?;
    m.add("SCORE_PLUGINS", profile::score_plugin_names())?;
    m.add("PRE_FILTER_PLUGINS", profile::pre_filter_plugin_names())?;
    m.add("PRE_SCORE_PLUGINS", profile::pre_score_plugin_names())?;
    m.add_function(wrap_pyfunction!(num_feasible_nodes_to_find, m)?)?;
    Ok(())
}

/// How many feasible nodes an attempt looks for among `num_all_nodes` nodes with the
/// given percentageOfNodesToScore (0 = adaptive), as kube-scheduler computes it.
#[pyfunction]
fn num_feasible_nodes_to_find(num_all_nodes: usize, percentage: u32) -> usize {
    sample::num_feasible_nodes_to_find(num_all_nodes, percentage)
}
