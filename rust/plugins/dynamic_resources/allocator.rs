//! The structured-parameters allocator: which devices of which ResourceSlices satisfy a
//! pod's ResourceClaims on one node.
//!
//! A port of `k8s.io/dynamic-resource-allocation/structured/internal/incubating`, the
//! implementation v1.36's `structured.NewAllocator` picks with the default feature
//! gates (AdminAccess, PrioritizedList, PartitionableDevices, DeviceTaints,
//! DeviceBindingConditions+ResourceClaimDeviceStatus and ConsumableCapacity are on;
//! `stable` lacks the last two, `experimental` is only needed for the alpha
//! DRAListTypeAttributes). The search is the same, step for step, so that the same
//! devices are picked: pools sorted by driver and name (pools with binding conditions
//! last), slices by name, devices in slice order; claims, requests and devices are
//! allocated in order, each candidate checked for use, selectors (class first, then
//! request; cached per device and request), capacity, counters, taints and
//! constraints, and the first complete solution wins, with backtracking that only tries
//! combinations in device order and with upstream's early exit when the
//! `AllocationResultsMaxSize` limit cannot be met. Error texts are upstream's.
//!
//! One [`Allocator`] is built per pod and attempt (PreFilter) from the devices
//! published to the cluster and the devices already allocated or in flight; its
//! [`Allocator::allocate`] is called once per node (Filter), from any thread.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Map, Value as Json};

use super::api::{
    CapacityRequirements, Device, DeviceAttribute, DeviceClass, DeviceRequest, DeviceSelector,
    DeviceToleration, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ResourceClaim,
    ResourceSlice,
};
use super::cel::{device_variable, CelCache};
use super::nodeselector::{self, NodeLabels, NodeView};
use super::quantity::Quantity;

/// `resourceapi.AllocationResultsMaxSize`.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: Arc<str>,
    pub pool: Arc<str>,
    pub device: Arc<str>,
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

pub type PoolId = (Arc<str>, Arc<str>);

/// name → consumed amount in nano-units.
pub type ConsumedCapacity = BTreeMap<String, i128>;

/// Devices that are allocated (upstream `structured.AllocatedState`), with a count per
/// entry so that the accounting of several claims can be added and taken away in any
/// order.
#[derive(Clone, Debug, Default)]
pub struct AllocatedState {
    pub devices: HashMap<DeviceId, usize>,
    pub shared: HashMap<(DeviceId, String), usize>,
    /// Devices with some shared allocation, for `IsDeviceAllocated`.
    pub shared_devices: HashMap<DeviceId, usize>,
    pub capacity: HashMap<DeviceId, ConsumedCapacity>,
}

/// What one allocated claim takes (upstream `foreachAllocatedDevice`).
#[derive(Clone, Debug, Default)]
pub struct ClaimDevices {
    pub dedicated: Vec<DeviceId>,
    pub shared: Vec<(DeviceId, String, ConsumedCapacity)>,
}

fn bump<K: std::hash::Hash + Eq>(m: &mut HashMap<K, usize>, k: K, add: bool) {
    if add {
        *m.entry(k).or_insert(0) += 1;
    } else if let Some(n) = m.get_mut(&k) {
        *n -= 1;
        if *n == 0 {
            m.remove(&k);
        }
    }
}

impl AllocatedState {
    /// `internal.IsDeviceAllocated`.
    fn is_allocated(&self, id: &DeviceId) -> bool {
        self.devices.contains_key(id)
            || self.shared_devices.contains_key(id)
            || self.capacity.contains_key(id)
    }

    /// Account (`add`) or release the devices of one claim.
    pub fn apply(&mut self, claim: &ClaimDevices, add: bool) {
        for id in &claim.dedicated {
            bump(&mut self.devices, id.clone(), add);
        }
        for (id, share, consumed) in &claim.shared {
            bump(&mut self.shared, (id.clone(), share.clone()), add);
            bump(&mut self.shared_devices, id.clone(), add);
            if consumed.is_empty() {
                continue;
            }
            let entry = self.capacity.entry(id.clone()).or_default();
            for (k, v) in consumed {
                let x = entry.entry(k.clone()).or_insert(0);
                if add {
                    *x += v;
                } else {
                    *x -= v;
                }
            }
            if entry.values().all(|v| *v == 0) {
                self.capacity.remove(id);
            }
        }
    }
}

/// The allocated devices one attempt sees: the cluster's (shared by every attempt
/// until it changes) and those of the allocations in flight.
#[derive(Clone, Debug, Default)]
pub struct Allocated {
    pub base: Arc<AllocatedState>,
    pub extra: AllocatedState,
}

impl Allocated {
    fn has_device(&self, id: &DeviceId) -> bool {
        self.base.devices.contains_key(id) || self.extra.devices.contains_key(id)
    }

    fn is_allocated(&self, id: &DeviceId) -> bool {
        self.base.is_allocated(id) || self.extra.is_allocated(id)
    }

    fn has_capacity(&self, id: &DeviceId) -> bool {
        self.base.capacity.contains_key(id) || self.extra.capacity.contains_key(id)
    }

    fn capacity(&self, id: &DeviceId) -> Option<std::borrow::Cow<'_, ConsumedCapacity>> {
        use std::borrow::Cow;
        match (self.base.capacity.get(id), self.extra.capacity.get(id)) {
            (None, None) => None,
            (Some(a), None) => Some(Cow::Borrowed(a)),
            (None, Some(b)) => Some(Cow::Borrowed(b)),
            (Some(a), Some(b)) => {
                let mut m = a.clone();
                for (k, v) in b {
                    *m.entry(k.clone()).or_insert(0) += v;
                }
                Some(Cow::Owned(m))
            }
        }
    }
}

/// Why allocation on a node did not produce a result.
#[derive(Debug, PartialEq)]
pub enum AllocError {
    /// `ErrFailedAllocationOnNode`: only this node is affected; the text is the reason.
    FailedOnNode(String),
    /// The filter timeout expired.
    Timeout,
    /// Anything else: a problem with a claim or class that aborts the attempt.
    Fatal(String),
}

/// The node an allocation is for.
pub struct NodeInput<'a> {
    pub name: &'a str,
    pub labels: &'a dyn NodeLabels,
}

struct Pool<'a> {
    id: PoolId,
    incomplete: bool,
    invalid: bool,
    targeting: Vec<&'a ResourceSlice>,
    not_targeting: Vec<&'a ResourceSlice>,
    counter_sets: HashMap<String, BTreeMap<String, i128>>,
}

/// The published ResourceSlices, indexed as the allocator reads them: by node for
/// slices of one node, and the others (no node name, or shared counters).
#[derive(Default)]
pub struct SliceIndex {
    pub all: Vec<Arc<ResourceSlice>>,
    pub on_node: HashMap<String, Vec<Arc<ResourceSlice>>>,
    pub shared: Vec<Arc<ResourceSlice>>,
}

impl SliceIndex {
    pub fn new(all: Vec<Arc<ResourceSlice>>) -> SliceIndex {
        let mut on_node: HashMap<String, Vec<Arc<ResourceSlice>>> = HashMap::new();
        let mut shared = Vec::new();
        for s in &all {
            let name = s.spec.node_name.clone().unwrap_or_default();
            if name.is_empty() || !s.spec.shared_counters.is_empty() {
                shared.push(s.clone());
            } else {
                on_node.entry(name).or_default().push(s.clone());
            }
        }
        SliceIndex {
            all,
            on_node,
            shared,
        }
    }
}

type CounterSets = HashMap<String, HashMap<String, i128>>;

/// The shared part: inputs of one attempt, reused for every node.
pub struct Allocator {
    allocated: Allocated,
    classes: Arc<HashMap<String, Arc<DeviceClass>>>,
    slices: Arc<SliceIndex>,
    cel: Arc<CelCache>,
    available_counters: Mutex<HashMap<PoolId, CounterSets>>,
    claims: Vec<Arc<ResourceClaim>>,
    /// Upstream's numAllocateOneInvocations.
    pub invocations: std::sync::atomic::AtomicU64,
}

/// A request or a subrequest (upstream `requestAccessor`).
#[derive(Clone, Copy)]
struct Req<'a> {
    name: &'a str,
    class_name: &'a str,
    mode: &'a str,
    count: i64,
    admin_access: Option<bool>,
    selectors: &'a [DeviceSelector],
    tolerations: Option<&'a Vec<Json>>,
    capacity: Option<&'a CapacityRequirements>,
}

impl Req<'_> {
    fn admin(&self) -> bool {
        self.admin_access.unwrap_or(false)
    }
}

fn exact(r: &DeviceRequest) -> Req<'_> {
    let e = r.exactly.as_ref().expect("exact request");
    Req {
        name: &r.name,
        class_name: &e.device_class_name,
        mode: e.allocation_mode.as_deref().unwrap_or("ExactCount"),
        count: e.count.unwrap_or(1),
        admin_access: e.admin_access,
        selectors: &e.selectors,
        tolerations: e.tolerations.as_ref(),
        capacity: e.capacity.as_ref(),
    }
}

fn sub(s: &super::api::DeviceSubRequest) -> Req<'_> {
    Req {
        name: &s.name,
        class_name: &s.device_class_name,
        mode: s.allocation_mode.as_deref().unwrap_or("ExactCount"),
        count: s.count.unwrap_or(1),
        admin_access: None,
        selectors: &s.selectors,
        tolerations: s.tolerations.as_ref(),
        capacity: s.capacity.as_ref(),
    }
}

/// `claim <ns>/<name>` as klog.KObj prints it.
fn kobj(claim: &ResourceClaim) -> String {
    if claim.metadata.namespace.is_empty() {
        claim.metadata.name.clone()
    } else {
        format!("{}/{}", claim.metadata.namespace, claim.metadata.name)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ReqKey {
    claim: usize,
    request: usize,
    sub: usize,
}

#[derive(Clone, Copy)]
struct Loc {
    pool: usize,
    slice: usize,
    device: usize,
}

struct RequestData<'a> {
    req: Req<'a>,
    parent: Option<Req<'a>>,
    class: Option<Arc<DeviceClass>>,
    num_devices: usize,
    selected_sub: usize,
    all_devices: Vec<(DeviceId, Loc)>,
}

impl RequestData<'_> {
    fn request_name(&self) -> String {
        match &self.parent {
            Some(p) => format!("{}/{}", p.name, self.req.name),
            None => self.req.name.to_string(),
        }
    }
}

enum Constraint {
    Match {
        requests: HashSet<String>,
        attribute: String,
        value: Option<DeviceAttribute>,
        num: usize,
    },
    Distinct {
        requests: HashSet<String>,
        attribute: String,
        values: HashMap<String, DeviceAttribute>,
        num: usize,
    },
}

fn constraint_applies(requests: &HashSet<String>, request: &str, sub: &str) -> bool {
    if requests.is_empty() {
        return true;
    }
    if sub.is_empty() {
        requests.contains(request)
    } else {
        requests.contains(request) || requests.contains(&format!("{request}/{sub}"))
    }
}

fn lookup_attribute<'d>(
    device: &'d Device,
    id: &DeviceId,
    name: &str,
) -> Option<&'d DeviceAttribute> {
    if let Some(a) = device.attributes.get(name) {
        return Some(a);
    }
    let i = name.find('/')?;
    if name[..i] != *id.driver {
        return None;
    }
    device.attributes.get(&name[i + 1..])
}

/// Same kind and same value (upstream compares the set field of each kind).
fn same_value(a: &DeviceAttribute, b: &DeviceAttribute) -> Option<bool> {
    if let Some(s) = &a.string {
        return Some(b.string.as_ref() == Some(s));
    }
    if let Some(i) = a.int {
        return Some(b.int == Some(i));
    }
    if let Some(x) = a.bool {
        return Some(b.bool == Some(x));
    }
    if let Some(v) = &a.version {
        return Some(b.version.as_ref() == Some(v));
    }
    None
}

impl Constraint {
    fn add(&mut self, request: &str, sub: &str, device: &Device, id: &DeviceId) -> bool {
        match self {
            Constraint::Match {
                requests,
                attribute,
                value,
                num,
            } => {
                if !requests.is_empty() && !constraint_applies(requests, request, sub) {
                    return true;
                }
                let Some(attr) = lookup_attribute(device, id, attribute) else {
                    return false;
                };
                if *num == 0 {
                    *value = Some(attr.clone());
                    *num = 1;
                    return true;
                }
                let first = value.as_ref().expect("set with the first device");
                match same_value(attr, first) {
                    Some(true) => {
                        *num += 1;
                        true
                    }
                    _ => false,
                }
            }
            Constraint::Distinct {
                requests,
                attribute,
                values,
                num,
            } => {
                if !requests.is_empty() && !constraint_applies(requests, request, sub) {
                    return true;
                }
                let Some(attr) = lookup_attribute(device, id, attribute) else {
                    return false;
                };
                if *num == 0 {
                    values.insert(request.to_string(), attr.clone());
                    *num = 1;
                    return true;
                }
                for other in values.values() {
                    match same_value(attr, other) {
                        // A duplicate of the same kind.
                        Some(true) => return false,
                        Some(false) => {}
                        None => return false,
                    }
                }
                values.insert(request.to_string(), attr.clone());
                *num += 1;
                true
            }
        }
    }

    fn remove(&mut self, request: &str, sub: &str) {
        match self {
            Constraint::Match { requests, num, .. } => {
                if !requests.is_empty() && !constraint_applies(requests, request, sub) {
                    return;
                }
                *num -= 1;
            }
            Constraint::Distinct {
                requests,
                values,
                num,
                ..
            } => {
                if !requests.is_empty() && !constraint_applies(requests, request, sub) {
                    return;
                }
                values.remove(request);
                *num -= 1;
            }
        }
    }
}

struct DeviceResult {
    request: String,
    parent: String,
    id: DeviceId,
    loc: Loc,
    share_id: Option<String>,
    consumed: Option<BTreeMap<String, Quantity>>,
    admin_access: Option<bool>,
}

impl DeviceResult {
    fn request_name(&self) -> String {
        if self.parent.is_empty() {
            self.request.clone()
        } else {
            format!("{}/{}", self.parent, self.request)
        }
    }
}

#[derive(Default)]
struct Rollback {
    counters_reserved: bool,
    constraints_added: usize,
    device_marked: bool,
    capacity_inserted: bool,
    capacity_entry_existed: bool,
    result_added: bool,
    previous_num_results: usize,
    consumed: ConsumedCapacity,
}

/// Not an error: the search must give up on this branch and may try another
/// subrequest (upstream `errAllocationResultMaxSizeExceeded`).
enum Stop {
    MaxSize,
    Err(AllocError),
}

type Step = Result<bool, Stop>;

/// One `Allocate` call (upstream's `allocator`).
struct Run<'a> {
    shared: &'a Allocator,
    node: &'a NodeInput<'a>,
    pools: Vec<Pool<'a>>,
    claims: &'a [Arc<ResourceClaim>],
    request_data: HashMap<ReqKey, RequestData<'a>>,
    matches: HashMap<(DeviceId, ReqKey), bool>,
    constraints: Vec<Vec<Constraint>>,
    consumed_counters: HashMap<PoolId, CounterSets>,
    allocating: HashMap<DeviceId, HashSet<usize>>,
    allocating_capacity: HashMap<DeviceId, ConsumedCapacity>,
    result: Vec<Vec<DeviceResult>>,
    deadline: Option<Instant>,
}

fn node_matches(
    node: &NodeInput<'_>,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> Result<bool, String> {
    if let Some(n) = node_name.filter(|n| !n.is_empty()) {
        return Ok(node.name == n);
    }
    if all_nodes {
        return Ok(true);
    }
    if let Some(sel) = selector {
        return nodeselector::matches(
            sel,
            &NodeView {
                name: node.name,
                labels: node.labels,
            },
        )
        .map_err(|e| format!("failed to parse node selector {}: {e}", selector_text(sel)));
    }
    Ok(false)
}

fn selector_text(sel: &NodeSelector) -> String {
    format!("{sel:?}")
}

impl Allocator {
    pub fn new(
        allocated: Allocated,
        classes: Arc<HashMap<String, Arc<DeviceClass>>>,
        slices: Arc<SliceIndex>,
        cel: Arc<CelCache>,
        claims: Vec<Arc<ResourceClaim>>,
    ) -> Allocator {
        Allocator {
            allocated,
            classes,
            slices,
            cel,
            available_counters: Mutex::new(HashMap::new()),
            claims,
            invocations: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub fn claims(&self) -> &[Arc<ResourceClaim>] {
        &self.claims
    }

    /// NodeResourcesFit's and BalancedAllocation's view of an extended resource backed
    /// by DRA on a node whose allocatable has none of it (upstream
    /// `calculateDRAResourceTotals`): how many devices of the node the class selects,
    /// and how many of those are allocated (dedicated or shared, allocations in flight
    /// included). Err when the class is gone or a selector or node selector fails,
    /// which upstream logs and scores as 0.
    pub fn extended_totals(
        &self,
        class_name: &str,
        node: &NodeInput<'_>,
    ) -> Result<(i64, i64), String> {
        let class = self
            .classes
            .get(class_name)
            .ok_or_else(|| format!("device class {class_name} not found"))?;
        let (mut capacity, mut allocated) = (0i64, 0i64);
        let slices = self
            .slices
            .on_node
            .get(node.name)
            .into_iter()
            .flatten()
            .chain(self.slices.shared.iter());
        for slice in slices {
            let spec = &slice.spec;
            let slice_node = spec.node_name.as_deref().unwrap_or("");
            let all_nodes = spec.all_nodes.unwrap_or(false);
            let mut devices: Vec<(usize, &Device)> = Vec::new();
            if spec.per_device_node_selection.unwrap_or(false) {
                for (i, d) in spec.devices.iter().enumerate() {
                    let d_node = d.node_name.as_deref().unwrap_or("");
                    let d_all = d.all_nodes.unwrap_or(false);
                    if d_all || (!d_node.is_empty() && d_node == node.name) {
                        devices.push((i, d));
                    } else if let Some(sel) = &d.node_selector {
                        if node_matches(node, Some(d_node), d_all, Some(sel))? {
                            devices.push((i, d));
                        }
                    }
                }
            } else {
                if !all_nodes && slice_node != node.name && spec.node_selector.is_some() {
                    if !node_matches(
                        node,
                        Some(slice_node),
                        all_nodes,
                        spec.node_selector.as_ref(),
                    )? {
                        continue;
                    }
                } else if !all_nodes && !slice_node.is_empty() && slice_node != node.name {
                    continue;
                }
                devices.extend(spec.devices.iter().enumerate());
            }
            for (i, device) in devices {
                let mut variable = None;
                if !class.spec.selectors.is_empty()
                    && !self.class_selects(class, slice, i, device, &mut variable)?
                {
                    continue;
                }
                capacity += 1;
                let id = DeviceId {
                    driver: Arc::from(spec.driver.as_str()),
                    pool: Arc::from(spec.pool.name.as_str()),
                    device: Arc::from(device.name.as_str()),
                };
                if self.allocated.is_allocated(&id) {
                    allocated += 1;
                }
            }
        }
        Ok((capacity, allocated))
    }

    /// All of the class's CEL selectors accept the device (upstream
    /// `deviceMatchesClass`), with the verdicts cached as the allocator caches them.
    fn class_selects(
        &self,
        class: &DeviceClass,
        slice: &ResourceSlice,
        device_index: usize,
        device: &Device,
        variable: &mut Option<cel::common::types::CelMap<'static>>,
    ) -> Result<bool, String> {
        for selector in &class.spec.selectors {
            let Some(expr) = &selector.cel else { continue };
            let compiled = self.cel.get_or_compile(&expr.expression);
            if let Some(err) = compiled.error() {
                return Err(err.to_string());
            }
            let verdict = match self.cel.cached(slice.serial, device_index, compiled.id) {
                Some(v) => v,
                None => {
                    if variable.is_none() {
                        *variable = Some(device_variable(&slice.spec.driver, device)?);
                    }
                    let v = variable.as_ref().expect("just set");
                    let m = compiled.matches(&self.cel.env, v)?;
                    if slice.serial != 0 {
                        self.cel
                            .remember(slice.serial, device_index, compiled.id, m);
                    }
                    m
                }
            };
            if !verdict {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Allocate every claim on `node`: one `AllocationResult` (API JSON) per claim, or
    /// None when they cannot all be allocated there.
    pub fn allocate(
        &self,
        node: &NodeInput<'_>,
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<Json>>, AllocError> {
        let for_node: Vec<&ResourceSlice> = self
            .slices
            .on_node
            .get(node.name)
            .into_iter()
            .flatten()
            .chain(self.slices.shared.iter())
            .map(|s| &**s)
            .collect();
        let pools = gather_pools(&for_node, node, &self.slices.all)
            .map_err(|e| AllocError::Fatal(format!("gather pool information: {e}")))?;
        let mut run = Run {
            shared: self,
            node,
            pools,
            claims: &self.claims,
            request_data: HashMap::new(),
            matches: HashMap::new(),
            constraints: Vec::new(),
            consumed_counters: HashMap::new(),
            allocating: HashMap::new(),
            allocating_capacity: HashMap::new(),
            result: (0..self.claims.len()).map(|_| Vec::new()).collect(),
            deadline,
        };
        run.prepare()?;
        let done = match run.allocate_one(
            ReqKey {
                claim: 0,
                request: 0,
                sub: 0,
            },
            0,
            false,
            Loc {
                pool: 0,
                slice: 0,
                device: 0,
            },
        ) {
            Ok(d) => d,
            Err(Stop::MaxSize) => false,
            Err(Stop::Err(e)) => return Err(e),
        };
        if !done {
            if run.pools.iter().any(|p| p.invalid) {
                return Err(AllocError::FailedOnNode(
                    "invalid resource pools were encountered".to_string(),
                ));
            }
            return Ok(None);
        }
        run.results().map(Some)
    }
}

// ---- pools ---------------------------------------------------------------------------------

fn gather_pools<'a>(
    for_node: &[&'a ResourceSlice],
    node: &NodeInput<'_>,
    all: &'a [Arc<ResourceSlice>],
) -> Result<Vec<Pool<'a>>, String> {
    let mut pools: HashMap<PoolId, Vec<&'a ResourceSlice>> = HashMap::new();
    for &slice in for_node {
        let spec = &slice.spec;
        let relevant = if !spec.shared_counters.is_empty() {
            true
        } else if spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
            || spec.all_nodes.unwrap_or(false)
            || spec.node_selector.is_some()
        {
            node_matches(
                node,
                spec.node_name.as_deref(),
                spec.all_nodes.unwrap_or(false),
                spec.node_selector.as_ref(),
            )
            .map_err(|e| {
                format!(
                    "failed to perform node selection for slice {}: {e}",
                    slice.metadata.name
                )
            })?
        } else if spec.per_device_node_selection.unwrap_or(false) {
            let mut any = false;
            for d in &spec.devices {
                if node_matches(
                    node,
                    d.node_name.as_deref(),
                    d.all_nodes.unwrap_or(false),
                    d.node_selector.as_ref(),
                )
                .map_err(|e| {
                    format!(
                        "failed to perform node selection for device {} in slice {}: {e}",
                        d.name, slice.metadata.name
                    )
                })? {
                    any = true;
                    break;
                }
            }
            any
        } else {
            continue;
        };
        if relevant {
            let id: PoolId = (
                Arc::from(spec.driver.as_str()),
                Arc::from(spec.pool.name.as_str()),
            );
            let entry = pools.entry(id).or_default();
            match entry.first().map(|s| s.spec.pool.generation) {
                None => entry.push(slice),
                Some(g) if spec.pool.generation < g => {}
                Some(g) if spec.pool.generation > g => {
                    entry.clear();
                    entry.push(slice);
                }
                Some(_) => entry.push(slice),
            }
        }
    }
    let mut result = Vec::new();
    let mut with_binding = Vec::new();
    for (id, mut slices) in pools {
        let count = slices[0].spec.pool.resource_slice_count;
        if slices.len() as i64 == count {
            let pool = build_pool(id, &mut slices, None);
            if pool_has_binding_conditions(&pool) {
                with_binding.push(pool);
            } else {
                result.push(pool);
            }
            continue;
        }
        let generation = slices[0].spec.pool.generation;
        let (obsolete, all_for_pool) = check_slices_in_pool(all, &id, generation);
        if obsolete {
            continue;
        }
        if all_for_pool.len() as i64 != count {
            result.push(Pool {
                id,
                incomplete: true,
                invalid: false,
                targeting: Vec::new(),
                not_targeting: Vec::new(),
                counter_sets: HashMap::new(),
            });
            continue;
        }
        let pool = build_pool(id, &mut slices, Some(&all_for_pool));
        if pool_has_binding_conditions(&pool) {
            with_binding.push(pool);
        } else {
            result.push(pool);
        }
    }
    let by_id = |a: &Pool<'_>, b: &Pool<'_>| a.id.0.cmp(&b.id.0).then_with(|| a.id.1.cmp(&b.id.1));
    result.sort_by(by_id);
    with_binding.sort_by(by_id);
    result.extend(with_binding);
    Ok(result)
}

fn invalid_pool<'a>(id: PoolId) -> Pool<'a> {
    Pool {
        id,
        incomplete: false,
        invalid: true,
        targeting: Vec::new(),
        not_targeting: Vec::new(),
        counter_sets: HashMap::new(),
    }
}

fn build_pool<'a>(
    id: PoolId,
    slices: &mut [&'a ResourceSlice],
    all_for_pool: Option<&Vec<&'a ResourceSlice>>,
) -> Pool<'a> {
    slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let (counter_slices, device_slices): (Vec<&'a ResourceSlice>, Vec<&'a ResourceSlice>) = slices
        .iter()
        .copied()
        .partition(|s| !s.spec.shared_counters.is_empty());
    let mut names = HashSet::new();
    for s in &device_slices {
        for d in &s.spec.devices {
            if !names.insert(d.name.as_str()) {
                return invalid_pool(id);
            }
        }
    }
    let mut counter_sets: HashMap<String, BTreeMap<String, i128>> = HashMap::new();
    for s in &counter_slices {
        for cs in &s.spec.shared_counters {
            if counter_sets.contains_key(&cs.name) {
                return invalid_pool(id);
            }
            counter_sets.insert(
                cs.name.clone(),
                cs.counters
                    .iter()
                    .map(|(k, c)| (k.clone(), c.value.nanos))
                    .collect(),
            );
        }
    }
    let consumption_ok = |list: &[&ResourceSlice]| {
        list.iter().all(|s| {
            s.spec.devices.iter().all(|d| {
                d.consumes_counters
                    .iter()
                    .all(|c| match counter_sets.get(&c.counter_set) {
                        None => false,
                        Some(set) => c.counters.keys().all(|k| set.contains_key(k)),
                    })
            })
        })
    };
    if !consumption_ok(slices) {
        return invalid_pool(id);
    }
    let mut not_targeting = Vec::new();
    if let Some(all) = all_for_pool {
        if all.len() != slices.len() {
            let have: HashSet<&str> = slices.iter().map(|s| s.metadata.name.as_str()).collect();
            not_targeting = all
                .iter()
                .filter(|s| !have.contains(s.metadata.name.as_str()))
                .copied()
                .collect();
            if !consumption_ok(&not_targeting) {
                return invalid_pool(id);
            }
        }
    }
    Pool {
        id,
        incomplete: false,
        invalid: false,
        targeting: device_slices,
        not_targeting,
        counter_sets,
    }
}

fn pool_has_binding_conditions(pool: &Pool<'_>) -> bool {
    pool.targeting.iter().any(|s| {
        s.spec
            .devices
            .iter()
            .any(|d| d.binding_conditions.is_some())
    })
}

fn check_slices_in_pool<'a>(
    all: &'a [Arc<ResourceSlice>],
    id: &PoolId,
    generation: i64,
) -> (bool, Vec<&'a ResourceSlice>) {
    let mut out = Vec::new();
    for s in all {
        let s: &'a ResourceSlice = s;
        if s.spec.driver != *id.0 || s.spec.pool.name != *id.1 {
            continue;
        }
        if s.spec.pool.generation == generation {
            out.push(s);
        } else if s.spec.pool.generation > generation {
            return (true, Vec::new());
        }
    }
    (false, out)
}

// ---- capacity ------------------------------------------------------------------------------

fn requested<'a>(req: Option<&'a CapacityRequirements>, name: &str) -> Option<&'a Quantity> {
    req.and_then(|r| r.requests.as_ref())
        .and_then(|m| m.get(name))
        .map(|q| &q.0)
}

fn consumed_for(requested: Option<&Quantity>, cap: &super::api::DeviceCapacity) -> Quantity {
    let Some(req) = requested else {
        return cap
            .request_policy
            .as_ref()
            .and_then(|p| p.default.clone())
            .unwrap_or_else(|| cap.value.clone());
    };
    let Some(policy) = &cap.request_policy else {
        return req.clone();
    };
    if let Some(range) = policy.valid_range.as_ref().filter(|r| r.min.is_some()) {
        let min = range.min.as_ref().expect("checked");
        if req < min {
            return min.clone();
        }
        let Some(step) = &range.step else {
            return req.clone();
        };
        let (r, s, m) = (req.value(), step.value(), min.value());
        let added = r - m;
        let mut n = added / s;
        if added % s != 0 {
            n += 1;
        }
        return Quantity::from_nanos((m + s * n) * 1_000_000_000);
    }
    if !policy.valid_values.is_empty() {
        for v in &policy.valid_values {
            if req <= v {
                return v.clone();
            }
        }
        return req.clone();
    }
    req.clone()
}

fn violates_policy(value: &Quantity, policy: Option<&super::api::CapacityRequestPolicy>) -> bool {
    let Some(p) = policy else { return false };
    if p.default
        .as_ref()
        .is_some_and(|d| d.nanos == value.nanos && d.text == value.text)
    {
        return false;
    }
    if let Some(range) = &p.valid_range {
        if range.max.as_ref().is_some_and(|m| value > m) {
            return true;
        }
        if let Some(step) = &range.step {
            let min = range.min.as_ref().map(Quantity::value).unwrap_or(0);
            if (value.value() - min) % step.value() != 0 {
                return true;
            }
        }
        return false;
    }
    if !p.valid_values.is_empty() {
        return !p.valid_values.iter().any(|v| v == value);
    }
    false
}

/// Upstream `CmpRequestOverCapacity`: `Err` when the request names a capacity the device
/// does not have.
fn request_fits_capacity(
    current: Option<&ConsumedCapacity>,
    req: Option<&CapacityRequirements>,
    device: &Device,
    allocating: Option<&ConsumedCapacity>,
) -> Result<bool, ()> {
    if let Some(reqs) = req.and_then(|r| r.requests.as_ref()) {
        if reqs.keys().any(|k| !device.capacity.contains_key(k)) {
            return Err(());
        }
    }
    for (name, cap) in &device.capacity {
        let consumed = consumed_for(requested(req, name), cap);
        if violates_policy(&consumed, cap.request_policy.as_ref()) {
            return Ok(false);
        }
        let mut total = consumed.nanos + current.and_then(|c| c.get(name)).copied().unwrap_or(0);
        total += allocating.and_then(|c| c.get(name)).copied().unwrap_or(0);
        if total > cap.value.nanos {
            return Ok(false);
        }
    }
    Ok(true)
}

fn tolerates(tolerations: Option<&Vec<Json>>, key: &str, value: &str, effect: &str) -> bool {
    tolerations.into_iter().flatten().any(|t| {
        let t: DeviceToleration = serde_json::from_value(t.clone()).unwrap_or_default();
        if !t.effect.is_empty() && t.effect != effect {
            return false;
        }
        if !t.key.is_empty() && t.key != key {
            return false;
        }
        match t.operator.as_str() {
            "" | "Equal" => t.value == value,
            "Exists" => true,
            _ => false,
        }
    })
}

fn taint_prevents(device: &Device, req: &Req<'_>) -> bool {
    device.taints.iter().any(|t| {
        matches!(t.effect.as_str(), "NoExecute" | "NoSchedule")
            && !tolerates(req.tolerations, &t.key, &t.value, &t.effect)
    })
}

fn new_share_id() -> String {
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let seed = now
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let b: [u8; 16] = rng.random();
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-4{:01x}{:02x}-{:01x}{:01x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6] & 0x0f, b[7], 8 | (b[8] & 0x3), b[8] >> 4, b[9],
        b[10], b[11], b[12], b[13], b[14], b[15]
    )
}

// ---- the search ----------------------------------------------------------------------------

impl<'a> Run<'a> {
    fn device(&self, loc: Loc) -> (&'a ResourceSlice, &'a Device) {
        let slice: &'a ResourceSlice = self.pools[loc.pool].targeting[loc.slice];
        (slice, &slice.spec.devices[loc.device])
    }

    fn class(&self, name: &str) -> Result<Arc<DeviceClass>, String> {
        self.shared
            .classes
            .get(name)
            .cloned()
            .ok_or_else(|| format!("deviceclass.resource.k8s.io \"{name}\" not found"))
    }

    fn prepare(&mut self) -> Result<(), AllocError> {
        let claims = self.claims;
        for (ci, claim) in claims.iter().enumerate() {
            let mut min_per_claim = 0usize;
            for (ri, request) in claim.spec.devices.requests.iter().enumerate() {
                let has_subs = !request.first_available.is_empty();
                let min_per_request;
                if has_subs {
                    let mut m = usize::MAX;
                    for (si, s) in request.first_available.iter().enumerate() {
                        let key = ReqKey {
                            claim: ci,
                            request: ri,
                            sub: si,
                        };
                        let parent = Req {
                            name: &request.name,
                            ..exact_or_default(request)
                        };
                        let data = self.validate(sub(s), Some(parent), key, claim)?;
                        m = m.min(data.num_devices);
                        self.request_data.insert(key, data);
                    }
                    min_per_request = m;
                } else {
                    if request.exactly.is_none() {
                        return Err(AllocError::Fatal(format!(
                            "claim {}, request {}: missing device class name (unsupported request type?)",
                            kobj(claim),
                            request.name
                        )));
                    }
                    let key = ReqKey {
                        claim: ci,
                        request: ri,
                        sub: 0,
                    };
                    let data = self.validate(exact(request), None, key, claim)?;
                    min_per_request = data.num_devices;
                    self.request_data.insert(key, data);
                }
                if min_per_request > ALLOCATION_RESULTS_MAX_SIZE - min_per_claim {
                    return Err(AllocError::Fatal(format!(
                        "claim {}, request {}: adding {} devices exceeds the claim limit of {}, with {} already accounted for",
                        kobj(claim),
                        request.name,
                        min_per_request,
                        ALLOCATION_RESULTS_MAX_SIZE,
                        min_per_claim
                    )));
                }
                min_per_claim += min_per_request;
            }
            let mut constraints = Vec::new();
            for (i, c) in claim.spec.devices.constraints.iter().enumerate() {
                let requests: HashSet<String> = c.requests.iter().cloned().collect();
                if let Some(a) = &c.match_attribute {
                    constraints.push(Constraint::Match {
                        requests,
                        attribute: a.clone(),
                        value: None,
                        num: 0,
                    });
                } else if let Some(a) = &c.distinct_attribute {
                    constraints.push(Constraint::Distinct {
                        requests,
                        attribute: a.clone(),
                        values: HashMap::new(),
                        num: 0,
                    });
                } else {
                    return Err(AllocError::Fatal(format!(
                        "claim {}, constraint #{i}: empty constraint (unsupported constraint type?)",
                        kobj(claim)
                    )));
                }
            }
            self.constraints.push(constraints);
        }
        Ok(())
    }

    fn validate(
        &mut self,
        req: Req<'a>,
        parent: Option<Req<'a>>,
        key: ReqKey,
        claim: &ResourceClaim,
    ) -> Result<RequestData<'a>, AllocError> {
        for (i, s) in req.selectors.iter().enumerate() {
            if s.cel.is_none() {
                return Err(AllocError::Fatal(format!(
                    "claim {}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                    kobj(claim),
                    req.name
                )));
            }
        }
        if req.class_name.is_empty() {
            return Err(AllocError::Fatal(format!(
                "claim {}, request {}: missing device class name (unsupported request type?)",
                kobj(claim),
                req.name
            )));
        }
        let class = self.class(req.class_name).map_err(|e| {
            AllocError::Fatal(format!(
                "claim {}, request {}: could not retrieve device class {}: {e}",
                kobj(claim),
                req.name,
                req.class_name
            ))
        })?;
        let mut data = RequestData {
            req,
            parent,
            class: Some(class),
            num_devices: 0,
            selected_sub: 0,
            all_devices: Vec::new(),
        };
        match req.mode {
            "ExactCount" => {
                data.num_devices = usize::try_from(req.count).unwrap_or(usize::MAX);
            }
            "All" => {
                for pi in 0..self.pools.len() {
                    let pool = &self.pools[pi];
                    if pool.incomplete {
                        return Err(AllocError::Fatal(format!(
                            "claim {}, request {}: asks for all devices, but resource pool {}/{} is currently being updated",
                            kobj(claim), req.name, pool.id.0, pool.id.1
                        )));
                    }
                    if pool.invalid {
                        return Err(AllocError::Fatal(format!(
                            "claim {}, request {}: asks for all devices, but resource pool {}/{} is currently invalid",
                            kobj(claim), req.name, pool.id.0, pool.id.1
                        )));
                    }
                    for si in 0..pool.targeting.len() {
                        for di in 0..self.pools[pi].targeting[si].spec.devices.len() {
                            let loc = Loc {
                                pool: pi,
                                slice: si,
                                device: di,
                            };
                            let selectable = self.is_selectable(key, &data, loc)?;
                            if !selectable {
                                continue;
                            }
                            let (slice, device) = self.device(loc);
                            let id = self.device_id(loc);
                            if request_fits_capacity(
                                self.shared.allocated.capacity(&id).as_deref(),
                                data.req.capacity,
                                device,
                                self.allocating_capacity.get(&id),
                            ) != Ok(true)
                            {
                                let _ = slice;
                                continue;
                            }
                            data.all_devices.push((id, loc));
                        }
                    }
                }
                data.num_devices = data.all_devices.len();
            }
            other => {
                return Err(AllocError::Fatal(format!(
                    "claim {}, request {}: unsupported count mode {other}",
                    kobj(claim),
                    req.name
                )))
            }
        }
        Ok(data)
    }

    fn device_id(&self, loc: Loc) -> DeviceId {
        let pool = &self.pools[loc.pool];
        let (_, device) = self.device(loc);
        DeviceId {
            driver: pool.id.0.clone(),
            pool: pool.id.1.clone(),
            device: Arc::from(device.name.as_str()),
        }
    }

    fn check_deadline(&self) -> Result<(), Stop> {
        if let Some(d) = self.deadline {
            if Instant::now() >= d {
                return Err(Stop::Err(AllocError::Timeout));
            }
        }
        Ok(())
    }

    fn allocate_one(
        &mut self,
        r: ReqKey,
        device_index: usize,
        allocate_sub: bool,
        start: Loc,
    ) -> Step {
        self.shared
            .invocations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.check_deadline()?;
        if r.claim >= self.claims.len() {
            return Ok(true);
        }
        let claim = self.claims[r.claim].clone();
        if r.request >= claim.spec.devices.requests.len() {
            return match self.allocate_one(
                ReqKey {
                    claim: r.claim + 1,
                    request: 0,
                    sub: 0,
                },
                0,
                false,
                Loc {
                    pool: 0,
                    slice: 0,
                    device: 0,
                },
            ) {
                Err(Stop::MaxSize) => Ok(false),
                other => other,
            };
        }
        let key = ReqKey {
            claim: r.claim,
            request: r.request,
            sub: r.sub,
        };
        let has_parent = self.request_data[&key].parent.is_some();
        if !allocate_sub && has_parent {
            let mut all_exceeded = true;
            let mut sub_index = 0;
            loop {
                let next = ReqKey {
                    sub: sub_index,
                    ..key
                };
                if !self.request_data.contains_key(&next) {
                    return if all_exceeded {
                        Err(Stop::MaxSize)
                    } else {
                        Ok(false)
                    };
                }
                match self.allocate_one(
                    next,
                    0,
                    true,
                    Loc {
                        pool: 0,
                        slice: 0,
                        device: 0,
                    },
                ) {
                    Err(Stop::MaxSize) => {
                        sub_index += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                    Ok(true) => {
                        self.request_data
                            .get_mut(&key)
                            .expect("present")
                            .selected_sub = sub_index;
                        return Ok(true);
                    }
                    Ok(false) => {
                        all_exceeded = false;
                    }
                }
                sub_index += 1;
            }
        }
        let (all_mode, num_devices, admin) = {
            let d = &self.request_data[&key];
            (d.req.mode == "All", d.num_devices, d.req.admin())
        };
        if all_mode && self.request_data[&key].all_devices.is_empty() {
            return Ok(false);
        }
        if device_index >= num_devices {
            return self.allocate_one(
                ReqKey {
                    claim: r.claim,
                    request: r.request + 1,
                    sub: 0,
                },
                0,
                false,
                Loc {
                    pool: 0,
                    slice: 0,
                    device: 0,
                },
            );
        }
        let remaining = num_devices - device_index;
        let available = ALLOCATION_RESULTS_MAX_SIZE.saturating_sub(self.result[r.claim].len());
        if remaining > available {
            return Err(Stop::MaxSize);
        }
        if all_mode {
            let (id, loc) = self.request_data[&key].all_devices[device_index].clone();
            let Some(rollback) = self.allocate_device(key, &id, loc, true)? else {
                return Ok(false);
            };
            let done = self.allocate_one(
                key,
                device_index + 1,
                allocate_sub,
                Loc {
                    pool: 0,
                    slice: 0,
                    device: 0,
                },
            );
            match done {
                Ok(true) => return Ok(true),
                other => {
                    self.rollback(key, &id, loc, rollback);
                    return other;
                }
            }
        }
        for pi in start.pool..self.pools.len() {
            if self.pools[pi].incomplete || self.pools[pi].invalid {
                continue;
            }
            let slice_start = if pi == start.pool { start.slice } else { 0 };
            for si in slice_start..self.pools[pi].targeting.len() {
                let device_start = if pi == start.pool && si == start.slice {
                    start.device
                } else {
                    0
                };
                let n = self.pools[pi].targeting[si].spec.devices.len();
                for di in device_start..n {
                    let loc = Loc {
                        pool: pi,
                        slice: si,
                        device: di,
                    };
                    let id = self.device_id(loc);
                    if admin && self.allocating_for_claim(&id, r.claim) {
                        continue;
                    }
                    if !admin && self.device_in_use(&id) {
                        continue;
                    }
                    let data = self.request_data.remove(&key).expect("present");
                    let selectable = self.is_selectable(key, &data, loc);
                    let cap = data.req.capacity;
                    self.request_data.insert(key, data);
                    if !selectable.map_err(Stop::Err)? {
                        continue;
                    }
                    let (_, device) = self.device(loc);
                    if request_fits_capacity(
                        self.shared.allocated.capacity(&id).as_deref(),
                        cap,
                        device,
                        self.allocating_capacity.get(&id),
                    ) != Ok(true)
                    {
                        continue;
                    }
                    let Some(rollback) = self.allocate_device(key, &id, loc, false)? else {
                        continue;
                    };
                    let next = Loc {
                        pool: pi,
                        slice: si,
                        device: di + 1,
                    };
                    match self.allocate_one(key, device_index + 1, allocate_sub, next) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.rollback(key, &id, loc, rollback),
                        Err(e) => {
                            self.rollback(key, &id, loc, rollback);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    fn is_selectable(
        &mut self,
        key: ReqKey,
        data: &RequestData<'a>,
        loc: Loc,
    ) -> Result<bool, AllocError> {
        let id = self.device_id(loc);
        if let Some(&m) = self.matches.get(&(id.clone(), key)) {
            return Ok(m);
        }
        let (slice, device) = self.device(loc);
        let claim = self.claims[key.claim].clone();
        let mut variable = None;
        if let Some(class) = &data.class {
            if !self.selectors_match(
                &claim,
                Some(class),
                &class.spec.selectors,
                slice,
                loc.device,
                device,
                &mut variable,
            )? {
                self.matches.insert((id, key), false);
                return Ok(false);
            }
        }
        if !self.selectors_match(
            &claim,
            None,
            data.req.selectors,
            slice,
            loc.device,
            device,
            &mut variable,
        )? {
            self.matches.insert((id, key), false);
            return Ok(false);
        }
        if slice.spec.per_device_node_selection.unwrap_or(false) {
            let m = node_matches(
                self.node,
                device.node_name.as_deref(),
                device.all_nodes.unwrap_or(false),
                device.node_selector.as_ref(),
            )
            .map_err(AllocError::Fatal)?;
            if !m {
                self.matches.insert((id, key), false);
                return Ok(false);
            }
        }
        self.matches.insert((id, key), true);
        Ok(true)
    }

    #[allow(clippy::too_many_arguments)]
    fn selectors_match(
        &self,
        claim: &ResourceClaim,
        class: Option<&Arc<DeviceClass>>,
        selectors: &[DeviceSelector],
        slice: &ResourceSlice,
        device_index: usize,
        device: &Device,
        variable: &mut Option<cel::common::types::CelMap<'static>>,
    ) -> Result<bool, AllocError> {
        let cel = &self.shared.cel;
        for (i, selector) in selectors.iter().enumerate() {
            let Some(expr) = &selector.cel else { continue };
            let compiled = cel.get_or_compile(&expr.expression);
            let who = || match class {
                Some(c) => format!("class {}", c.metadata.name),
                None => format!("claim {}", kobj(claim)),
            };
            if let Some(err) = compiled.error() {
                return Err(AllocError::Fatal(format!(
                    "{}: selector #{i}: CEL compile error: {err}",
                    who()
                )));
            }
            let verdict = match cel.cached(slice.serial, device_index, compiled.id) {
                Some(v) => v,
                None => {
                    if variable.is_none() {
                        *variable =
                            Some(device_variable(&slice.spec.driver, device).map_err(|e| {
                                AllocError::Fatal(format!(
                                    "{}: selector #{i}: CEL runtime error: {e}",
                                    who()
                                ))
                            })?);
                    }
                    let v = variable.as_ref().expect("just set");
                    let m = compiled.matches(&cel.env, v).map_err(|e| {
                        AllocError::Fatal(format!(
                            "{}: selector #{i}: CEL runtime error: {e}",
                            who()
                        ))
                    })?;
                    if slice.serial != 0 {
                        cel.remember(slice.serial, device_index, compiled.id, m);
                    }
                    m
                }
            };
            if !verdict {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn device_in_use(&self, id: &DeviceId) -> bool {
        self.shared.allocated.has_device(id)
            || self.allocating.get(id).is_some_and(|s| !s.is_empty())
    }

    fn allocating_for_claim(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|s| s.contains(&claim))
    }

    fn capacity_in_use(&self, id: &DeviceId) -> bool {
        self.shared.allocated.has_capacity(id) || self.allocating_capacity.contains_key(id)
    }

    /// `allocateDevice`: Some(rollback state) when the device was taken.
    fn allocate_device(
        &mut self,
        key: ReqKey,
        id: &DeviceId,
        loc: Loc,
        must: bool,
    ) -> Result<Option<Rollback>, Stop> {
        let (_, device) = self.device(loc);
        let (req, parent_name, base, subname) = {
            let d = &self.request_data[&key];
            let req = d.req;
            match &d.parent {
                None => (req, String::new(), req.name.to_string(), String::new()),
                Some(p) => (
                    req,
                    p.name.to_string(),
                    p.name.to_string(),
                    req.name.to_string(),
                ),
            }
        };
        let multi = device.allow_multiple_allocations.unwrap_or(false);
        if !multi && req.admin() && self.allocating_for_claim(id, key.claim) {
            return Ok(None);
        }
        if !req.admin() && self.device_in_use(id) {
            return Ok(None);
        }
        let skip_counters = multi && self.capacity_in_use(id);
        let mut state = Rollback {
            previous_num_results: self.result[key.claim].len(),
            ..Rollback::default()
        };
        if !skip_counters && !device.consumes_counters.is_empty() {
            if !self.check_available_counters(loc, device) {
                return Ok(None);
            }
            state.counters_reserved = true;
        }
        if taint_prevents(device, &req) {
            self.rollback(key, id, loc, state);
            return Ok(None);
        }
        let n = self.constraints[key.claim].len();
        for i in 0..n {
            if !self.constraints[key.claim][i].add(&base, &subname, device, id) {
                self.rollback_named(key, id, loc, state, &base, &subname);
                if must {
                    let claim = &self.claims[key.claim];
                    return Err(Stop::Err(AllocError::Fatal(format!(
                        "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                        kobj(claim),
                        req.name,
                        id
                    ))));
                }
                return Ok(None);
            }
            state.constraints_added += 1;
        }
        if !multi {
            self.allocating
                .entry(id.clone())
                .or_default()
                .insert(key.claim);
            state.device_marked = true;
        }
        let mut consumed_out: BTreeMap<String, Quantity> = BTreeMap::new();
        let mut share_id = None;
        if request_fits_capacity(
            self.shared.allocated.capacity(id).as_deref(),
            req.capacity,
            device,
            self.allocating_capacity.get(id),
        ) != Ok(true)
        {
            self.rollback_named(key, id, loc, state, &base, &subname);
            return Ok(None);
        }
        if multi {
            for (name, cap) in &device.capacity {
                consumed_out.insert(
                    name.clone(),
                    consumed_for(requested(req.capacity, name), cap),
                );
            }
            share_id = Some(new_share_id());
            state.capacity_entry_existed = self.allocating_capacity.contains_key(id);
            let consumed: ConsumedCapacity = consumed_out
                .iter()
                .map(|(k, q)| (k.clone(), q.nanos))
                .collect();
            let entry = self.allocating_capacity.entry(id.clone()).or_default();
            for (k, v) in &consumed {
                *entry.entry(k.clone()).or_insert(0) += v;
            }
            state.capacity_inserted = true;
            state.consumed = consumed;
        }
        self.result[key.claim].push(DeviceResult {
            request: req.name.to_string(),
            parent: parent_name,
            id: id.clone(),
            loc,
            share_id,
            consumed: (!consumed_out.is_empty()).then_some(consumed_out),
            admin_access: if req.admin() { Some(true) } else { None },
        });
        state.result_added = true;
        Ok(Some(state))
    }

    fn rollback(&mut self, key: ReqKey, id: &DeviceId, loc: Loc, state: Rollback) {
        let (base, subname) = {
            let d = &self.request_data[&key];
            match &d.parent {
                None => (d.req.name.to_string(), String::new()),
                Some(p) => (p.name.to_string(), d.req.name.to_string()),
            }
        };
        self.rollback_named(key, id, loc, state, &base, &subname);
    }

    fn rollback_named(
        &mut self,
        key: ReqKey,
        id: &DeviceId,
        loc: Loc,
        state: Rollback,
        base: &str,
        subname: &str,
    ) {
        if state.result_added {
            self.result[key.claim].truncate(state.previous_num_results);
        }
        if state.capacity_inserted {
            if let Some(entry) = self.allocating_capacity.get_mut(id) {
                for (k, v) in &state.consumed {
                    if let Some(x) = entry.get_mut(k) {
                        *x -= v;
                    }
                }
                if entry.values().all(|v| *v == 0) {
                    self.allocating_capacity.remove(id);
                }
            }
            if state.capacity_entry_existed && !self.allocating_capacity.contains_key(id) {
                self.allocating_capacity
                    .insert(id.clone(), ConsumedCapacity::new());
            }
        }
        if state.device_marked {
            if let Some(s) = self.allocating.get_mut(id) {
                s.remove(&key.claim);
            }
        }
        for i in (0..state.constraints_added).rev() {
            self.constraints[key.claim][i].remove(base, subname);
        }
        if state.counters_reserved {
            let (_, device) = self.device(loc);
            self.deallocate_counters(loc, device);
        }
    }

    fn check_available_counters(&mut self, loc: Loc, device: &Device) -> bool {
        let pool_id = self.pools[loc.pool].id.clone();
        let cached = self
            .shared
            .available_counters
            .lock()
            .expect("counter cache lock")
            .get(&pool_id)
            .cloned();
        let available = match cached {
            Some(a) => a,
            None => {
                let pool = &self.pools[loc.pool];
                let mut avail: CounterSets = pool
                    .counter_sets
                    .iter()
                    .map(|(k, v)| (k.clone(), v.iter().map(|(n, q)| (n.clone(), *q)).collect()))
                    .collect();
                for slice in pool.targeting.iter().chain(pool.not_targeting.iter()) {
                    for d in &slice.spec.devices {
                        let id = DeviceId {
                            driver: Arc::from(slice.spec.driver.as_str()),
                            pool: Arc::from(slice.spec.pool.name.as_str()),
                            device: Arc::from(d.name.as_str()),
                        };
                        if !self.shared.allocated.is_allocated(&id) {
                            continue;
                        }
                        for c in &d.consumes_counters {
                            if let Some(set) = avail.get_mut(&c.counter_set) {
                                for (name, q) in &c.counters {
                                    if let Some(v) = set.get_mut(name) {
                                        *v -= q.value.nanos;
                                    }
                                }
                            }
                        }
                    }
                }
                self.shared
                    .available_counters
                    .lock()
                    .expect("counter cache lock")
                    .insert(pool_id.clone(), avail.clone());
                avail
            }
        };
        let consumed = self.consumed_counters.entry(pool_id.clone()).or_default();
        for c in &device.consumes_counters {
            let set = consumed.entry(c.counter_set.clone()).or_default();
            for (name, q) in &c.counters {
                *set.entry(name.clone()).or_insert(0) += q.value.nanos;
            }
        }
        for (set_name, counters) in &available {
            let used = consumed.get(set_name);
            for (name, avail) in counters {
                let u = used.and_then(|m| m.get(name)).copied().unwrap_or(0);
                if *avail < u {
                    self.deallocate_counters(loc, device);
                    return false;
                }
            }
        }
        true
    }

    fn deallocate_counters(&mut self, loc: Loc, device: &Device) {
        let pool_id = self.pools[loc.pool].id.clone();
        if let Some(consumed) = self.consumed_counters.get_mut(&pool_id) {
            for c in &device.consumes_counters {
                if let Some(set) = consumed.get_mut(&c.counter_set) {
                    for (name, q) in &c.counters {
                        if let Some(v) = set.get_mut(name) {
                            *v -= q.value.nanos;
                        }
                    }
                }
            }
        }
    }

    // ---- results ---------------------------------------------------------------------------

    fn results(&self) -> Result<Vec<Json>, AllocError> {
        let mut out = Vec::with_capacity(self.claims.len());
        for (ci, claim) in self.claims.iter().enumerate() {
            let mut results = Vec::new();
            for r in &self.result[ci] {
                let (_, device) = self.device(r.loc);
                let mut m = Map::new();
                m.insert("request".into(), json!(r.request_name()));
                m.insert("driver".into(), json!(&*r.id.driver));
                m.insert("pool".into(), json!(&*r.id.pool));
                m.insert("device".into(), json!(&*r.id.device));
                if let Some(a) = r.admin_access {
                    m.insert("adminAccess".into(), json!(a));
                }
                if let Some(t) = self.lookup_tolerations(claim, r) {
                    m.insert("tolerations".into(), Json::Array(t.clone()));
                }
                if let Some(s) = &r.share_id {
                    m.insert("shareID".into(), json!(s));
                }
                if let Some(c) = &r.consumed {
                    let cm: Map<String, Json> =
                        c.iter().map(|(k, q)| (k.clone(), json!(q.text))).collect();
                    m.insert("consumedCapacity".into(), Json::Object(cm));
                }
                if let Some(b) = device.binding_conditions.as_ref().filter(|b| !b.is_empty()) {
                    m.insert("bindingConditions".into(), json!(b));
                }
                if let Some(b) = device
                    .binding_failure_conditions
                    .as_ref()
                    .filter(|b| !b.is_empty())
                {
                    m.insert("bindingFailureConditions".into(), json!(b));
                }
                results.push(Json::Object(m));
            }
            let config = self.configs(ci, claim);
            let mut devices = Map::new();
            devices.insert("results".into(), Json::Array(results));
            if !config.is_empty() {
                devices.insert("config".into(), Json::Array(config));
            }
            let mut alloc = Map::new();
            alloc.insert("devices".into(), Json::Object(devices));
            let selector = self.node_selector(ci).map_err(|e| {
                AllocError::Fatal(format!(
                    "create NodeSelector for claim {}: {e}",
                    claim.metadata.name
                ))
            })?;
            if let Some(s) = selector {
                alloc.insert("nodeSelector".into(), s);
            }
            out.push(Json::Object(alloc));
        }
        Ok(out)
    }

    fn lookup_tolerations<'c>(
        &self,
        claim: &'c ResourceClaim,
        r: &DeviceResult,
    ) -> Option<&'c Vec<Json>> {
        let name = if r.parent.is_empty() {
            &r.request
        } else {
            &r.parent
        };
        let request = claim
            .spec
            .devices
            .requests
            .iter()
            .find(|q| &q.name == name)?;
        if r.parent.is_empty() {
            return request.exactly.as_ref()?.tolerations.as_ref();
        }
        request
            .first_available
            .iter()
            .find(|s| s.name == r.request)?
            .tolerations
            .as_ref()
    }

    fn configs(&self, ci: usize, claim: &ResourceClaim) -> Vec<Json> {
        let mut config: Vec<Map<String, Json>> = Vec::new();
        let mut class_ranges: HashMap<String, (usize, usize)> = HashMap::new();
        for ri in 0..claim.spec.devices.requests.len() {
            let mut key = ReqKey {
                claim: ci,
                request: ri,
                sub: 0,
            };
            let mut data = &self.request_data[&key];
            if data.parent.is_some() {
                key.sub = data.selected_sub;
                data = &self.request_data[&key];
            }
            let Some(class) = &data.class else { continue };
            if let Some(&(start, end)) = class_ranges.get(&class.metadata.name) {
                for c in &mut config[start..end] {
                    if let Some(Json::Array(reqs)) = c.get_mut("requests") {
                        reqs.push(json!(data.request_name()));
                    }
                }
                continue;
            }
            let start = config.len();
            for c in &class.spec.config {
                let mut m = c.clone();
                m.remove("requests");
                m.insert("source".into(), json!("FromClass"));
                m.insert("requests".into(), json!([data.request_name()]));
                config.push(m);
            }
            class_ranges.insert(class.metadata.name.clone(), (start, config.len()));
        }
        for c in &claim.spec.devices.config {
            let requests: Vec<String> = c
                .get("requests")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let entry = || {
                let mut m = c.clone();
                m.insert("source".into(), json!("FromClaim"));
                m
            };
            if requests.is_empty() {
                config.push(entry());
                continue;
            }
            for (ri, request) in claim.spec.devices.requests.iter().enumerate() {
                if requests.contains(&request.name) {
                    config.push(entry());
                    continue;
                }
                let data = &self.request_data[&ReqKey {
                    claim: ci,
                    request: ri,
                    sub: 0,
                }];
                if data.parent.is_none() {
                    continue;
                }
                let s = &request.first_available[data.selected_sub];
                if requests.contains(&format!("{}/{}", request.name, s.name)) {
                    config.push(entry());
                }
            }
        }
        config.into_iter().map(Json::Object).collect()
    }

    fn node_selector(&self, ci: usize) -> Result<Option<Json>, String> {
        let mut term = NodeSelectorTerm::default();
        for r in &self.result[ci] {
            let (slice, device) = self.device(r.loc);
            let (name, selector) = if slice.spec.per_device_node_selection.unwrap_or(false) {
                (device.node_name.as_ref(), device.node_selector.as_ref())
            } else {
                (
                    slice.spec.node_name.as_ref(),
                    slice.spec.node_selector.as_ref(),
                )
            };
            if name.is_some() || device.binds_to_node.unwrap_or(false) {
                return Ok(Some(json!({"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [self.node.name]}
                ]}]})));
            }
            if let Some(sel) = selector {
                match sel.terms.len() {
                    0 => {}
                    1 => {
                        add_requirements(&sel.terms[0].match_fields, &mut term.match_fields);
                        add_requirements(
                            &sel.terms[0].match_expressions,
                            &mut term.match_expressions,
                        );
                    }
                    n => {
                        return Err(format!(
                            "unsupported ResourceSlice.NodeSelector with {n} terms"
                        ))
                    }
                }
            }
        }
        if term.match_fields.is_empty() && term.match_expressions.is_empty() {
            return Ok(None);
        }
        let reqs = |v: &Vec<NodeSelectorRequirement>| -> Vec<Json> {
            v.iter()
                .map(|r| {
                    let mut m = Map::new();
                    m.insert("key".into(), json!(r.key));
                    m.insert("operator".into(), json!(r.operator));
                    if !r.values.is_empty() {
                        m.insert("values".into(), json!(r.values));
                    }
                    Json::Object(m)
                })
                .collect()
        };
        let mut t = Map::new();
        if !term.match_expressions.is_empty() {
            t.insert(
                "matchExpressions".into(),
                Json::Array(reqs(&term.match_expressions)),
            );
        }
        if !term.match_fields.is_empty() {
            t.insert("matchFields".into(), Json::Array(reqs(&term.match_fields)));
        }
        Ok(Some(json!({"nodeSelectorTerms": [Json::Object(t)]})))
    }
}

fn add_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for r in from {
        let values: HashSet<&String> = r.values.iter().collect();
        let present = to.iter().any(|e| {
            e.key == r.key
                && e.operator == r.operator
                && e.values.iter().collect::<HashSet<_>>() == values
        });
        if !present {
            to.push(r.clone());
        }
    }
}

fn exact_or_default(r: &DeviceRequest) -> Req<'_> {
    Req {
        name: &r.name,
        class_name: "",
        mode: "ExactCount",
        count: 1,
        admin_access: None,
        selectors: &[],
        tolerations: None,
        capacity: None,
    }
}
