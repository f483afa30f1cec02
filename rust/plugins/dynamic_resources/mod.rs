//! DynamicResources' per-node work: the structured-parameters allocator
//! ([`allocator`]) with CEL device selectors ([`cel`]) over the devices the cluster's
//! ResourceSlices publish.
//!
//! Python owns the informers, the claim assume cache and the plugin's extension points
//! (`ksched.plugins.dynamic_resources`); it keeps a [`DraDevices`] up to date with every
//! ResourceSlice and DeviceClass (decoded once per change, with errors that name the
//! object and the field), and in PreFilter asks it for a [`DraAllocator`] for the pod's
//! unallocated claims and the devices already allocated or in flight. Filter then calls
//! [`DraAllocator::allocate`] for each node, without the GIL.

pub mod allocator;
pub mod api;
pub mod cel;
pub mod nodeselector;
pub mod quantity;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use allocator::{AllocError, AllocatedState, Allocator, DeviceId, NodeInput, SliceIndex};
use api::{DeviceClass, ResourceClaim, ResourceSlice};
use quantity::Quantity;

/// `NAME` as upstream's `names.DynamicResources`.
pub const NAME: &str = "DynamicResources";

fn decode<T: serde::de::DeserializeOwned>(kind: &str, name: &str, obj: &[u8]) -> PyResult<T> {
    let de = &mut serde_json::Deserializer::from_slice(obj);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        PyValueError::new_err(format!("{kind} {name}: {path}: {}", e.inner()))
    })
}

fn device_id(driver: &str, pool: &str, device: &str) -> DeviceId {
    DeviceId {
        driver: Arc::from(driver),
        pool: Arc::from(pool),
        device: Arc::from(device),
    }
}

/// The ResourceSlices and DeviceClasses of the cluster, and the compiled CEL selectors.
#[pyclass(module = "ksched._core")]
pub struct DraDevices {
    slices: HashMap<String, Arc<ResourceSlice>>,
    index: Option<Arc<SliceIndex>>,
    classes: Arc<HashMap<String, Arc<DeviceClass>>>,
    cel: Arc<cel::CelCache>,
}

#[pymethods]
impl DraDevices {
    #[new]
    fn new() -> Self {
        DraDevices {
            slices: HashMap::new(),
            index: None,
            classes: Arc::new(HashMap::new()),
            cel: Arc::new(cel::CelCache::default()),
        }
    }

    /// Add or replace the ResourceSlice `name` (its API JSON); ValueError naming the
    /// field when it cannot be decoded (the previous version is then dropped).
    fn upsert_slice(&mut self, name: &str, obj: &[u8]) -> PyResult<()> {
        self.index = None;
        self.slices.remove(name);
        let slice: ResourceSlice = decode("ResourceSlice", name, obj)?;
        self.slices.insert(name.to_string(), Arc::new(slice));
        Ok(())
    }

    fn remove_slice(&mut self, name: &str) {
        if self.slices.remove(name).is_some() {
            self.index = None;
        }
    }

    /// Add or replace the DeviceClass `name`; ValueError naming the field.
    fn upsert_class(&mut self, name: &str, obj: &[u8]) -> PyResult<()> {
        Arc::make_mut(&mut self.classes).remove(name);
        let class: DeviceClass = decode("DeviceClass", name, obj)?;
        Arc::make_mut(&mut self.classes).insert(name.to_string(), Arc::new(class));
        Ok(())
    }

    fn remove_class(&mut self, name: &str) {
        Arc::make_mut(&mut self.classes).remove(name);
    }

    #[getter]
    fn num_slices(&self) -> usize {
        self.slices.len()
    }

    /// The number of devices in all slices.
    #[getter]
    fn num_devices(&self) -> usize {
        self.slices.values().map(|s| s.spec.devices.len()).sum()
    }

    /// An allocator for `claims` (the API JSON of each unallocated claim, in order) with
    /// `allocated` devices `(driver, pool, device)` taken, `shared` devices
    /// `(driver, pool, device, shareID)` and consumed `capacity`
    /// `(driver, pool, device, {name: quantity})` of devices allocated more than once.
    #[pyo3(signature = (claims, allocated, shared = Vec::new(), capacity = Vec::new()))]
    fn allocator(
        &mut self,
        claims: Vec<(String, Vec<u8>)>,
        allocated: Vec<(String, String, String)>,
        shared: Vec<(String, String, String, String)>,
        capacity: Vec<(String, String, String, HashMap<String, String>)>,
    ) -> PyResult<DraAllocator> {
        let mut parsed = Vec::with_capacity(claims.len());
        for (name, obj) in &claims {
            let claim: ResourceClaim = decode("ResourceClaim", name, obj)?;
            parsed.push(Arc::new(claim));
        }
        let mut state = AllocatedState::default();
        for (d, p, n) in &allocated {
            state.devices.insert(device_id(d, p, n));
        }
        for (d, p, n, s) in &shared {
            state.shared.insert((device_id(d, p, n), s.clone()));
        }
        for (d, p, n, amounts) in &capacity {
            let entry = state.capacity.entry(device_id(d, p, n)).or_default();
            for (k, v) in amounts {
                let q = Quantity::parse(v).map_err(|e| {
                    PyValueError::new_err(format!(
                        "consumedCapacity {k} of device {d}/{p}/{n}: {e}"
                    ))
                })?;
                *entry.entry(k.clone()).or_insert(0) += q.nanos;
            }
        }
        let index = match &self.index {
            Some(i) => i.clone(),
            None => {
                let mut all: Vec<Arc<ResourceSlice>> = self.slices.values().cloned().collect();
                all.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                let i = Arc::new(SliceIndex::new(all));
                self.index = Some(i.clone());
                i
            }
        };
        Ok(DraAllocator {
            inner: Arc::new(Allocator::new(
                state,
                self.classes.clone(),
                index,
                self.cel.clone(),
                parsed,
            )),
        })
    }

    /// The compile error of a CEL selector, None when it compiles.
    fn compile_error(&self, expression: &str) -> Option<String> {
        self.cel
            .get_or_compile(expression)
            .error()
            .map(str::to_string)
    }
}

/// The allocator of one pod's unallocated claims for one attempt.
#[pyclass(frozen, module = "ksched._core")]
pub struct DraAllocator {
    inner: Arc<Allocator>,
}

#[pymethods]
impl DraAllocator {
    /// Try to allocate every claim on the node `name` with these labels, giving up
    /// after `timeout` seconds (None: no limit). Returns `(outcome, value)`:
    /// `("allocated", [AllocationResult JSON, ...])` (one per claim, in order),
    /// `("unallocatable", "")` (the claims do not fit this node),
    /// `("unschedulable", reason)` (upstream's ErrFailedAllocationOnNode),
    /// `("timeout", "")` or `("error", message)` (a claim or class is broken).
    #[pyo3(signature = (name, labels, timeout = None))]
    fn allocate(
        &self,
        py: Python<'_>,
        name: String,
        labels: HashMap<String, String>,
        timeout: Option<f64>,
    ) -> (&'static str, Vec<String>) {
        let inner = self.inner.clone();
        let out = py.detach(move || {
            let deadline = timeout
                .filter(|t| *t > 0.0)
                .map(|t| Instant::now() + Duration::from_secs_f64(t));
            inner.allocate(
                &NodeInput {
                    name: &name,
                    labels: &labels,
                },
                deadline,
            )
        });
        match out {
            Ok(Some(results)) => ("allocated", results.iter().map(|r| r.to_string()).collect()),
            Ok(None) => ("unallocatable", Vec::new()),
            Err(AllocError::FailedOnNode(msg)) => ("unschedulable", vec![msg]),
            Err(AllocError::Timeout) => ("timeout", Vec::new()),
            Err(AllocError::Fatal(msg)) => ("error", vec![msg]),
        }
    }

    /// How many search steps all allocations of this allocator took (upstream's
    /// `NumAllocateOneInvocations`).
    #[getter]
    fn invocations(&self) -> u64 {
        self.inner
            .invocations
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    #[getter]
    fn num_claims(&self) -> usize {
        self.inner.claims().len()
    }
}
