//! The compiled pod: everything the kernels need from a pod, built once per pod object.
//!
//! Python parses the pod (effective requests, tolerations, ...) and hands the result here
//! once; the scheduler keeps the compiled pod with the queued pod and reuses it for every
//! attempt until the pod object changes. Strings stay strings here: they are resolved to
//! the snapshot's interned ids once per scheduling attempt (the PreFilter step), because
//! the snapshot's id space grows as nodes arrive.

use std::sync::{Arc, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::plugins::inter_pod_affinity::PodAffinitySpec;
use crate::plugins::node_affinity::NodeAffinitySpec;
use crate::plugins::pod_topology_spread::SpreadConstraintSpec;
use crate::plugins::taint::{Effect, Toleration};
use crate::selector::LabelSelectorSpec;
use crate::volume::{parse_pod_volumes, KernelRequests, PodVolumeSpec};

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
    /// `status.nominatedNodeName`: where preemption made room for the pod ("" when not
    /// set); an attempt tries that node first.
    pub nominated_node_name: String,
    pub tolerations: Vec<Toleration>,
    pub labels: Vec<(String, String)>,
    pub priority: i32,
    /// `spec.nodeSelector`.
    pub node_selector: Vec<(String, String)>,
    /// `spec.affinity.nodeAffinity`.
    pub node_affinity: NodeAffinitySpec,
    /// `spec.affinity.podAffinity` / `podAntiAffinity`.
    pub pod_affinity: PodAffinitySpec,
    /// `(protocol, hostIP, hostPort)` of every container port with a host port.
    pub host_ports: Vec<(String, String, i32)>,
    /// Container images, init containers first.
    pub images: Vec<String>,
    /// References of the image volumes (`spec.volumes[].image`).
    pub image_volumes: Vec<String>,
    pub spread_constraints: Vec<SpreadConstraintSpec>,
    /// The selector of the Services/ReplicaSets/StatefulSets/RCs the pod belongs to, used
    /// by PodTopologySpread's default constraints (`None`: it belongs to none).
    pub default_spread_selector: Option<LabelSelectorSpec>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `status.startTime` in seconds since the epoch (`None`: not started); preemption
    /// reprieves and ranks victims by it.
    pub start_time: Option<f64>,
    /// The requests NodeResourcesFit's Score uses when they differ from `requests` and
    /// `non_zero_*` (a pod with pod-level requests, which that scorer ignores): the
    /// containers' requests with 100m/200Mi for a container missing cpu/memory, plus
    /// overhead. `None`: `non_zero_cpu`, `non_zero_memory` and `requests`.
    pub fit_score_requests: Option<Vec<(String, i64)>>,
    /// What `spec.volumes` says that the volume plugins read (`None`: nothing).
    pub volumes: Option<Arc<PodVolumeSpec>>,
    /// The node declared features scheduling the pod requires (NodeDeclaredFeatures).
    pub required_features: Vec<String>,
    /// The kernel requests of the current attempt (see `volume`), attached by
    /// `with_requests`; empty on a pod as compiled.
    pub kernel: KernelRequests,
    /// `signature`, computed on first use. A `sibling` shares it: the signature reads
    /// none of the fields a sibling replaces.
    pub signature_memo: OnceLock<Option<Vec<u8>>>,
}

impl CompiledPod {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// What `signature` returns (see there).
    fn compute_signature(&self) -> Option<Vec<u8>> {
        if !self.node_name.is_empty() || !self.kernel.is_empty() {
            return None;
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            &self.namespace,
            &self.labels,
            &self.requests,
            self.non_zero_cpu,
            self.non_zero_memory,
            self.priority,
            &self.nominated_node_name,
            &self.node_selector,
            &self.host_ports,
            &self.images,
            (
                &self.image_volumes,
                &self.fit_score_requests,
                &self.volumes,
                &self.required_features,
            ),
        )
            .hash(&mut h);
        format!(
            "{:?}{:?}{:?}{:?}{:?}{}",
            self.tolerations,
            self.node_affinity,
            self.pod_affinity,
            self.spread_constraints,
            self.default_spread_selector,
            self.deleting
        )
        .hash(&mut h);
        Some(h.finish().to_le_bytes().to_vec())
    }

    /// The request for `resource`, 0 when the pod does not request it.
    pub fn request(&self, resource: &str) -> i64 {
        self.requests
            .iter()
            .find(|(n, _)| n == resource)
            .map_or(0, |&(_, v)| v)
    }
}

/// `{resource name: amount}` in scheduler units, zero amounts dropped.
fn parse_requests(key: &str, field: &str, d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, i64)>> {
    let mut reqs = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        let rname: String = k
            .extract()
            .map_err(|_| invalid(key, field, "resource names must be strings"))?;
        let amount: i64 = v.extract().map_err(|_| {
            invalid(
                key,
                &format!("{field}[{rname}]"),
                "must be an integer amount",
            )
        })?;
        if amount < 0 {
            return Err(invalid(
                key,
                &format!("{field}[{rname}]"),
                format!("must be non-negative (got {amount})"),
            ));
        }
        if amount != 0 {
            reqs.push((rname, amount));
        }
    }
    Ok(reqs)
}

fn invalid(pod: &str, field: &str, msg: impl std::fmt::Display) -> PyErr {
    if field.is_empty() {
        PyValueError::new_err(format!("Pod {pod}: {msg}"))
    } else {
        PyValueError::new_err(format!("Pod {pod}: {field}: {msg}"))
    }
}

#[pymethods]
impl CompiledPod {
    #[new]
    #[pyo3(signature = (
        uid, namespace, name, *, requests, non_zero_cpu, non_zero_memory,
        node_name = String::new(), nominated_node_name = String::new(), tolerations = Vec::new(), labels = None, priority = 0,
        node_selector = None, affinity = None, host_ports = Vec::new(), images = Vec::new(),
        image_volumes = Vec::new(), topology_spread_constraints = None, default_spread_selector = None, deleting = false,
        start_time = None, fit_score_requests = None, volumes = None, required_features = Vec::new()
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        uid: String,
        namespace: String,
        name: String,
        requests: &Bound<'_, PyDict>,
        non_zero_cpu: i64,
        non_zero_memory: i64,
        node_name: String,
        nominated_node_name: String,
        tolerations: Vec<(String, String, String, String)>,
        labels: Option<&Bound<'_, PyDict>>,
        priority: i32,
        node_selector: Option<&Bound<'_, PyDict>>,
        affinity: Option<&Bound<'_, PyAny>>,
        host_ports: Vec<(String, String, i32)>,
        images: Vec<String>,
        image_volumes: Vec<String>,
        topology_spread_constraints: Option<&Bound<'_, PyAny>>,
        default_spread_selector: Option<&Bound<'_, PyAny>>,
        deleting: bool,
        start_time: Option<f64>,
        fit_score_requests: Option<&Bound<'_, PyDict>>,
        volumes: Option<&Bound<'_, PyDict>>,
        required_features: Vec<String>,
    ) -> PyResult<Self> {
        let key = format!("{namespace}/{name}");
        let volumes = parse_pod_volumes(volumes, &key)?;
        let reqs = parse_requests(&key, "requests", requests)?;
        let fit_score_requests = fit_score_requests
            .map(|r| parse_requests(&key, "fit_score_requests", r))
            .transpose()?;
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
        // Parse errors already carry their field path; prefix the pod.
        let in_pod = |e: PyErr| invalid(&key, "", e.value(py).to_string());
        let mut sel = Vec::new();
        if let Some(ns) = node_selector {
            for (k, v) in ns.iter() {
                let k: String = k
                    .extract()
                    .map_err(|_| invalid(&key, "spec.nodeSelector", "keys must be strings"))?;
                let v: String = v.extract().map_err(|_| {
                    invalid(
                        &key,
                        &format!("spec.nodeSelector[{k}]"),
                        "values must be strings",
                    )
                })?;
                sel.push((k, v));
            }
        }
        let (node_affinity, pod_affinity) = match affinity {
            Some(a) if !a.is_none() => {
                let d = crate::args::as_dict(a, "spec.affinity").map_err(in_pod)?;
                (
                    NodeAffinitySpec::parse_pod(&d).map_err(in_pod)?,
                    PodAffinitySpec::parse(&d).map_err(in_pod)?,
                )
            }
            _ => (NodeAffinitySpec::default(), PodAffinitySpec::default()),
        };
        let spread_constraints = match topology_spread_constraints {
            Some(c) if !c.is_none() => {
                SpreadConstraintSpec::parse_list(c, "spec.topologySpreadConstraints")
                    .map_err(in_pod)?
            }
            _ => Vec::new(),
        };
        let default_spread_selector = match default_spread_selector {
            Some(s) if !s.is_none() => {
                Some(LabelSelectorSpec::parse(s, "defaultSpreadSelector").map_err(in_pod)?)
            }
            _ => None,
        };
        Ok(CompiledPod {
            uid,
            namespace,
            name,
            requests: reqs,
            non_zero_cpu,
            non_zero_memory,
            node_name,
            nominated_node_name,
            tolerations: tols,
            labels: lbls,
            priority,
            node_selector: sel,
            node_affinity,
            pod_affinity,
            host_ports,
            images,
            image_volumes,
            spread_constraints,
            default_spread_selector,
            deleting,
            start_time,
            fit_score_requests,
            volumes,
            required_features,
            kernel: KernelRequests::default(),
            signature_memo: OnceLock::new(),
        })
    }

    /// The kernel form of another pod stamped from the same template: this pod with
    /// `uid`, `name` and `start_time` replaced and no kernel requests. The caller
    /// vouches that everything else the constructor reads (namespace, labels, the spec,
    /// the nomination, the deletion mark, the default spreading selector) is the same.
    fn sibling(&self, uid: String, name: String, start_time: Option<f64>) -> CompiledPod {
        let signature_memo = if self.kernel.is_empty() {
            self.signature_memo.clone()
        } else {
            OnceLock::new()
        };
        CompiledPod {
            uid,
            name,
            start_time,
            kernel: KernelRequests::default(),
            signature_memo,
            ..self.clone()
        }
    }

    /// This pod with the kernel requests of one attempt attached (the plugins'
    /// PreFilter results, see `ksched.framework.interface.KernelPreFilterPlugin`); a
    /// later request of the same class replaces an earlier one.
    fn with_requests(&self, requests: &Bound<'_, PyList>) -> PyResult<CompiledPod> {
        let mut out = self.clone();
        out.signature_memo = OnceLock::new();
        for r in requests.iter() {
            out.kernel.add(&r)?;
        }
        Ok(out)
    }

    /// This pod without kernel requests (what the cache keeps of an assumed pod).
    fn without_requests(&self) -> CompiledPod {
        CompiledPod {
            kernel: KernelRequests::default(),
            signature_memo: OnceLock::new(),
            ..self.clone()
        }
    }

    /// Whether kernel requests are attached.
    #[getter]
    fn has_requests(&self) -> bool {
        !self.kernel.is_empty()
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

    /// The pod's scheduling signature: equal for pods that scheduling treats alike
    /// (same namespace, labels, requests, constraints, required features and priority), so the scheduler
    /// may place them together with `Snapshot.schedule_batch`. `None` for a pod that
    /// names its node.
    #[getter]
    fn signature(&self) -> Option<Vec<u8>> {
        self.signature_memo
            .get_or_init(|| self.compute_signature())
            .clone()
    }

    /// The node declared features scheduling the pod requires.
    #[getter]
    fn required_features(&self) -> Vec<String> {
        self.required_features.clone()
    }

    #[getter]
    fn priority(&self) -> i32 {
        self.priority
    }

    #[getter]
    fn start_time(&self) -> Option<f64> {
        self.start_time
    }

    fn __repr__(&self) -> String {
        format!("CompiledPod({}/{})", self.namespace, self.name)
    }
}
