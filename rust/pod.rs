//! The compiled pod: everything the kernels need from a pod, built once per pod object.
//!
//! Python parses the pod (effective requests, tolerations, ...) and hands the result here
//! once; the scheduler keeps the compiled pod with the queued pod and reuses it for every
//! attempt until the pod object changes. Strings stay strings here: they are resolved to
//! the snapshot's interned ids once per scheduling attempt (the PreFilter step), because
//! the snapshot's id space grows as nodes arrive.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::plugins::taint::{Effect, Toleration};

#[pyclass(frozen, module = "ksched._core")]
#[derive(Debug, Clone, Default)]
pub struct CompiledPod {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// Effective requests (non-zero entries), canonical units: cpu in millicores,
    /// everything else in bytes or counts.
    pub requests: Vec<(String, i64)>,
    /// The "non-zero" cpu/memory requests scoring uses (100m / 200Mi per container that
    /// requests none).
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    /// `spec.nodeName` of a pod that names its node ("" when not set).
    pub node_name: String,
    pub tolerations: Vec<Toleration>,
    pub labels: Vec<(String, String)>,
    pub priority: i32,
}

impl CompiledPod {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The request for `resource`, 0 when the pod does not request it.
    pub fn request(&self, resource: &str) -> i64 {
        self.requests
            .iter()
            .find(|(n, _)| n == resource)
            .map_or(0, |&(_, v)| v)
    }
}

fn invalid(pod: &str, field: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("Pod {pod}: {field}: {msg}"))
}

#[pymethods]
impl CompiledPod {
    #[new]
    #[pyo3(signature = (
        uid, namespace, name, *, requests, non_zero_cpu, non_zero_memory,
        node_name = String::new(), tolerations = Vec::new(), labels = None, priority = 0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        uid: String,
        namespace: String,
        name: String,
        requests: &Bound<'_, PyDict>,
        non_zero_cpu: i64,
        non_zero_memory: i64,
        node_name: String,
        tolerations: Vec<(String, String, String, String)>,
        labels: Option<&Bound<'_, PyDict>>,
        priority: i32,
    ) -> PyResult<Self> {
        let key = format!("{namespace}/{name}");
        let mut reqs = Vec::with_capacity(requests.len());
        for (k, v) in requests.iter() {
            let rname: String = k
                .extract()
                .map_err(|_| invalid(&key, "requests", "resource names must be strings"))?;
            let amount: i64 = v.extract().map_err(|_| {
                invalid(
                    &key,
                    &format!("requests[{rname}]"),
                    "must be an integer amount",
                )
            })?;
            if amount < 0 {
                return Err(invalid(
                    &key,
                    &format!("requests[{rname}]"),
                    format!("must be non-negative (got {amount})"),
                ));
            }
            if amount != 0 {
                reqs.push((rname, amount));
            }
        }
        let mut tols = Vec::with_capacity(tolerations.len());
        for (i, (tkey, op, value, effect)) in tolerations.into_iter().enumerate() {
            let exists = match op.as_str() {
                "Exists" => true,
                "Equal" | "" => false,
                other => {
                    return Err(invalid(
                        &key,
                        &format!("spec.tolerations[{i}].operator"),
                        format!("unsupported operator {other:?}: must be Exists or Equal"),
                    ))
                }
            };
            let effect = if effect.is_empty() {
                None
            } else {
                Some(Effect::parse(&effect).ok_or_else(|| {
                    invalid(
                        &key,
                        &format!("spec.tolerations[{i}].effect"),
                        format!("unsupported effect {effect:?}"),
                    )
                })?)
            };
            tols.push(Toleration {
                key: tkey,
                exists,
                value,
                effect,
            });
        }
        let mut lbls = Vec::new();
        if let Some(labels) = labels {
            for (k, v) in labels.iter() {
                let k: String = k
                    .extract()
                    .map_err(|_| invalid(&key, "metadata.labels", "keys must be strings"))?;
                let v: String = v.extract().map_err(|_| {
                    invalid(
                        &key,
                        &format!("metadata.labels[{k}]"),
                        "values must be strings",
                    )
                })?;
                lbls.push((k, v));
            }
        }
        Ok(CompiledPod {
            uid,
            namespace,
            name,
            requests: reqs,
            non_zero_cpu,
            non_zero_memory,
            node_name,
            tolerations: tols,
            labels: lbls,
            priority,
        })
    }

    #[getter]
    fn uid(&self) -> &str {
        &self.uid
    }

    #[getter]
    fn namespace(&self) -> &str {
        &self.namespace
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.requests {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("CompiledPod({}/{})", self.namespace, self.name)
    }
}
