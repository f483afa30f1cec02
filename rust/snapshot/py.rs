//! The Python face of the snapshot: `ksched._core.Snapshot` and `ScheduleResult`.
//!
//! Node and pod data arrive as plain Python values (dicts of canonical integer amounts,
//! lists of tuples) already validated by `ksched.api`; anything still malformed is
//! rejected with a `ValueError` naming the node and field. Every method that walks nodes
//! releases the GIL.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{NodeSpec, Snapshot};
use crate::cycle::Outcome;
use crate::plugins::taint::Effect;
use crate::pod::CompiledPod;
use crate::profile::Profile;

/// A failed node's status: `(node, unresolvable, plugin, reasons)`.
type NodeStatus = (String, bool, &'static str, Vec<String>);

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
    statuses: Vec<NodeStatus>,
    scores: Vec<(String, i64)>,
    /// The message of a PreFilter that rejected the pod outright.
    #[pyo3(get)]
    pre_filter_msg: Option<String>,
}

#[pymethods]
impl ScheduleResult {
    /// Every rejected node's status, when no node was feasible:
    /// `[(node, unresolvable, plugin, [reason, ...]), ...]`.
    #[getter]
    fn statuses(&self) -> Vec<NodeStatus> {
        self.statuses.clone()
    }

    /// How many nodes gave each reason (upstream's FitError histogram).
    fn reason_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut counts: ahash::AHashMap<&str, usize> = ahash::AHashMap::new();
        for (_, _, _, reasons) in &self.statuses {
            for r in reasons {
                *counts.entry(r.as_str()).or_default() += 1;
            }
        }
        let d = PyDict::new(py);
        for (k, v) in counts {
            d.set_item(k, v)?;
        }
        Ok(d)
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
        let statuses = match (&out.state, out.chosen) {
            // Reason strings are formatted only on the failure path.
            (Some(st), None) => out
                .failures
                .iter()
                .map(|(slot, r)| {
                    (
                        self.names[*slot as usize].clone(),
                        r.unresolvable,
                        r.plugin.name(),
                        self.reasons(st, *slot, r),
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        let pre_filter_msg = out
            .state
            .as_ref()
            .and_then(|st| st.prefilter_reject.as_ref())
            .map(|(_, m)| m.clone());
        ScheduleResult {
            pre_filter_msg,
            node: out.chosen.map(|s| self.names[s as usize].clone()),
            evaluated_nodes: out.evaluated_nodes,
            feasible_nodes: out.feasible_nodes,
            num_all_nodes: out.num_all_nodes,
            statuses,
            scores: out
                .scores
                .iter()
                .map(|&(s, t)| (self.names[s as usize].clone(), t))
                .collect(),
        }
    }
}

#[pymethods]
impl Snapshot {
    #[new]
    #[pyo3(signature = (seed = None))]
    fn py_new(seed: Option<u64>) -> Self {
        Snapshot::new(seed)
    }

    /// Add or replace a node. `allocatable` maps resource names to canonical integer
    /// amounts; `taints` are `(key, value, effect)`.
    #[pyo3(name = "upsert_node", signature = (name, allocatable, labels = None, taints = Vec::new(), unschedulable = false, images = Vec::new()))]
    fn py_upsert_node(
        &mut self,
        name: String,
        allocatable: &Bound<'_, PyDict>,
        labels: Option<&Bound<'_, PyDict>>,
        taints: Vec<(String, String, String)>,
        unschedulable: bool,
        images: Vec<(Vec<String>, i64)>,
    ) -> PyResult<()> {
        let mut spec = NodeSpec {
            name,
            unschedulable,
            images,
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
    /// node's total.
    #[pyo3(name = "schedule", signature = (pod, profile, explain = false))]
    fn py_schedule(
        &mut self,
        py: Python<'_>,
        pod: &CompiledPod,
        profile: &Profile,
        explain: bool,
    ) -> ScheduleResult {
        let out = py.detach(|| Snapshot::schedule(self, pod, profile, explain));
        self.result_from(out)
    }

    /// Every node's Filter outcome and, for feasible nodes, each Score plugin's raw and
    /// normalized score (no sampling). One dict per node, in examination order.
    #[pyo3(name = "explain")]
    fn py_explain<'py>(
        &mut self,
        py: Python<'py>,
        pod: &CompiledPod,
        profile: &Profile,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let (rows, st) = py.detach(|| Snapshot::explain(self, pod, profile));
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let d = PyDict::new(py);
            d.set_item("node", &self.names[row.slot as usize])?;
            match &row.reject {
                None => d.set_item("status", py.None())?,
                Some(r) => {
                    let s = PyDict::new(py);
                    s.set_item("plugin", r.plugin.name())?;
                    s.set_item(
                        "code",
                        if r.unresolvable {
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

    /// Place `pods` in order as successive `schedule` calls would, each placed pod
    /// accounted on its node before the next is placed; the pods' accounting is undone
    /// before returning (the caller assumes them), while the start index and random
    /// state stay advanced as by the individual calls. The GIL is released throughout.
    #[pyo3(name = "schedule_batch")]
    fn py_schedule_batch(
        &mut self,
        py: Python<'_>,
        pods: Vec<PyRef<'_, CompiledPod>>,
        profile: &Profile,
    ) -> Vec<ScheduleResult> {
        let pods: Vec<&CompiledPod> = pods.iter().map(|p| &**p).collect();
        let outs = py.detach(|| {
            let mut outs = Vec::with_capacity(pods.len());
            let mut placed: Vec<&str> = Vec::new();
            for pod in &pods {
                let out = Snapshot::schedule(self, pod, profile, false);
                if let Some(slot) = out.chosen {
                    let node = self.names[slot as usize].clone();
                    self.add_pod(pod, &node, true);
                    placed.push(&pod.uid);
                }
                outs.push(out);
            }
            for uid in placed {
                self.remove_pod(uid);
            }
            outs
        });
        outs.into_iter().map(|o| self.result_from(o)).collect()
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
                "NodeAffinity",
                vec!["node(s) didn't satisfy plugin(s) [NodeAffinity]".to_string()],
            )));
        }
        Ok(self
            .filter_node(profile, &st, slot)
            .map(|r| (r.unresolvable, r.plugin.name(), self.reasons(&st, slot, &r))))
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
            .map(|&s| self.names[s as usize].clone())
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
            .map(|&s| self.names[s as usize].clone())
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
            .map(|&s| self.pods_on_node[s as usize] as i64)
            .collect();
        PyArray1::from_vec(py, v)
    }
}
