//! The Python face of the snapshot: `ksched._core.Snapshot` and `ScheduleResult`.
//!
//! Node and pod data arrive as plain Python values (dicts of canonical integer amounts,
//! lists of tuples) already validated by `ksched.api`; anything still malformed is
//! rejected with a `ValueError` naming the node and field. Every method that walks nodes
//! releases the GIL.

use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::plugins::dynamic_resources::DraAllocator;
use pyo3::types::PyDict;

use super::{storage, NodeSpec, Snapshot};
use crate::cycle::{Evals, EvaluationCounts, Outcome};
use crate::explain::{AttemptState, AttemptTrace};
use crate::gang::GangResult;
use crate::plugins::taint::Effect;
use crate::plugins::volume_binding;
use crate::plugins::{Plugin, DETAIL_ERROR};
use crate::pod::CompiledPod;
use crate::preemption::{pick_one, Candidate, Pdb, PreemptionDryRun, Victim};
use crate::profile::Profile;
use crate::selector::{LabelSelectorSpec, Selector};
use crate::volume::{unique_name, VolumeBindingRequest};

/// VolumeBinding's plan on one node: `([(claim, pv)], [(claim, capacity)])`.
type VolumeBindingPlan = (Vec<(u32, u32)>, Vec<(u32, Option<u32>)>);

/// A failed node's status: `(node, unresolvable, plugin, reasons)`.
type NodeStatus = (String, bool, &'static str, Vec<String>);

/// A node no node-level filter let through, when no node fit.
struct Failed {
    slot: u32,
    name: Arc<str>,
    unresolvable: bool,
    /// The plugin the status names ("" for a node a PreFilter result left out).
    plugin: &'static str,
    /// The plugin that rejected the node (the narrowing one for a left-out node).
    rejector: &'static str,
    /// Index into `ScheduleResult::reason_sets`.
    reasons: usize,
}

/// `spread_domains`' answer per constraint: `(min, second smallest, [(value, count)])`.
type SpreadDomains = (i64, i64, Vec<(String, i64)>);

#[pyclass(frozen, module = "ksched._core")]
pub struct ScheduleResult {
    #[pyo3(get)]
    node: Option<String>,
    #[pyo3(get)]
    evaluated_nodes: usize,
    #[pyo3(get)]
    feasible_nodes: usize,
    #[pyo3(get)]
    num_all_nodes: usize,
    /// Rejected nodes in examination order (kept only when no node was feasible).
    failed: Vec<Failed>,
    /// The distinct reason lists of `failed` (most nodes share a few).
    reason_sets: Vec<Vec<String>>,
    scores: Vec<(String, i64)>,
    /// The message of a PreFilter that rejected the pod outright.
    #[pyo3(get)]
    pre_filter_msg: Option<String>,
    /// The plugins whose PreFilter narrowed the nodes to a set of names (upstream's
    /// PreFilter "plugins with nodes", which are unschedulable plugins of a failure).
    #[pyo3(get)]
    pre_filter_plugins: Vec<&'static str>,
    /// That PreFilter returned an error (not UnschedulableAndUnresolvable).
    #[pyo3(get)]
    pre_filter_error: bool,
    /// `(plugin, message)` of a Filter that returned an error: the attempt fails.
    #[pyo3(get)]
    filter_error: Option<(&'static str, String)>,
    evals: Evals,
}

#[pymethods]
impl ScheduleResult {
    /// Every rejected node's status, when no node was feasible:
    /// `[(node, unresolvable, plugin, [reason, ...]), ...]`.
    #[getter]
    fn statuses(&self) -> Vec<NodeStatus> {
        self.failed
            .iter()
            .map(|f| {
                (
                    f.name.to_string(),
                    f.unresolvable,
                    f.plugin,
                    self.reason_sets[f.reasons].clone(),
                )
            })
            .collect()
    }

    /// One node's status, `(unresolvable, plugin, [reason, ...])`, or None when the node
    /// was not rejected (or not examined).
    fn status_of(&self, node: &str) -> Option<(bool, &'static str, Vec<String>)> {
        self.failed.iter().find(|f| &*f.name == node).map(|f| {
            (
                f.unresolvable,
                f.plugin,
                self.reason_sets[f.reasons].clone(),
            )
        })
    }

    /// How many nodes gave each reason (upstream's FitError histogram).
    fn reason_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut per_set = vec![0usize; self.reason_sets.len()];
        for f in &self.failed {
            per_set[f.reasons] += 1;
        }
        let mut counts: ahash::AHashMap<&str, usize> = ahash::AHashMap::new();
        for (set, n) in self.reason_sets.iter().zip(per_set) {
            for r in set {
                *counts.entry(r.as_str()).or_default() += n;
            }
        }
        let d = PyDict::new(py);
        for (k, v) in counts {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The plugins that rejected some node (upstream's UnschedulablePlugins, which
    /// include a PreFilter that narrowed the nodes, whether or not it left one out).
    fn unschedulable_plugins(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self.pre_filter_plugins.clone();
        for f in &self.failed {
            if !out.contains(&f.rejector) {
                out.push(f.rejector);
            }
        }
        out
    }

    /// How many rejected nodes removing pods might help (not UnschedulableAndUnresolvable).
    #[getter]
    fn num_resolvable(&self) -> usize {
        self.failed.iter().filter(|f| !f.unresolvable).count()
    }

    /// The names of those nodes, in examination order.
    fn resolvable_nodes(&self) -> Vec<String> {
        self.failed
            .iter()
            .filter(|f| !f.unresolvable)
            .map(|f| f.name.to_string())
            .collect()
    }

    /// `(plugin, extension point, count)` of the attempt's non-zero plugin evaluations
    /// (upstream's `scheduler_plugin_evaluation_total`: the built-in PreFilters that did
    /// not skip, Filter calls per node, PreScores that did not skip, Score calls).
    #[getter]
    fn plugin_evaluations(&self) -> Vec<(&'static str, &'static str, u32)> {
        self.evals.nonzero()
    }

    /// How many nodes were scored (0 when the attempt did not get to Score).
    #[getter]
    fn scored_nodes(&self) -> u32 {
        self.evals.scored
    }

    /// `(node, total score)` of every scored node, best first (only with `explain=True`).
    #[getter]
    fn scores(&self) -> Vec<(String, i64)> {
        self.scores.clone()
    }

    fn __repr__(&self) -> String {
        match &self.node {
            Some(n) => format!(
                "ScheduleResult(node={n:?}, evaluated={}, feasible={})",
                self.evaluated_nodes, self.feasible_nodes
            ),
            None => format!(
                "ScheduleResult(node=None, 0/{} nodes feasible)",
                self.num_all_nodes
            ),
        }
    }
}

fn node_error(node: &str, field: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("Node {node}: {field}: {msg}"))
}

impl Snapshot {
    fn result_from(&self, out: Outcome) -> ScheduleResult {
        let mut failed = Vec::new();
        let mut reason_sets: Vec<Vec<String>> = Vec::new();
        if let (Some(st), None) = (&out.state, out.chosen) {
            // Reasons depend on the plugin and its detail only: format each distinct
            // one once.
            let mut seen: ahash::AHashMap<(Plugin, u64), usize> = ahash::AHashMap::new();
            let mut last: Option<((Plugin, u64), usize)> = None;
            failed.reserve(out.failures.len());
            for (slot, r) in &out.failures {
                let format = || {
                    reason_sets.push(self.reasons(st, *slot, r));
                    reason_sets.len() - 1
                };
                let key = (r.plugin, r.detail);
                let reasons = if let Some((_, i)) = last.filter(|(k, _)| *k == key) {
                    i // neighbouring nodes mostly fail alike: no hash lookup
                } else {
                    let i = *seen.entry(key).or_insert_with(format);
                    last = Some((key, i));
                    i
                };
                failed.push(Failed {
                    slot: *slot,
                    name: self.names[*slot as usize].clone(),
                    unresolvable: r.unresolvable,
                    plugin: r.status_plugin(),
                    rejector: r.plugin.name(),
                    reasons,
                });
            }
        }
        let pre_filter_msg = out
            .state
            .as_ref()
            .and_then(|st| st.prefilter_reject.as_ref())
            .map(|(_, m)| m.clone());
        let pre_filter_error = out.state.as_ref().is_some_and(|st| st.prefilter_error);
        // A PreFilter that rejects the pod outright ends upstream's RunPreFilterPlugins
        // without its plugins-with-nodes set: only the rejecting plugin counts.
        let narrowed = out.narrowed && pre_filter_msg.is_none();
        let filter_error = match (&out.error, &out.state) {
            (Some((slot, r)), Some(st)) => {
                Some((r.plugin.name(), self.error_message(st, *slot, r)))
            }
            _ => None,
        };
        ScheduleResult {
            pre_filter_msg,
            pre_filter_plugins: if narrowed {
                vec![Plugin::NodeAffinity.name()]
            } else {
                Vec::new()
            },
            pre_filter_error,
            filter_error,
            node: out.chosen.map(|s| self.names[s as usize].to_string()),
            evaluated_nodes: out.evaluated_nodes,
            feasible_nodes: out.feasible_nodes,
            num_all_nodes: out.num_all_nodes,
            failed,
            reason_sets,
            evals: out.evals,
            scores: out
                .scores
                .iter()
                .map(|&(s, t)| (self.names[s as usize].to_string(), t))
                .collect(),
        }
    }

    /// The slots of preemption's potential nodes: the resolvable rejections of a
    /// `ScheduleResult`, or node names; nodes no longer in the snapshot are left out.
    fn potential_slots(&self, potential: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let live = |slot: u32| self.has_node[slot as usize];
        if let Ok(result) = potential.cast::<ScheduleResult>() {
            let result = result.get();
            return Ok(result
                .failed
                .iter()
                .filter(|f| !f.unresolvable)
                .filter_map(|f| {
                    let same = self
                        .names
                        .get(f.slot as usize)
                        .is_some_and(|n| Arc::ptr_eq(n, &f.name));
                    if same && live(f.slot) {
                        Some(f.slot)
                    } else {
                        self.slot_of(&f.name).filter(|&s| live(s))
                    }
                })
                .collect());
        }
        let names: Vec<String> = potential.extract().map_err(|_| {
            PyValueError::new_err("potential nodes must be a ScheduleResult or a list of names")
        })?;
        Ok(names
            .iter()
            .filter_map(|n| self.slot_of(n).filter(|&s| live(s)))
            .collect())
    }

    fn compile_pdbs(&mut self, pdbs: Vec<PdbTuple>) -> Vec<Pdb> {
        pdbs.into_iter()
            .map(|(namespace, selector, allowed, disrupted)| {
                let spec =
                    selector.and_then(|s| LabelSelectorSpec::parse(&s, "spec.selector").ok());
                let selector = spec
                    .map(|spec| Selector::compile(Some(&spec), &mut self.interner))
                    .filter(|s| !s.is_empty());
                Pdb {
                    namespace: self.interner.intern(&namespace),
                    selector,
                    disruptions_allowed: allowed,
                    disrupted: disrupted.into_iter().collect(),
                }
            })
            .collect()
    }
}

/// `(namespace, spec.selector, status.disruptionsAllowed, names in status.disruptedPods)`.
type PdbTuple<'py> = (String, Option<Bound<'py, PyAny>>, i64, Vec<String>);

#[pymethods]
impl Snapshot {
    #[new]
    #[pyo3(signature = (seed = None))]
    fn py_new(seed: Option<u64>) -> Self {
        Snapshot::new(seed)
    }

    /// Add or replace a node. `allocatable` maps resource names to canonical integer
    /// amounts; `taints` are `(key, value, effect)`; `declared_features` the node's
    /// declared features among the registered ones.
    #[pyo3(name = "upsert_node", signature = (name, allocatable, labels = None, taints = Vec::new(), unschedulable = false, images = Vec::new(), declared_features = Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn py_upsert_node(
        &mut self,
        name: String,
        allocatable: &Bound<'_, PyDict>,
        labels: Option<&Bound<'_, PyDict>>,
        taints: Vec<(String, String, String)>,
        unschedulable: bool,
        images: Vec<(Vec<String>, i64)>,
        declared_features: Vec<String>,
    ) -> PyResult<()> {
        let mut spec = NodeSpec {
            name,
            unschedulable,
            images,
            declared_features,
            ..NodeSpec::default()
        };
        for (k, v) in allocatable.iter() {
            let rname: String = k.extract().map_err(|_| {
                node_error(
                    &spec.name,
                    "status.allocatable",
                    "resource names must be strings",
                )
            })?;
            let amount: i64 = v.extract().map_err(|_| {
                node_error(
                    &spec.name,
                    &format!("status.allocatable[{rname}]"),
                    "must be an integer amount",
                )
            })?;
            spec.allocatable.push((rname, amount));
        }
        if let Some(labels) = labels {
            for (k, v) in labels.iter() {
                let k: String = k.extract().map_err(|_| {
                    node_error(&spec.name, "metadata.labels", "keys must be strings")
                })?;
                let v: String = v.extract().map_err(|_| {
                    node_error(
                        &spec.name,
                        &format!("metadata.labels[{k}]"),
                        "values must be strings",
                    )
                })?;
                spec.labels.push((k, v));
            }
        }
        for (i, (k, v, e)) in taints.into_iter().enumerate() {
            let effect = Effect::parse(&e).ok_or_else(|| {
                node_error(
                    &spec.name,
                    &format!("spec.taints[{i}].effect"),
                    format!("unsupported effect {e:?}"),
                )
            })?;
            spec.taints.push((k, v, effect));
        }
        self.upsert_node(&spec);
        Ok(())
    }

    /// The extended resource names some DeviceClass maps to (DRAExtendedResource):
    /// NodeResourcesFit leaves such a request to DynamicResources on nodes whose
    /// allocatable has none of it (upstream `shouldDelegateResourceToDRA`).
    fn set_dra_extended_resources(&mut self, names: Vec<String>) {
        let names: ahash::AHashSet<String> = names.into_iter().collect();
        if names != self.dra_extended {
            self.dra_extended = names;
            self.reuse.clear();
            self.generation += 1;
        }
    }

    /// The distinct sets, over the nodes, of the indices into `names` (extended
    /// resources backed by DRA) a node must get from DRA because its allocatable has
    /// none of them; sorted (DynamicResources' PreFilter builds one variant of the
    /// pod's claim for extended resources per set).
    fn dra_extended_patterns(&self, names: Vec<String>) -> Vec<Vec<usize>> {
        Snapshot::extended_patterns(self, &names)
    }

    /// The names set by `set_dra_extended_resources`, sorted.
    #[getter]
    fn dra_extended_resources(&self) -> Vec<String> {
        let mut v: Vec<String> = self.dra_extended.iter().cloned().collect();
        v.sort();
        v
    }

    /// VolumeBinding's plan on node `node_name` for `request` (what its Filter found
    /// there): `([(claim, pv)], [(claim, capacity or None)])`, indices into the
    /// request's `delay`, `pvs` and `capacities`; `None` when the node is unknown or the
    /// pod does not fit there.
    fn volume_binding_plan(
        &mut self,
        request: &VolumeBindingRequest,
        node_name: &str,
    ) -> Option<VolumeBindingPlan> {
        let slot = self
            .slot_of(node_name)
            .filter(|&s| self.has_node[s as usize])?;
        let st = volume_binding::prefilter(self, request);
        let p = volume_binding::plan(self, &st, slot);
        (p.reasons == 0 && p.error.is_none()).then_some((p.bindings, p.provisions))
    }

    /// Set node `name`'s CSINode: `limits` are `(driver, allocatable.count)` of the
    /// drivers that set a count, `migrated` the in-tree plugins of its
    /// `storage.alpha.kubernetes.io/migrated-plugins` annotation, `drivers` every driver
    /// name. The node need not exist yet.
    #[pyo3(signature = (name, limits, migrated = Vec::new(), drivers = Vec::new()))]
    fn set_csi_node(
        &mut self,
        name: &str,
        limits: Vec<(String, i64)>,
        migrated: Vec<String>,
        drivers: Vec<String>,
    ) {
        let csi = storage::CsiNode {
            limits: limits
                .iter()
                .map(|(d, n)| (self.interner.intern(d), *n))
                .collect(),
            migrated: migrated.iter().map(|p| self.interner.intern(p)).collect(),
            drivers: drivers.iter().map(|d| self.interner.intern(d)).collect(),
        };
        let slot = self.slot_of(name);
        self.storage.entry(slot, name).csi = Some(csi);
        self.generation += 1;
    }

    /// Forget node `name`'s CSINode; returns whether it had one.
    fn remove_csi_node(&mut self, name: &str) -> bool {
        let slot = self.slot_of(name);
        let had = self.storage.entry(slot, name).csi.take().is_some();
        self.storage.tidy(name);
        self.generation += 1;
        had
    }

    /// Set the CSI volumes attached to node `name` by VolumeAttachments, as
    /// `(attacher, volume handle)`.
    fn set_node_attachments(&mut self, name: &str, attachments: Vec<(String, String)>) {
        let att = attachments
            .iter()
            .map(|(d, h)| {
                (
                    self.interner.intern(d),
                    self.interner.intern(&unique_name(d, h)),
                )
            })
            .collect();
        let slot = self.slot_of(name);
        self.storage.entry(slot, name).attachments = att;
        self.storage.tidy(name);
        self.generation += 1;
    }

    /// The CSI volume claim `namespace/name` counts as on a node (NodeVolumeLimits),
    /// `(driver, volume handle)`; `None` when it counts as none.
    fn set_claim_volume(&mut self, key: &str, volume: Option<(String, String)>) {
        let k = self.interner.intern(key);
        let v = volume.map(|(driver, handle)| {
            (
                self.interner.intern(&driver),
                self.interner.intern(&unique_name(&driver, &handle)),
            )
        });
        let pods = &self.pods;
        self.storage.set_claim_volume(k, v, |idx| {
            let rec = pods.get(idx as usize)?.as_ref()?;
            let times = rec
                .volumes
                .as_ref()?
                .limit_keys
                .iter()
                .filter(|&&x| x == k)
                .count();
            Some((rec.slot, times))
        });
        self.generation += 1;
    }

    /// Add or replace a namespace and its labels.
    #[pyo3(name = "upsert_namespace", signature = (name, labels = None))]
    fn py_upsert_namespace(
        &mut self,
        name: &str,
        labels: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let mut l = Vec::new();
        if let Some(labels) = labels {
            for (k, v) in labels.iter() {
                let k: String = k.extract().map_err(|_| {
                    PyValueError::new_err(format!(
                        "Namespace {name}: metadata.labels: keys must be strings"
                    ))
                })?;
                let v: String = v.extract().map_err(|_| {
                    PyValueError::new_err(format!(
                        "Namespace {name}: metadata.labels[{k}]: values must be strings"
                    ))
                })?;
                l.push((k, v));
            }
        }
        self.upsert_namespace(name, &l);
        Ok(())
    }

    /// Forget a namespace; returns whether it was known.
    #[pyo3(name = "remove_namespace")]
    fn py_remove_namespace(&mut self, name: &str) -> bool {
        self.remove_namespace(name)
    }

    /// Remove a node; returns whether it was present.
    #[pyo3(name = "remove_node")]
    fn py_remove_node(&mut self, name: &str) -> bool {
        self.remove_node(name)
    }

    /// Account a pod bound to `node_name` (a pod seen through the informer).
    #[pyo3(name = "add_pod")]
    fn py_add_pod(&mut self, pod: &CompiledPod, node_name: &str) {
        self.add_pod(pod, node_name, false);
    }

    /// Account a pod the scheduler just placed, before the API server confirms it.
    fn assume(&mut self, pod: &CompiledPod, node_name: &str) {
        self.add_pod(pod, node_name, true);
    }

    /// Mark an assumed pod as bound; returns whether it was assumed on that node.
    fn confirm(&mut self, uid: &str, node_name: &str) -> bool {
        self.confirm_pod(uid, node_name)
    }

    /// Remove a pod's accounting (deleted pod, or forgetting a failed assumption).
    #[pyo3(name = "remove_pod")]
    fn py_remove_pod(&mut self, uid: &str) -> bool {
        self.remove_pod(uid)
    }

    /// Whether the pod is assumed (`True`), bound (`False`) or unknown (`None`).
    #[pyo3(name = "is_assumed")]
    fn py_is_assumed(&self, uid: &str) -> Option<bool> {
        self.is_assumed(uid)
    }

    /// Run Filter and Score for `pod` over the snapshot and pick a node. The GIL is
    /// released while nodes are examined. With `explain`, the result keeps every scored
    /// node's total. A pod with a nominated node is tried there first unless
    /// `use_nomination` is false.
    /// With `counts`, the attempt's plugin evaluations are added to them.
    #[pyo3(name = "schedule", signature = (pod, profile, explain = false, use_nomination = true, dra = None, counts = None))]
    #[allow(clippy::too_many_arguments)]
    fn py_schedule(
        &mut self,
        py: Python<'_>,
        pod: &CompiledPod,
        profile: &Profile,
        explain: bool,
        use_nomination: bool,
        dra: Option<PyRef<'_, DraAllocator>>,
        counts: Option<&Bound<'_, EvaluationCounts>>,
    ) -> ScheduleResult {
        self.pending_dra = dra.map(|d| d.inner.clone());
        let out = py.detach(|| Snapshot::schedule(self, pod, profile, explain, use_nomination));
        self.pending_dra = None;
        if let Some(c) = counts {
            c.get().add(&out.evals);
        }
        self.result_from(out)
    }

    /// Every node's Filter outcome and, for feasible nodes, each Score plugin's raw and
    /// normalized score (no sampling). One dict per node, in examination order.
    #[pyo3(name = "explain", signature = (pod, profile, dra = None))]
    fn py_explain<'py>(
        &mut self,
        py: Python<'py>,
        pod: &CompiledPod,
        profile: &Profile,
        dra: Option<PyRef<'py, DraAllocator>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.pending_dra = dra.map(|d| d.inner.clone());
        let (rows, st) = py.detach(|| Snapshot::explain(self, pod, profile));
        self.pending_dra = None;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let d = PyDict::new(py);
            d.set_item("node", &*self.names[row.slot as usize])?;
            match &row.reject {
                None => d.set_item("status", py.None())?,
                Some(r) => {
                    let s = PyDict::new(py);
                    s.set_item("plugin", r.status_plugin())?;
                    s.set_item(
                        "code",
                        if r.detail == DETAIL_ERROR {
                            "Error"
                        } else if r.unresolvable {
                            "UnschedulableAndUnresolvable"
                        } else {
                            "Unschedulable"
                        },
                    )?;
                    s.set_item("reasons", self.reasons(&st, row.slot, r))?;
                    d.set_item("status", s)?;
                }
            }
            let scores = PyDict::new(py);
            for (plugin, raw, norm) in &row.scores {
                let e = PyDict::new(py);
                e.set_item("raw", raw)?;
                e.set_item("normalized", norm)?;
                scores.set_item(plugin.name(), e)?;
            }
            d.set_item("scores", scores)?;
            d.set_item("total", row.total)?;
            out.push(d);
        }
        Ok(out)
    }

    /// One attempt for `pod` traced node by node (see `explain`): with `sample` the
    /// nodes the attempt would examine (`percentageOfNodesToScore`) and the node it
    /// would choose, without moving the start index or the random state; without it,
    /// every node. The GIL is released while nodes are examined.
    /// `dra` (DynamicResources' Filter) runs on each node after the built-in filters, as
    /// for `schedule`.
    #[pyo3(name = "explain_attempt", signature = (pod, profile, sample = true, use_nomination = true, dra = None))]
    fn py_explain_attempt(
        &mut self,
        py: Python<'_>,
        pod: &CompiledPod,
        profile: &Profile,
        sample: bool,
        use_nomination: bool,
        dra: Option<PyRef<'_, DraAllocator>>,
    ) -> AttemptTrace {
        self.pending_dra = dra.map(|d| d.inner.clone());
        let trace =
            py.detach(|| Snapshot::explain_attempt(self, pod, profile, sample, use_nomination));
        self.pending_dra = None;
        AttemptTrace::from_trace(self, trace)
    }

    /// Whether attempts reuse the per-node results of earlier attempts of pods alike
    /// (see `reuse`; on by default). Turning it off or on forgets what was kept. The
    /// results are the same either way: tests compare the two.
    fn set_result_reuse(&mut self, enabled: bool) {
        self.reuse_results = enabled;
        self.reuse.clear();
    }

    /// Whether PodTopologySpread's PreFilter keeps per-domain counts up to date between
    /// attempts (on by default) instead of summing them over every node in each; the
    /// counts are the same either way.
    fn set_domain_views(&mut self, enabled: bool) {
        self.domain_views = enabled;
        self.clear_domain_views();
    }

    /// How many pod signatures' per-node results are kept (see `set_result_reuse`).
    #[getter]
    fn result_reuse_keys(&self) -> usize {
        self.reuse.len()
    }

    /// The start index and random state the next attempt begins from.
    fn attempt_state(&self) -> AttemptState {
        AttemptState {
            next_start: self.next_start,
            rng: self.rng.clone(),
        }
    }

    /// Put back a state saved by `attempt_state`.
    fn restore_attempt_state(&mut self, state: &AttemptState) {
        self.next_start = state.next_start;
        self.rng = state.rng.clone();
    }

    /// Place `pods` in order as successive `schedule` calls would, each placed pod
    /// accounted on its node before the next is placed; the pods' accounting is undone
    /// before returning (the caller assumes them), while the start index and random
    /// state stay advanced as by the individual calls. The GIL is released throughout.
    /// With `counts`, every attempt's plugin evaluations are added to them.
    #[pyo3(name = "schedule_batch", signature = (pods, profile, counts = None))]
    fn py_schedule_batch(
        &mut self,
        py: Python<'_>,
        pods: Vec<PyRef<'_, CompiledPod>>,
        profile: &Profile,
        counts: Option<&Bound<'_, EvaluationCounts>>,
    ) -> Vec<ScheduleResult> {
        let pods: Vec<&CompiledPod> = pods.iter().map(|p| &**p).collect();
        let outs = py.detach(|| {
            let mut outs = Vec::with_capacity(pods.len());
            let mut placed: Vec<&str> = Vec::new();
            let mut ports = Vec::new();
            for pod in &pods {
                let out = Snapshot::schedule(self, pod, profile, false, true);
                if let Some(slot) = out.chosen {
                    if !pod.host_ports.is_empty() {
                        self.save_ports(&mut ports, slot);
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
            outs
        });
        if let Some(c) = counts {
            let c = c.get();
            for o in &outs {
                c.add(&o.evals);
            }
        }
        outs.into_iter().map(|o| self.result_from(o)).collect()
    }

    /// Place a pod group all-or-nothing (see `gang`): `pods` in order, each member that
    /// fits accounted on its node before the next is tried, within the nodes named by
    /// `nodes` when given (a placement); the group is schedulable when at least `need`
    /// members fit. The snapshot is left as it was (the caller assumes the members
    /// itself when the group is placed); the GIL is released throughout.
    #[pyo3(name = "schedule_gang", signature = (pods, profile, need, nodes = None))]
    fn py_schedule_gang(
        &mut self,
        py: Python<'_>,
        pods: Vec<PyRef<'_, CompiledPod>>,
        profile: &Profile,
        need: usize,
        nodes: Option<Vec<String>>,
    ) -> PyResult<GangResult> {
        let pods: Vec<&CompiledPod> = pods.iter().map(|p| &**p).collect();
        let outs = py.detach(|| {
            let within = nodes.as_deref().map(|n| self.placement_slots(n));
            self.schedule_gang(&pods, profile, within.as_deref())
        });
        let placed = outs.iter().filter(|o| o.chosen.is_some()).count();
        let results = outs
            .into_iter()
            .map(|o| Py::new(py, self.result_from(o)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(GangResult {
            results,
            placed,
            need,
        })
    }

    /// Run PreFilter and every Filter for `pod` on node `node_name` alone: `None` when
    /// it fits, else `(unresolvable, plugin, reasons)`. Preemption uses it to test a node
    /// with victims removed.
    #[pyo3(name = "filter_node")]
    fn py_filter_node(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        node_name: &str,
    ) -> PyResult<Option<(bool, &'static str, Vec<String>)>> {
        let Some(slot) = self
            .slot_of(node_name)
            .filter(|&s| self.has_node[s as usize])
        else {
            return Err(PyValueError::new_err(format!(
                "node {node_name:?} is not in the snapshot"
            )));
        };
        let st = self.prefilter(pod, profile);
        if let Some((plugin, msg)) = &st.prefilter_reject {
            return Ok(Some((true, plugin.name(), vec![msg.clone()])));
        }
        if st.allowed.as_ref().is_some_and(|a| !a.contains(&slot)) {
            return Ok(Some((
                true,
                "",
                vec!["node(s) didn't satisfy plugin(s) [NodeAffinity]".to_string()],
            )));
        }
        Ok(self
            .filter_node(profile, &st, slot)
            .map(|r| (r.unresolvable, r.plugin.name(), self.reasons(&st, slot, &r))))
    }

    /// PodTopologySpread's PreFilter state for `pod`: per DoNotSchedule constraint, the
    /// minimum its Filter uses (0 below minDomains), the second smallest count, and
    /// every domain's matching pods `(topology value, count)` sorted by value. For tests
    /// that compare the kept domain views (`set_domain_views`) with a fresh walk.
    fn spread_domains(&mut self, pod: &CompiledPod, profile: &Profile) -> Vec<SpreadDomains> {
        let st = self.prefilter(pod, profile);
        let sp = &st.spread;
        (0..sp.constraints.len())
            .map(|i| {
                let mut domains: Vec<(String, i64)> = sp.domain_counts[i]
                    .domains()
                    .into_iter()
                    .map(|(v, c)| (self.interner.resolve(v).to_string(), c))
                    .collect();
                domains.sort();
                (sp.min_match[i], sp.second_match[i], domains)
            })
            .collect()
    }

    /// The profile's Filter plugins that can reject some node for `pod`, in profile
    /// order: the others are skipped for it (their PreFilter found nothing to check).
    fn active_filters(&mut self, pod: &CompiledPod, profile: &Profile) -> Vec<&'static str> {
        let st = self.prefilter(pod, profile);
        st.active_filters.iter().map(|p| p.name()).collect()
    }

    /// DefaultPreemption's dry run (see `preemption`): the candidates among `potential`
    /// (a failed `ScheduleResult`, whose resolvable rejections are the potential nodes,
    /// or a list of node names) from `offset`, until `num_candidates` are found with at
    /// least one violating no PDB. `pdbs` are `(namespace, selector, disruptions
    /// allowed, disrupted pod names)`; `now` stands for the start time of pods that have
    /// not started. The snapshot holds the same pods afterwards (a dry run that
    /// detached pods re-attaches them: their internal indices and `generation` move); the
    /// GIL is released.
    /// With `counts`, its Filter evaluations are added to them.
    #[pyo3(name = "preemption_dry_run", signature = (pod, profile, potential, offset, num_candidates, pdbs, now, dra = None, counts = None))]
    #[allow(clippy::too_many_arguments)]
    fn py_preemption_dry_run(
        &mut self,
        py: Python<'_>,
        pod: &CompiledPod,
        profile: &Profile,
        potential: &Bound<'_, PyAny>,
        offset: usize,
        num_candidates: usize,
        pdbs: Vec<PdbTuple<'_>>,
        now: f64,
        dra: Option<PyRef<'_, DraAllocator>>,
        counts: Option<&Bound<'_, EvaluationCounts>>,
    ) -> PyResult<PreemptionDryRun> {
        let slots = self.potential_slots(potential)?;
        let pdbs = self.compile_pdbs(pdbs);
        self.pending_dra = dra.map(|d| d.inner.clone());
        let (run, st) = py.detach(|| {
            self.dry_run_preemption(pod, profile, &slots, offset, num_candidates, &pdbs, now)
        });
        self.pending_dra = None;
        if let Some(c) = counts {
            c.get().add(&run.evals);
        }
        Ok(self.dry_run_result(run, &st))
    }

    /// The index of the best of `candidates` (`(node, [victim uid, ...],
    /// num_pdb_violations)`, victims most important first) by upstream's
    /// pickOneNodeForPreemption, reading the victims' priority and start time from the
    /// snapshot (`now` for pods that have not started); None for no candidate.
    #[pyo3(name = "pick_one_node_for_preemption")]
    fn py_pick_one_node_for_preemption(
        &self,
        candidates: Vec<(String, Vec<String>, usize)>,
        now: f64,
    ) -> PyResult<Option<usize>> {
        let mut cands = Vec::with_capacity(candidates.len());
        for (node, uids, num_pdb_violations) in candidates {
            let mut victims = Vec::with_capacity(uids.len());
            for uid in uids {
                let rec = self.pod(&uid).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "victim {uid:?} on node {node:?} is not in the snapshot"
                    ))
                })?;
                victims.push(Victim {
                    priority: rec.priority,
                    start: rec.start_time.unwrap_or(now),
                    uid: uid.into(),
                });
            }
            cands.push(Candidate {
                node: node.into(),
                victims,
                num_pdb_violations,
            });
        }
        Ok(pick_one(&cands))
    }

    /// Record that `pod` is nominated to `node_name` (preemption): nodes must keep room
    /// for it when scheduling pods of lower or equal priority.
    #[pyo3(name = "set_nominated")]
    fn py_set_nominated(&mut self, pod: &CompiledPod, node_name: &str) {
        self.set_nominated(pod, node_name);
    }

    /// Forget a nomination; returns whether there was one.
    #[pyo3(name = "clear_nominated")]
    fn py_clear_nominated(&mut self, uid: &str) -> bool {
        self.clear_nominated(uid)
    }

    #[getter(num_nominated)]
    fn py_num_nominated(&self) -> usize {
        self.nominated.len()
    }

    #[getter(num_nodes)]
    fn py_num_nodes(&self) -> usize {
        Snapshot::num_nodes(self)
    }

    #[getter(num_pods)]
    fn py_num_pods(&self) -> usize {
        Snapshot::num_pods(self)
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.generation
    }

    /// Node names in the order attempts examine them (zones interleaved).
    fn node_names(&mut self) -> Vec<String> {
        self.ensure_order();
        self.order
            .iter()
            .map(|&s| self.names[s as usize].to_string())
            .collect()
    }

    /// Requested amount of `resource` on `node` (`None` for an unknown node).
    fn requested(&self, node: &str, resource: &str) -> Option<i64> {
        let slot = self.slot_of(node)? as usize;
        Some(
            self.resources
                .get(resource)
                .map_or(0, |c| self.requested[c][slot]),
        )
    }

    /// Allocatable amount of `resource` on `node` (`None` for an unknown node).
    fn allocatable(&self, node: &str, resource: &str) -> Option<i64> {
        let slot = self.slot_of(node)? as usize;
        Some(
            self.resources
                .get(resource)
                .map_or(0, |c| self.allocatable[c][slot]),
        )
    }

    /// Node names and `(allocatable, requested)` columns of `resource` as numpy arrays,
    /// one entry per node in examination order. A copy: later updates do not show.
    fn resource_columns<'py>(
        &mut self,
        py: Python<'py>,
        resource: &str,
    ) -> (
        Vec<String>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    ) {
        self.ensure_order();
        let col = self.resources.get(resource);
        let pick = |data: &Vec<Vec<i64>>| -> Vec<i64> {
            match col {
                Some(c) => self.order.iter().map(|&s| data[c][s as usize]).collect(),
                None => vec![0; self.order.len()],
            }
        };
        let names = self
            .order
            .iter()
            .map(|&s| self.names[s as usize].to_string())
            .collect();
        let alloc = PyArray1::from_vec(py, pick(&self.allocatable));
        let req = PyArray1::from_vec(py, pick(&self.requested));
        let _ = alloc.readonly();
        (names, alloc, req)
    }

    /// Pods accounted per node, in examination order, as a numpy array.
    fn pod_counts<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.ensure_order();
        let v: Vec<i64> = self
            .order
            .iter()
            .map(|&s| self.node_pods[s as usize].len() as i64)
            .collect();
        PyArray1::from_vec(py, v)
    }
}
