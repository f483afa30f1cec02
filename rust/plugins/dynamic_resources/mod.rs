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
pub mod celcheck;
pub mod celformat;
pub mod cellib;
pub mod nodeselector;
pub mod quantity;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use allocator::{
    AllocError, Allocated, AllocatedState, Allocator, ClaimDevices, DeviceId, NodeInput, SliceIndex,
};
use api::{DeviceClass, ResourceClaim, ResourceSlice};
use nodeselector::{NodeLabels, NodeView};

use crate::plugins::{Plugin, Reject};
use crate::snapshot::Snapshot;
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

/// The devices one allocation result takes: results with admin access take none, a
/// result with a share ID shares its device (DRAConsumableCapacity).
fn claim_devices(kind: &str, name: &str, allocation: &[u8]) -> PyResult<ClaimDevices> {
    let alloc: serde_json::Value = decode(kind, name, allocation)?;
    let mut out = ClaimDevices::default();
    let results = alloc
        .pointer("/devices/results")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    for (i, r) in results.iter().enumerate() {
        if r.get("adminAccess")
            .and_then(|a| a.as_bool())
            .unwrap_or(false)
        {
            continue;
        }
        let field = |f: &str| r.get(f).and_then(|v| v.as_str()).unwrap_or("");
        let id = device_id(field("driver"), field("pool"), field("device"));
        match r.get("shareID").and_then(|v| v.as_str()) {
            Some(share) => {
                let mut consumed = allocator::ConsumedCapacity::new();
                if let Some(c) = r.get("consumedCapacity").and_then(|c| c.as_object()) {
                    for (k, v) in c {
                        let text = v
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string());
                        let q = Quantity::parse(&text).map_err(|e| {
                            PyValueError::new_err(format!(
                                "{kind} {name}: status.allocation.devices.results[{i}].consumedCapacity.{k}: {e}"
                            ))
                        })?;
                        consumed.insert(k.clone(), q.nanos);
                    }
                }
                out.shared.push((id, share.to_string(), consumed));
            }
            None => out.dedicated.push(id),
        }
    }
    Ok(out)
}

/// The ResourceSlices and DeviceClasses of the cluster, the devices allocated to
/// claims, and the compiled CEL selectors.
#[pyclass(module = "ksched._core")]
pub struct DraDevices {
    slices: HashMap<String, Arc<ResourceSlice>>,
    index: Option<Arc<SliceIndex>>,
    classes: Arc<HashMap<String, Arc<DeviceClass>>>,
    cel: Arc<cel::CelCache>,
    allocated: Arc<AllocatedState>,
    claim_devices: HashMap<String, ClaimDevices>,
    /// Serial of the last decoded slice (0: never).
    serial: u64,
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
            allocated: Arc::new(AllocatedState::default()),
            claim_devices: HashMap::new(),
            serial: 0,
        }
    }

    /// The allocation of the claim `key` (``status.allocation`` JSON, None when it is
    /// not allocated or gone): its devices count as taken from now on, those of its
    /// previous allocation no longer.
    #[pyo3(signature = (key, allocation = None))]
    fn set_claim_allocation(&mut self, key: &str, allocation: Option<&[u8]>) -> PyResult<()> {
        let new = match allocation {
            Some(a) => Some(claim_devices("ResourceClaim", key, a)?),
            None => None,
        };
        let state = Arc::make_mut(&mut self.allocated);
        if let Some(old) = self.claim_devices.remove(key) {
            state.apply(&old, false);
        }
        if let Some(new) = new {
            state.apply(&new, true);
            self.claim_devices.insert(key.to_string(), new);
        }
        Ok(())
    }

    /// Dedicated devices taken by allocated claims (for tests and diagnostics).
    #[getter]
    fn num_allocated_devices(&self) -> usize {
        self.allocated.devices.len()
    }

    /// Add or replace the ResourceSlice `name` (its API JSON); ValueError naming the
    /// field when it cannot be decoded (the previous version is then dropped).
    fn upsert_slice(&mut self, name: &str, obj: &[u8]) -> PyResult<()> {
        self.index = None;
        self.slices.remove(name);
        let mut slice: ResourceSlice = decode("ResourceSlice", name, obj)?;
        self.serial += 1;
        slice.serial = self.serial;
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

    /// DynamicResources' Filter for one pod and attempt: an allocator for `claims`
    /// (`(ns/name, JSON)` of each unallocated claim, in order), with the devices of
    /// every allocated claim taken and those of the allocations in flight
    /// (`in_flight`: `(ns/name, status.allocation JSON)`), and the pod's allocated
    /// claims (`allocated`: `(index, status.allocation.nodeSelector JSON or None,
    /// unavailable everywhere)`). `timeout` (seconds, None: none) bounds one node's
    /// allocation (DynamicResourcesArgs.filterTimeout).
    ///
    /// `extended` describes the pod's claim for extended resources backed by DRA
    /// (DRAExtendedResource), None when it has none: `(resources, variants, prior,
    /// no_user_claims, classes)` where `resources` are `(name, backed by a DeviceClass)`
    /// of the pod's DRA-extended-name requests, `variants` the claim's variants as
    /// `(the indices, among the backed resources, of those the nodes using it must get
    /// from DRA, claim JSON)` (None when that claim is allocated already; a node whose
    /// set has no variant fails the attempt with an error), `prior` whether the claim
    /// from an earlier cycle has requests (no node can use it), `no_user_claims`
    /// whether the pod names no ResourceClaim of its own, and `classes` the DeviceClass
    /// of each backed resource.
    #[pyo3(signature = (claims, in_flight = Vec::new(), allocated = Vec::new(), timeout = None, extended = None))]
    fn allocator(
        &mut self,
        claims: Vec<(String, Vec<u8>)>,
        in_flight: Vec<(String, Vec<u8>)>,
        allocated: Vec<(usize, Option<Vec<u8>>, bool)>,
        timeout: Option<f64>,
        extended: Option<ExtendedArg>,
    ) -> PyResult<DraAllocator> {
        let mut parsed = Vec::with_capacity(claims.len());
        for (name, obj) in &claims {
            let claim: ResourceClaim = decode("ResourceClaim", name, obj)?;
            parsed.push(Arc::new(claim));
        }
        let mut checks = Vec::with_capacity(allocated.len());
        for (index, selector, unavailable) in allocated {
            let selector: Option<api::NodeSelector> = match selector {
                Some(b) => Some(decode("ResourceClaim", &format!("#{index}"), &b)?),
                None => None,
            };
            checks.push((index, selector, unavailable));
        }
        let mut variant_claims = Vec::new();
        let mut variant_index = HashMap::new();
        let mut ext = None;
        let mut ext_classes = HashMap::new();
        if let Some((resources, variants, prior, no_user_claims, classes)) = extended {
            ext_classes = classes.into_iter().collect();
            let backed = resources.iter().filter(|(_, b)| *b).count();
            for (i, (pattern, obj)) in variants.iter().flatten().enumerate() {
                if pattern.iter().any(|&k| k >= backed)
                    || variant_index.insert(pattern.clone(), i).is_some()
                {
                    return Err(PyValueError::new_err(format!(
                        "extended resource claim: variant #{i} for {pattern:?} of {backed} \
                         resources backed by DRA is out of range or repeated"
                    )));
                }
                let claim: ResourceClaim =
                    decode("ResourceClaim", &format!("<extended-resources>#{i}"), obj)?;
                variant_claims.push(Arc::new(claim));
            }
            ext = Some((resources, prior, no_user_claims, variants.is_none()));
        }
        let need = !parsed.is_empty() || !variant_claims.is_empty();
        let mut build = None;
        if need {
            let mut extra = AllocatedState::default();
            for (name, alloc) in &in_flight {
                extra.apply(&claim_devices("ResourceClaim", name, alloc)?, true);
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
            build = Some((Arc::new(extra), index));
        }
        let make = |claims: Vec<Arc<ResourceClaim>>| {
            let (extra, index) = build.as_ref().expect("built when needed");
            Allocator::new(
                Allocated {
                    base: self.allocated.clone(),
                    extra: (**extra).clone(),
                },
                self.classes.clone(),
                index.clone(),
                self.cel.clone(),
                claims,
            )
        };
        let allocator = (!parsed.is_empty()).then(|| make(parsed.clone()));
        let extended = ext.map(
            |(resources, prior, no_user_claims, allocated)| ExtendedFilter {
                resources,
                allocated,
                index: variant_index,
                variants: variant_claims
                    .iter()
                    .map(|c| {
                        let mut claims = parsed.clone();
                        claims.push(c.clone());
                        make(claims)
                    })
                    .collect(),
                prior,
                no_user_claims,
                classes: ext_classes,
            },
        );
        Ok(DraAllocator {
            inner: Arc::new(DraFilter {
                allocator,
                extended,
                allocated: checks,
                timeout: timeout.filter(|t| *t > 0.0).map(Duration::from_secs_f64),
                results: Mutex::new(HashMap::new()),
                unavailable: Mutex::new(BTreeSet::new()),
                reasons: Mutex::new(Vec::new()),
                error: Mutex::new(None),
                totals: Mutex::new(HashMap::new()),
            }),
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

/// DynamicResources' Filter for one pod and attempt (upstream's Filter over the
/// stateData PreFilter prepared): the allocated claims' node selectors and
/// readiness, then an allocation of the pending claims on the node. Runs in the core's
/// node loop (any thread); what it learns is kept for Python's Score, Reserve and
/// PostFilter.
/// What Filter found on one node: an AllocationResult JSON per pending claim, and the
/// mask of the extended claim's variant used there.
type NodeResults = (Vec<String>, Option<usize>);

/// `(allocatable, allocated)` devices of a DRA-backed extended resource on a node.
type Totals = Option<(i64, i64)>;

/// The `extended` argument of [`DraDevices::allocator`].
type ExtendedArg = (
    Vec<(String, bool)>,
    Option<Vec<(Vec<usize>, Vec<u8>)>>,
    bool,
    bool,
    Vec<(String, String)>,
);

/// DynamicResources' per-node handling of the pod's claim for extended resources backed
/// by DRA (upstream `filterExtendedResources`).
pub struct ExtendedFilter {
    /// `(name, backed by a DeviceClass)` of the pod's DRA-extended-name requests.
    resources: Vec<(String, bool)>,
    /// The claim is allocated already: nothing to allocate per node.
    allocated: bool,
    /// The allocator of the pod's claims with each variant of the extended claim.
    variants: Vec<Allocator>,
    /// The indices, among the backed resources, of those a node must get from DRA →
    /// the variant for such nodes (upstream builds the node's variant in Filter;
    /// PreFilter built one per set some node has).
    index: HashMap<Vec<usize>, usize>,
    /// The claim from an earlier cycle has requests: no node can use it.
    prior: bool,
    no_user_claims: bool,
    /// Extended resource name → the DeviceClass it maps to (scoring).
    classes: HashMap<String, String>,
}

pub struct DraFilter {
    allocator: Option<Allocator>,
    extended: Option<ExtendedFilter>,
    /// `(claim index, node selector, unavailable everywhere)` of the allocated claims.
    allocated: Vec<(usize, Option<api::NodeSelector>, bool)>,
    timeout: Option<Duration>,
    /// node -> AllocationResult JSON per pending claim, and the mask of the extended
    /// claim's variant used there.
    results: Mutex<HashMap<String, NodeResults>>,
    /// Allocated claims that were not available on some node (PostFilter).
    unavailable: Mutex<BTreeSet<usize>>,
    /// Reasons of ErrFailedAllocationOnNode rejections (a detail indexes them).
    reasons: Mutex<Vec<String>>,
    /// A claim or class is broken, or allocation timed out: the attempt fails.
    error: Mutex<Option<String>>,
    /// `(resource, node)` → the DRA totals NodeResourcesFit scores with.
    totals: Mutex<HashMap<(String, String), Totals>>,
}

/// Reject details: fixed reasons, an error, or an index into `reasons` from here on.
impl std::fmt::Debug for DraFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraFilter")
            .field(
                "claims",
                &self.allocator.as_ref().map_or(0, |a| a.claims().len()),
            )
            .field("allocated", &self.allocated.len())
            .finish()
    }
}

const DETAIL_CANNOT_ALLOCATE: u64 = 0;
const DETAIL_NOT_AVAILABLE: u64 = 1;
const DETAIL_ERROR: u64 = 2;
const DETAIL_EXTENDED_PRIOR: u64 = 3;
const DETAIL_EXTENDED_CANNOT_FIT: u64 = 4;
const DETAIL_REASONS: u64 = 5;

/// What the Filter reads of a node besides its name: labels (node selectors) and
/// allocatable amounts (extended resources).
pub trait NodeFacts: NodeLabels {
    /// The node's allocatable amount of `name`, None when it does not list it.
    fn allocatable(&self, name: &str) -> Option<i64>;
    fn as_labels(&self) -> &dyn NodeLabels;
}

struct SlotLabels<'a> {
    snap: &'a Snapshot,
    slot: u32,
}

impl NodeLabels for SlotLabels<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        let k = self.snap.interner.get(key)?;
        let v = self.snap.label(self.slot, k);
        (v != 0).then(|| self.snap.interner.resolve(v))
    }
}

impl NodeFacts for SlotLabels<'_> {
    fn allocatable(&self, name: &str) -> Option<i64> {
        self.snap.listed_allocatable(self.slot, name)
    }
    fn as_labels(&self) -> &dyn NodeLabels {
        self
    }
}

/// A node given by labels and allocatable maps (tests, `DraAllocator.allocate`).
struct GivenNode<'a> {
    labels: &'a HashMap<String, String>,
    allocatable: &'a HashMap<String, i64>,
}

impl NodeLabels for GivenNode<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.label(key)
    }
}

impl NodeFacts for GivenNode<'_> {
    fn allocatable(&self, name: &str) -> Option<i64> {
        self.allocatable.get(name).copied()
    }
    fn as_labels(&self) -> &dyn NodeLabels {
        self
    }
}

impl DraFilter {
    fn reject(detail: u64) -> Option<Reject> {
        Some(Reject {
            plugin: Plugin::DynamicResources,
            unresolvable: true,
            detail,
        })
    }

    /// The node `slot` of `snap`: None when the pod's claims can be used there.
    pub fn filter(&self, snap: &Snapshot, slot: u32) -> Option<Reject> {
        let name = &*snap.names[slot as usize];
        let node = SlotLabels { snap, slot };
        self.filter_node(name, &node)
    }

    /// Upstream `filterExtendedResources`: Err(rejection) when the node cannot be used;
    /// Ok(None) when nothing is left to do on it (no user claim, every extended
    /// resource from a device plugin); otherwise the allocator to use there (None: the
    /// base one) and the variant's index.
    #[allow(clippy::type_complexity)]
    fn extended_on(
        &self,
        node_name: &str,
        node: &dyn NodeFacts,
    ) -> Result<Option<(Option<&Allocator>, Option<usize>)>, Option<Reject>> {
        let Some(ext) = &self.extended else {
            return Ok(Some((None, None)));
        };
        if ext.prior {
            return Err(Self::reject(DETAIL_EXTENDED_PRIOR));
        }
        let mut pattern = Vec::new();
        let mut bit = 0usize;
        for (name, backed) in &ext.resources {
            let listed = node.allocatable(name);
            let amount = listed.unwrap_or(0);
            if *backed && amount == 0 {
                pattern.push(bit);
            } else if listed.is_none() {
                return Err(Self::reject(DETAIL_EXTENDED_CANNOT_FIT));
            }
            if *backed {
                bit += 1;
            }
        }
        if ext.no_user_claims && pattern.is_empty() {
            return Ok(None);
        }
        if ext.allocated {
            // The extended claim is allocated already: nothing per node.
            if ext.no_user_claims {
                return Ok(None);
            }
            return Ok(Some((None, None)));
        }
        match ext.index.get(&pattern) {
            Some(&i) => Ok(Some((ext.variants.get(i), Some(i)))),
            None => {
                self.fail(format!(
                    "node {node_name}: no variant of the claim for extended resources for the \
                     resources {pattern:?} it must get from DRA"
                ));
                Err(Self::reject(DETAIL_ERROR))
            }
        }
    }

    fn filter_node(&self, name: &str, node: &dyn NodeFacts) -> Option<Reject> {
        let (chosen, variant) = match self.extended_on(name, node) {
            Err(reject) => return reject,
            Ok(None) => return None,
            Ok(Some(v)) => v,
        };
        let labels = node.as_labels();
        let view = NodeView { name, labels };
        let mut unavailable = Vec::new();
        for (index, selector, everywhere) in &self.allocated {
            if let Some(sel) = selector {
                if !nodeselector::matches(sel, &view).unwrap_or(false) {
                    unavailable.push(*index);
                    continue;
                }
            }
            if *everywhere {
                unavailable.push(*index);
            }
        }
        let mut results = None;
        if let Some(alloc) = chosen.or(self.allocator.as_ref()) {
            let deadline = self.timeout.map(|t| Instant::now() + t);
            match alloc.allocate(&NodeInput { name, labels }, deadline) {
                Ok(Some(r)) if r.len() == alloc.claims().len() => results = Some(r),
                Ok(_) => return Self::reject(DETAIL_CANNOT_ALLOCATE),
                Err(AllocError::FailedOnNode(msg)) => {
                    let mut reasons = self.reasons.lock().expect("reasons lock");
                    let i = match reasons.iter().position(|r| *r == msg) {
                        Some(i) => i,
                        None => {
                            reasons.push(msg);
                            reasons.len() - 1
                        }
                    };
                    return Self::reject(DETAIL_REASONS + i as u64);
                }
                Err(AllocError::Timeout) => {
                    self.fail(format!("node {name}: timed out trying to allocate devices"));
                    return Self::reject(DETAIL_ERROR);
                }
                Err(AllocError::Fatal(msg)) => {
                    self.fail(msg);
                    return Self::reject(DETAIL_ERROR);
                }
            }
        }
        if !unavailable.is_empty() {
            self.unavailable
                .lock()
                .expect("unavailable lock")
                .extend(unavailable);
            return Self::reject(DETAIL_NOT_AVAILABLE);
        }
        if let Some(r) = results {
            let json = r.iter().map(|v| v.to_string()).collect();
            self.results
                .lock()
                .expect("results lock")
                .insert(name.to_string(), (json, variant));
        }
        None
    }

    fn fail(&self, msg: String) {
        let mut e = self.error.lock().expect("error lock");
        if e.is_none() {
            *e = Some(msg);
        }
    }

    /// NodeResourcesFit's and BalancedAllocation's allocatable and allocated amounts of
    /// extended resource `resource` on node `slot` when DRA backs it (upstream
    /// `calculateDRAExtendedResourceAllocatableRequest`); None when it is not the pod's
    /// or the totals cannot be computed (upstream then scores it as absent).
    pub fn extended_totals(
        &self,
        resource: &str,
        snap: &Snapshot,
        slot: u32,
    ) -> Option<(i64, i64)> {
        let ext = self.extended.as_ref()?;
        let class = ext.classes.get(resource)?;
        let alloc = ext.variants.first().or(self.allocator.as_ref())?;
        let name = &*snap.names[slot as usize];
        let key = (resource.to_string(), name.to_string());
        if let Some(v) = self.totals.lock().expect("totals lock").get(&key) {
            return *v;
        }
        let labels = SlotLabels { snap, slot };
        let v = alloc
            .extended_totals(
                class,
                &NodeInput {
                    name,
                    labels: &labels,
                },
            )
            .ok();
        self.totals.lock().expect("totals lock").insert(key, v);
        v
    }

    /// Whether a rejection's detail is a Filter error (a broken claim or class, the
    /// timeout): upstream's Filter returns an Error status there, not a rejection.
    pub fn is_error(detail: u64) -> bool {
        detail == DETAIL_ERROR
    }

    /// The reason string of a rejection's detail.
    pub fn reason(&self, detail: u64) -> String {
        match detail {
            DETAIL_CANNOT_ALLOCATE => "cannot allocate all claims".to_string(),
            DETAIL_NOT_AVAILABLE => "resourceclaim not available on the node".to_string(),
            DETAIL_EXTENDED_PRIOR => "cannot schedule extended resource claim".to_string(),
            DETAIL_EXTENDED_CANNOT_FIT => "cannot fit resource".to_string(),
            DETAIL_ERROR => self
                .error
                .lock()
                .expect("error lock")
                .clone()
                .unwrap_or_default(),
            d => self
                .reasons
                .lock()
                .expect("reasons lock")
                .get((d - DETAIL_REASONS) as usize)
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// DynamicResources' Filter of one pod for one attempt, handed to the core with
/// `Snapshot.schedule(..., dra=...)`; afterwards it holds what the attempt found.
#[pyclass(frozen, module = "ksched._core")]
pub struct DraAllocator {
    pub inner: Arc<DraFilter>,
}

#[pymethods]
impl DraAllocator {
    /// The Filter on one node given by name and labels, outside a scheduling attempt
    /// (tests): `("allocated", [AllocationResult JSON, ...])` (one per pending claim),
    /// `("unallocatable", [])` ("cannot allocate all claims"),
    /// `("unavailable", [])` (an allocated claim cannot be used there),
    /// `("unschedulable", [reason])` (upstream's ErrFailedAllocationOnNode) or
    /// `("error", [message])` (a claim or class is broken, or the timeout expired).
    /// `allocatable` holds the node's allocatable amounts (extended resources).
    #[pyo3(signature = (name, labels, allocatable = HashMap::new()))]
    fn allocate(
        &self,
        py: Python<'_>,
        name: String,
        labels: HashMap<String, String>,
        allocatable: HashMap<String, i64>,
    ) -> (&'static str, Vec<String>) {
        let inner = self.inner.clone();
        let reject = py.detach(|| {
            let node = GivenNode {
                labels: &labels,
                allocatable: &allocatable,
            };
            inner.filter_node(&name, &node)
        });
        match reject.map(|r| r.detail) {
            None => (
                "allocated",
                self.inner
                    .results
                    .lock()
                    .expect("results lock")
                    .get(&name)
                    .map(|r| r.0.clone())
                    .unwrap_or_default(),
            ),
            Some(DETAIL_CANNOT_ALLOCATE) => ("unallocatable", Vec::new()),
            Some(DETAIL_NOT_AVAILABLE) => ("unavailable", Vec::new()),
            Some(DETAIL_ERROR) => ("error", vec![self.inner.reason(DETAIL_ERROR)]),
            Some(d) => ("unschedulable", vec![self.inner.reason(d)]),
        }
    }

    /// The allocation results found for `node` (one JSON per pending claim), None when
    /// the node was not found feasible or nothing was allocated there.
    fn results_for(&self, node: &str) -> Option<Vec<String>> {
        self.inner
            .results
            .lock()
            .expect("results lock")
            .get(node)
            .map(|r| r.0.clone())
    }

    /// The index of the extended claim's variant allocated on `node` (in the order
    /// `DraDevices::allocator` was given them), None when none was.
    fn variant_for(&self, node: &str) -> Option<usize> {
        self.inner
            .results
            .lock()
            .expect("results lock")
            .get(node)
            .and_then(|r| r.1)
    }

    /// Indices of the allocated claims that were not available on some node.
    fn unavailable_claims(&self) -> Vec<usize> {
        self.inner
            .unavailable
            .lock()
            .expect("unavailable lock")
            .iter()
            .copied()
            .collect()
    }

    /// The error that failed the attempt (a broken claim or class, or the timeout).
    #[getter]
    fn error(&self) -> Option<String> {
        self.inner.error.lock().expect("error lock").clone()
    }

    /// How many search steps the allocations took (upstream's
    /// `NumAllocateOneInvocations`).
    #[getter]
    fn invocations(&self) -> u64 {
        let load = |a: &Allocator| a.invocations.load(std::sync::atomic::Ordering::Relaxed);
        self.inner.allocator.as_ref().map_or(0, load)
            + self
                .inner
                .extended
                .as_ref()
                .map_or(0, |e| e.variants.iter().map(load).sum())
    }

    /// How many claims are to be allocated.
    #[getter]
    fn num_claims(&self) -> usize {
        self.inner
            .allocator
            .as_ref()
            .map_or(0, |a| a.claims().len())
    }
}
