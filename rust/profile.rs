//! A scheduling profile as the kernels see it: which Filter and Score plugins run, in
//! which order, with which weights and args, and the effective percentageOfNodesToScore.
//!
//! Built once per profile by the Python framework from the effective
//! KubeSchedulerConfiguration; only plugins with Rust kernels appear here (the framework
//! runs Python plugins around the Rust call).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args;
use crate::plugins::balanced_allocation::BalancedArgs;
use crate::plugins::inter_pod_affinity::IpaArgs;
use crate::plugins::node_affinity::NodeAffinityArgs;
use crate::plugins::node_resources_fit::FitArgs;
use crate::plugins::pod_topology_spread::SpreadArgs;
use crate::plugins::volume_binding::VolumeBindingArgs;
use crate::plugins::Plugin;

#[pyclass(frozen, module = "ksched._core")]
#[derive(Clone, Debug)]
pub struct Profile {
    /// Unique per built profile (a clone keeps it, and its content): the key of the
    /// per-node results attempts reuse (see `reuse`).
    pub id: u64,
    pub filters: Vec<Plugin>,
    pub scores: Vec<(Plugin, i64)>,
    pub fit: FitArgs,
    pub balanced: BalancedArgs,
    pub node_affinity: NodeAffinityArgs,
    pub inter_pod_affinity: IpaArgs,
    pub spread: SpreadArgs,
    pub volume_binding: VolumeBindingArgs,
    /// 0 = adaptive.
    pub percentage_of_nodes_to_score: u32,
    /// How many of `filters` come before DynamicResources' Filter in the profile's
    /// Filter order (`None`: all of them).
    pub dynamic_resources_at: Option<usize>,
    /// The plugins enabled at PreScore that have Rust kernels (a plugin's PreScore may
    /// be enabled while its Score is not): their PreScore evaluations are counted.
    pub pre_scores: Vec<Plugin>,
    /// The plugins enabled at PreFilter that the core runs, in PreFilter order (a
    /// plugin's PreFilter may be enabled while its Filter is not).
    pub pre_filters: Vec<Plugin>,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            id: crate::reuse::next_profile_id(),
            filters: vec![
                Plugin::NodeUnschedulable,
                Plugin::NodeName,
                Plugin::NodeResourcesFit,
            ],
            scores: vec![(Plugin::NodeResourcesFit, 1)],
            fit: FitArgs::default(),
            balanced: BalancedArgs::default(),
            node_affinity: NodeAffinityArgs::default(),
            inter_pod_affinity: IpaArgs::default(),
            spread: SpreadArgs::default(),
            volume_binding: VolumeBindingArgs::default(),
            percentage_of_nodes_to_score: 0,
            dynamic_resources_at: None,
            pre_scores: vec![Plugin::NodeResourcesFit],
            pre_filters: vec![Plugin::NodeResourcesFit],
        }
    }
}

impl Profile {
    pub fn has_score(&self, plugin: Plugin) -> bool {
        self.scores.iter().any(|&(p, _)| p == plugin)
    }
}

#[pymethods]
impl Profile {
    #[new]
    #[pyo3(signature = (filters, scores, plugin_args = None, percentage_of_nodes_to_score = 0, dynamic_resources_at = None, pre_scores = None, pre_filters = None))]
    fn py_new(
        filters: Vec<String>,
        scores: Vec<(String, i64)>,
        plugin_args: Option<&Bound<'_, PyDict>>,
        percentage_of_nodes_to_score: i64,
        dynamic_resources_at: Option<usize>,
        pre_scores: Option<Vec<String>>,
        pre_filters: Option<Vec<String>>,
    ) -> PyResult<Self> {
        if !(0..=100).contains(&percentage_of_nodes_to_score) {
            return Err(PyValueError::new_err(format!(
                "percentageOfNodesToScore: Invalid value: {percentage_of_nodes_to_score}: not in valid range [0-100]"
            )));
        }
        if let Some(at) = dynamic_resources_at {
            if at > filters.len() {
                return Err(PyValueError::new_err(format!(
                    "dynamic_resources_at: {at} is past the {} filters",
                    filters.len()
                )));
            }
        }
        let mut p = Profile {
            filters: Vec::new(),
            scores: Vec::new(),
            percentage_of_nodes_to_score: percentage_of_nodes_to_score as u32,
            dynamic_resources_at,
            pre_scores: Vec::new(),
            pre_filters: Vec::new(),
            ..Profile::default()
        };
        for name in filters {
            match Plugin::parse(&name) {
                Some(pl) if pl.has_filter() => p.filters.push(pl),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "filter plugin {name:?} has no Rust kernel (known: {})",
                        known(Plugin::has_filter)
                    )))
                }
            }
        }
        for (name, weight) in scores {
            match Plugin::parse(&name) {
                Some(pl) if pl.has_score() => p.scores.push((pl, weight)),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "score plugin {name:?} has no Rust kernel (known: {})",
                        known(Plugin::has_score)
                    )))
                }
            }
        }
        match pre_filters {
            None => {
                p.pre_filters = p
                    .filters
                    .iter()
                    .copied()
                    .filter(|pl| pl.has_pre_filter())
                    .collect()
            }
            Some(names) => {
                for name in names {
                    match Plugin::parse(&name) {
                        Some(pl) if pl.has_pre_filter() => p.pre_filters.push(pl),
                        _ => {
                            return Err(PyValueError::new_err(format!(
                                "pre-filter plugin {name:?} has no Rust kernel"
                            )))
                        }
                    }
                }
            }
        }
        match pre_scores {
            None => {
                p.pre_scores = p
                    .scores
                    .iter()
                    .map(|&(pl, _)| pl)
                    .filter(|pl| pl.has_pre_score())
                    .collect()
            }
            Some(names) => {
                for name in names {
                    match Plugin::parse(&name) {
                        Some(pl) if pl.has_pre_score() => p.pre_scores.push(pl),
                        _ => {
                            return Err(PyValueError::new_err(format!(
                                "pre-score plugin {name:?} has no Rust kernel"
                            )))
                        }
                    }
                }
            }
        }
        if let Some(all) = plugin_args {
            if let Some(a) = args::get(all, "NodeResourcesFit")? {
                p.fit = FitArgs::from_py(&args::as_dict(&a, "NodeResourcesFitArgs")?)?;
            }
            if let Some(a) = args::get(all, "NodeResourcesBalancedAllocation")? {
                let d = args::as_dict(&a, "NodeResourcesBalancedAllocationArgs")?;
                p.balanced = BalancedArgs::from_py(&d)?;
            }
            if let Some(a) = args::get(all, "NodeAffinity")? {
                p.node_affinity =
                    NodeAffinityArgs::from_py(&args::as_dict(&a, "NodeAffinityArgs")?)?;
            }
            if let Some(a) = args::get(all, "InterPodAffinity")? {
                p.inter_pod_affinity =
                    IpaArgs::from_py(&args::as_dict(&a, "InterPodAffinityArgs")?)?;
            }
            if let Some(a) = args::get(all, "PodTopologySpread")? {
                p.spread = SpreadArgs::from_py(&args::as_dict(&a, "PodTopologySpreadArgs")?)?;
            }
            if let Some(a) = args::get(all, "VolumeBinding")? {
                p.volume_binding =
                    VolumeBindingArgs::from_py(&args::as_dict(&a, "VolumeBindingArgs")?)?;
            }
        }
        Ok(p)
    }

    #[getter]
    fn filters(&self) -> Vec<&'static str> {
        self.filters.iter().map(|p| p.name()).collect()
    }

    #[getter]
    fn scores(&self) -> Vec<(&'static str, i64)> {
        self.scores.iter().map(|&(p, w)| (p.name(), w)).collect()
    }

    #[getter]
    fn percentage_of_nodes_to_score(&self) -> u32 {
        self.percentage_of_nodes_to_score
    }

    #[getter]
    fn dynamic_resources_at(&self) -> Option<usize> {
        self.dynamic_resources_at
    }

    #[getter]
    fn pre_filters(&self) -> Vec<&'static str> {
        self.pre_filters.iter().map(|p| p.name()).collect()
    }

    #[getter]
    fn pre_scores(&self) -> Vec<&'static str> {
        self.pre_scores.iter().map(|p| p.name()).collect()
    }
}

fn known(pred: fn(Plugin) -> bool) -> String {
    Plugin::ALL
        .into_iter()
        .filter(|&p| pred(p))
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names of the plugins with Rust Filter kernels.
pub fn filter_plugin_names() -> Vec<&'static str> {
    Plugin::ALL
        .into_iter()
        .filter(|p| p.has_filter())
        .map(|p| p.name())
        .collect()
}

/// Names of the plugins whose upstream PreFilter the core runs.
pub fn pre_filter_plugin_names() -> Vec<&'static str> {
    Plugin::ALL
        .into_iter()
        .filter(|p| p.has_pre_filter())
        .map(|p| p.name())
        .collect()
}

/// Names of the Score plugins that have a PreScore upstream.
pub fn pre_score_plugin_names() -> Vec<&'static str> {
    Plugin::ALL
        .into_iter()
        .filter(|p| p.has_pre_score())
        .map(|p| p.name())
        .collect()
}

/// Names of the plugins with Rust Score kernels.
pub fn score_plugin_names() -> Vec<&'static str> {
    Plugin::ALL
        .into_iter()
        .filter(|p| p.has_score())
        .map(|p| p.name())
        .collect()
}
