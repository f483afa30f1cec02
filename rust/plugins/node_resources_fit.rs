//! NodeResourcesFit: Filter on free resources, Score by a scoring strategy.
//!
//! Filter (upstream `fitsRequest`): the pod count first ("Too many pods"), then, unless
//! the pod requests nothing, cpu, memory, ephemeral-storage and every scalar resource the
//! pod requests, each failing resource adding its own reason ("Insufficient cpu").
//! Extended resources listed in `ignoredResources`, or whose domain prefix is in
//! `ignoredResourceGroups`, are not checked. With DRAExtendedResource (beta, on in
//! v1.36) a scalar request whose name some DeviceClass maps to
//! (`Snapshot::dra_extended`) is not checked on a node whose allocatable has none of it:
//! DynamicResources allocates devices for it there (upstream
//! `shouldDelegateResourceToDRA`), and Score takes, on such a node, the number of
//! devices the class selects there as allocatable and the allocated ones as requested
//! (upstream `calculateDRAResourceTotals`, counted by the attempt's DynamicResources
//! Filter: `ScoreSource::Dra`).
//!
//! Score (upstream `resourceAllocationScorer`): per configured resource, allocatable and
//! requested-after-placement, where cpu and memory use the *non-zero* requests (100m/200Mi
//! for containers without requests); a scalar resource the pod does not request, or that
//! the node does not have, is left out. The strategy then combines them:
//! LeastAllocated `(cap - req) * 100 / cap`, MostAllocated `min(req, cap) * 100 / cap`,
//! RequestedToCapacityRatio a broken-linear function of utilization; each as a weighted
//! average over the resources that were not left out.

use ahash::AHashSet;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, err, get};
use crate::pod::CompiledPod;
use crate::snapshot::resources::{is_extended_resource_name, CPU, EPHEMERAL_STORAGE, MEMORY, PODS};
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeResourcesFit";
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
pub const MAX_NODE_SCORE: i64 = 100;
const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// Shape points `(utilization 0..=100, score 0..=100)` with scores already scaled
    /// from the config's 0..=10 range.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

#[derive(Clone, Debug)]
pub struct FitArgs {
    pub ignored_resources: AHashSet<String>,
    pub ignored_resource_groups: AHashSet<String>,
    pub strategy: Strategy,
    pub resources: Vec<(String, i64)>,
}

impl Default for FitArgs {
    fn default() -> Self {
        FitArgs {
            ignored_resources: AHashSet::new(),
            ignored_resource_groups: AHashSet::new(),
            strategy: Strategy::LeastAllocated,
            resources: vec![("cpu".into(), 1), ("memory".into(), 1)],
        }
    }
}

impl FitArgs {
    /// Read `NodeResourcesFitArgs` in upstream's JSON shape.
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<FitArgs> {
        let path = "NodeResourcesFitArgs";
        let mut a = FitArgs {
            ignored_resources: args::str_list(d, "ignoredResources", path)?
                .into_iter()
                .collect(),
            ignored_resource_groups: args::str_list(d, "ignoredResourceGroups", path)?
                .into_iter()
                .collect(),
            ..FitArgs::default()
        };
        if let Some(s) = get(d, "scoringStrategy")? {
            let spath = format!("{path}.scoringStrategy");
            let s = args::as_dict(&s, &spath)?;
            let (resources, strategy) = read_strategy(&s, &spath)?;
            a.resources = resources;
            a.strategy = strategy;
        }
        Ok(a)
    }
}

/// Read a `ScoringStrategy`-shaped dict: `resources` and, for NodeResourcesFit, `type`.
pub fn read_resources(s: &Bound<'_, PyDict>, spath: &str) -> PyResult<Vec<(String, i64)>> {
    let mut resources = Vec::new();
    if let Some(list) = get(s, "resources")? {
        let list = args::as_list(&list, &format!("{spath}.resources"))?;
        for (i, item) in list.iter().enumerate() {
            let ipath = format!("{spath}.resources[{i}]");
            let item = args::as_dict(&item, &ipath)?;
            let name = match get(&item, "name")? {
                Some(n) => args::as_str(&n, &format!("{ipath}.name"))?,
                None => return Err(err(&format!("{ipath}.name"), "is required")),
            };
            let weight = match get(&item, "weight")? {
                Some(w) => args::as_i64(&w, &format!("{ipath}.weight"))?,
                None => 1,
            };
            resources.push((name, weight));
        }
    } else {
        resources = vec![("cpu".into(), 1), ("memory".into(), 1)];
    }
    Ok(resources)
}

fn read_strategy(s: &Bound<'_, PyDict>, spath: &str) -> PyResult<(Vec<(String, i64)>, Strategy)> {
    let resources = read_resources(s, spath)?;
    let kind = match get(s, "type")? {
        Some(t) => args::as_str(&t, &format!("{spath}.type"))?,
        None => "LeastAllocated".to_string(),
    };
    let strategy = match kind.as_str() {
        "LeastAllocated" => Strategy::LeastAllocated,
        "MostAllocated" => Strategy::MostAllocated,
        "RequestedToCapacityRatio" => {
            let rpath = format!("{spath}.requestedToCapacityRatio");
            let r = get(s, "requestedToCapacityRatio")?
                .ok_or_else(|| err(&rpath, "is required for RequestedToCapacityRatio"))?;
            let r = args::as_dict(&r, &rpath)?;
            let shape =
                get(&r, "shape")?.ok_or_else(|| err(&format!("{rpath}.shape"), "is required"))?;
            let shape = args::as_list(&shape, &format!("{rpath}.shape"))?;
            let mut points = Vec::new();
            for (i, p) in shape.iter().enumerate() {
                let ppath = format!("{rpath}.shape[{i}]");
                let p = args::as_dict(&p, &ppath)?;
                let u = get(&p, "utilization")?
                    .map_or(Ok(0), |v| args::as_i64(&v, &format!("{ppath}.utilization")))?;
                let sc = get(&p, "score")?
                    .map_or(Ok(0), |v| args::as_i64(&v, &format!("{ppath}.score")))?;
                points.push((u, sc * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)));
            }
            if points.is_empty() {
                return Err(err(
                    &format!("{rpath}.shape"),
                    "must have at least one point",
                ));
            }
            Strategy::RequestedToCapacityRatio(points)
        }
        other => {
            return Err(err(
                &format!("{spath}.type"),
                format!("unsupported scoring strategy {other:?}"),
            ))
        }
    };
    Ok((resources, strategy))
}

/// How a configured scoring resource is read from a node.
#[derive(Clone, Copy, Debug)]
pub enum ScoreSource {
    /// Non-zero (or, with `use_requested`, plain) requested cpu.
    Cpu,
    Memory,
    /// A plain column: ephemeral storage or a scalar resource.
    Column(usize),
    /// A scalar resource some DeviceClass maps to (DRAExtendedResource): the column
    /// where the node's allocatable lists it, else DynamicResources' device totals for
    /// `ScoreState::dra_names[.1]`.
    Dra(usize, usize),
    /// Left out of the score on every node.
    Skip,
}

/// Per-pod state for the Filter, computed once per attempt.
#[derive(Clone, Debug, Default)]
pub struct FilterState {
    /// `(column, amount)` of the checked requests, in upstream's check order.
    pub checks: Vec<(usize, i64)>,
    pub requests_nothing: bool,
    /// Per entry of `checks` (empty when none is): the resource is mapped to a
    /// DeviceClass, so a node with allocatable 0 leaves it to DynamicResources.
    pub dra: Vec<bool>,
}

impl FilterState {
    /// Whether check `j` is left to DynamicResources on a node with `alloc` of it.
    #[inline]
    fn delegated(&self, j: usize, alloc: i64) -> bool {
        alloc <= 0 && self.dra.get(j).copied().unwrap_or(false)
    }
}

pub fn prefilter(snap: &mut Snapshot, pod: &CompiledPod, args: &FitArgs) -> FilterState {
    let mut fixed: Vec<(usize, i64)> = Vec::new();
    let mut scalars: Vec<(String, usize, i64)> = Vec::new();
    for (name, amount) in &pod.requests {
        if *amount == 0 {
            continue;
        }
        let col = snap.resource_column(name);
        match col {
            CPU | MEMORY | EPHEMERAL_STORAGE => fixed.push((col, *amount)),
            PODS => {}
            _ => {
                if is_extended_resource_name(name) {
                    let group = name.split('/').next().unwrap_or("");
                    if args.ignored_resources.contains(name)
                        || args.ignored_resource_groups.contains(group)
                    {
                        continue;
                    }
                }
                scalars.push((name.clone(), col, *amount));
            }
        }
    }
    let requests_nothing = fixed.is_empty() && scalars.is_empty();
    fixed.sort_by_key(|&(c, _)| c);
    scalars.sort();
    let mut dra = Vec::new();
    if !snap.dra_extended.is_empty()
        && scalars
            .iter()
            .any(|(n, _, _)| snap.dra_extended.contains(n))
    {
        dra = vec![false; fixed.len()];
        dra.extend(
            scalars
                .iter()
                .map(|(n, _, _)| snap.dra_extended.contains(n)),
        );
    }
    fixed.extend(scalars.into_iter().map(|(_, c, a)| (c, a)));
    FilterState {
        checks: fixed,
        requests_nothing,
        dra,
    }
}

/// Resource columns a `Freed` holds without a heap allocation.
const FREED_INLINE: usize = 6;

/// Room freed on a node by pods taken off it hypothetically: preemption's dry run
/// evaluates a node "without these victims" without touching the snapshot. The amounts
/// of up to `FREED_INLINE` columns live inline (pods rarely request more resources).
#[derive(Clone, Debug, Default)]
pub struct Freed {
    pub pods: i64,
    len: usize,
    inline: [(usize, i64); FREED_INLINE],
    spill: Vec<(usize, i64)>,
}

/// Nothing freed. A `static`, not a `const`: a type with a destructor is not promoted,
/// so `&` of a const would build a fresh value on every call of the hot filter path.
pub static NOTHING_FREED: Freed = Freed {
    pods: 0,
    len: 0,
    inline: [(0, 0); FREED_INLINE],
    spill: Vec::new(),
};

impl Freed {
    /// Nothing freed (or added) at all.
    #[inline]
    pub fn is_nothing(&self) -> bool {
        self.pods == 0 && self.len == 0 && self.spill.is_empty()
    }

    #[inline]
    pub fn of(&self, col: usize) -> i64 {
        if let Some(&(_, a)) = self.inline[..self.len].iter().find(|(c, _)| *c == col) {
            return a;
        }
        self.spill
            .iter()
            .find(|(c, _)| *c == col)
            .map_or(0, |&(_, a)| a)
    }

    pub fn clear(&mut self) {
        self.pods = 0;
        self.len = 0;
        self.spill.clear();
    }

    /// Count one pod with these requests as freed (`sign` 1) or back on the node (-1).
    pub fn add(&mut self, requests: &[(usize, i64)], sign: i64) {
        self.pods += sign;
        for &(col, amount) in requests {
            if let Some(e) = self.inline[..self.len].iter_mut().find(|(c, _)| *c == col) {
                e.1 += sign * amount;
            } else if let Some(e) = self.spill.iter_mut().find(|(c, _)| *c == col) {
                e.1 += sign * amount;
            } else if self.len < FREED_INLINE {
                self.inline[self.len] = (col, sign * amount);
                self.len += 1;
            } else {
                self.spill.push((col, sign * amount));
            }
        }
    }
}

/// Filter: `None` when the node fits, else `(unresolvable, bitmask)`: bit 0 "Too many
/// pods", bit `1 + j` the `j`-th entry of `state.checks`. The rejection is
/// UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable
/// (evicting pods cannot help); "Too many pods" alone never is. The node is judged with
/// `freed` taken off its requested amounts and `added` (e.g. nominated pods) put on.
#[inline]
pub fn filter(
    snap: &Snapshot,
    st: &FilterState,
    slot: u32,
    freed: &Freed,
    added: &Freed,
) -> Option<(bool, u64)> {
    if freed.is_nothing() && added.is_nothing() {
        return filter_as_is(snap, st, slot);
    }
    let i = slot as usize;
    let mut mask = 0u64;
    let mut unresolvable = false;
    if snap.requested[PODS][i] - freed.pods + added.pods + 1 > snap.allocatable[PODS][i] {
        mask |= 1;
    }
    if !st.requests_nothing {
        for (j, &(col, amount)) in st.checks.iter().enumerate() {
            let alloc = snap.allocatable[col][i];
            if st.delegated(j, alloc) {
                continue;
            }
            let requested = snap.requested[col][i] - freed.of(col) + added.of(col);
            if amount > alloc - requested {
                mask |= 1u64 << (j + 1).min(63);
                unresolvable |= amount > alloc;
            }
        }
    }
    if mask == 0 {
        None
    } else {
        Some((unresolvable, mask))
    }
}

/// `filter` of the node as it is: the hot path of every scheduling attempt.
#[inline]
fn filter_as_is(snap: &Snapshot, st: &FilterState, slot: u32) -> Option<(bool, u64)> {
    let i = slot as usize;
    let mut mask = 0u64;
    let mut unresolvable = false;
    if snap.requested[PODS][i] + 1 > snap.allocatable[PODS][i] {
        mask |= 1;
    }
    if !st.requests_nothing {
        for (j, &(col, amount)) in st.checks.iter().enumerate() {
            let alloc = snap.allocatable[col][i];
            if st.delegated(j, alloc) {
                continue;
            }
            if amount > alloc - snap.requested[col][i] {
                mask |= 1u64 << (j + 1).min(63);
                unresolvable |= amount > alloc;
            }
        }
    }
    if mask == 0 {
        None
    } else {
        Some((unresolvable, mask))
    }
}

/// The reasons a Filter bitmask stands for, in upstream's order.
pub fn reasons(snap: &Snapshot, st: &FilterState, mask: u64) -> Vec<String> {
    let mut out = Vec::new();
    if mask & 1 != 0 {
        out.push(REASON_TOO_MANY_PODS.to_string());
    }
    for (j, &(col, _)) in st.checks.iter().enumerate() {
        if mask & (1u64 << (j + 1).min(63)) != 0 {
            out.push(format!("Insufficient {}", snap.resources.name(col)));
        }
    }
    out
}

/// Whether `name` is a scalar resource (extended, hugepages, prefixed native or
/// attachable volumes), as `schedutil.IsScalarResourceName`.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// Per-pod state for a resource-allocation scorer (NodeResourcesFit or
/// NodeResourcesBalancedAllocation).
#[derive(Clone, Debug, Default)]
pub struct ScoreState {
    /// `(source, pod request, weight)` per configured resource.
    pub resources: Vec<(ScoreSource, i64, i64)>,
    pub use_requested: bool,
    /// The DRA-backed resources of `ScoreSource::Dra`, and the attempt's
    /// DynamicResources Filter that counts their devices per node.
    pub dra_names: Vec<String>,
    pub dra: Option<std::sync::Arc<crate::plugins::dynamic_resources::DraFilter>>,
}

pub fn prescore(
    snap: &mut Snapshot,
    pod: &CompiledPod,
    resources: &[(String, i64)],
    use_requested: bool,
) -> ScoreState {
    let mut out = Vec::with_capacity(resources.len());
    let mut dra_names: Vec<String> = Vec::new();
    // NodeResourcesFit's Score (use_requested false) ignores pod-level requests: upstream
    // NewFit builds its resourceAllocationScorer without enablePodLevelResources (only
    // BalancedAllocation's scorer gets it), so calculatePodResourceRequest passes
    // SkipPodLevelResources. This looks like an upstream bug (Filter and
    // BalancedAllocation do use them); ksched mirrors it.
    let fit_score = pod.fit_score_requests.as_ref().filter(|_| !use_requested);
    let request = |name: &str| match fit_score {
        Some(reqs) => reqs.iter().find(|(n, _)| n == name).map_or(0, |&(_, v)| v),
        None => pod.request(name),
    };
    for (name, weight) in resources {
        let (source, request) = match name.as_str() {
            "cpu" => (
                ScoreSource::Cpu,
                if use_requested {
                    pod.request("cpu")
                } else if fit_score.is_some() {
                    request("cpu")
                } else {
                    pod.non_zero_cpu
                },
            ),
            "memory" => (
                ScoreSource::Memory,
                if use_requested {
                    pod.request("memory")
                } else if fit_score.is_some() {
                    request("memory")
                } else {
                    pod.non_zero_memory
                },
            ),
            "ephemeral-storage" => (
                ScoreSource::Column(EPHEMERAL_STORAGE),
                request("ephemeral-storage"),
            ),
            other => {
                let request = request(other);
                if request == 0 && is_scalar_resource_name(other) {
                    (ScoreSource::Skip, 0)
                } else if is_scalar_resource_name(other) && snap.dra_extended.contains(other) {
                    dra_names.push(other.to_string());
                    let col = snap.resource_column(other);
                    (ScoreSource::Dra(col, dra_names.len() - 1), request)
                } else if is_scalar_resource_name(other) {
                    (ScoreSource::Column(snap.resource_column(other)), request)
                } else {
                    (ScoreSource::Skip, 0)
                }
            }
        };
        out.push((source, request, *weight));
    }
    ScoreState {
        resources: out,
        use_requested,
        dra_names,
        dra: None,
    }
}

/// Most configured scoring resources a node is scored on without a heap allocation.
pub const INLINE_RESOURCES: usize = 8;

/// Score `slot` with `f` over its `(allocatable, requested, weight)` triples, using a
/// stack buffer in the common case (per-node allocations dominate otherwise).
#[inline]
pub fn score_with(
    snap: &Snapshot,
    st: &ScoreState,
    slot: u32,
    f: impl Fn(&[(i64, i64, i64)]) -> i64,
) -> i64 {
    if st.resources.len() <= INLINE_RESOURCES {
        let mut buf = [(0i64, 0i64, 0i64); INLINE_RESOURCES];
        let n = fill(snap, st, slot, &mut buf);
        f(&buf[..n])
    } else {
        let mut buf = vec![(0i64, 0i64, 0i64); st.resources.len()];
        let n = fill(snap, st, slot, &mut buf);
        f(&buf[..n])
    }
}

/// Write `(allocatable, requested after placing the pod, weight)` of each configured
/// resource on `slot` into `out`; allocatable 0 means "left out". Returns the count.
#[inline]
fn fill(snap: &Snapshot, st: &ScoreState, slot: u32, out: &mut [(i64, i64, i64)]) -> usize {
    let i = slot as usize;
    for (k, &(source, request, weight)) in st.resources.iter().enumerate() {
        let (alloc, req) = match source {
            ScoreSource::Cpu => (
                snap.allocatable[CPU][i],
                if st.use_requested {
                    snap.requested[CPU][i]
                } else {
                    snap.non_zero_cpu[i]
                } + request,
            ),
            ScoreSource::Memory => (
                snap.allocatable[MEMORY][i],
                if st.use_requested {
                    snap.requested[MEMORY][i]
                } else {
                    snap.non_zero_memory[i]
                } + request,
            ),
            ScoreSource::Column(c) => (snap.allocatable[c][i], snap.requested[c][i] + request),
            ScoreSource::Dra(c, k) => match snap.allocatable[c][i] {
                0 => st
                    .dra
                    .as_ref()
                    .and_then(|d| d.extended_totals(&st.dra_names[k], snap, slot))
                    .filter(|&(cap, _)| cap > 0)
                    .map_or((0, 0), |(cap, used)| (cap, used + request)),
                alloc => (alloc, snap.requested[c][i] + request),
            },
            ScoreSource::Skip => (0, 0),
        };
        out[k] = if alloc == 0 {
            (0, 0, weight)
        } else {
            (alloc, req, weight)
        };
    }
    st.resources.len()
}

fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

fn most_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

pub fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s;
            }
            let (u0, s0) = shape[i - 1];
            return s0 + (s - s0) * (p - u0) / (u - u0);
        }
    }
    shape[shape.len() - 1].1
}

/// Score of one node under `strategy`, from `(allocatable, requested, weight)` triples.
pub fn strategy_score(strategy: &Strategy, res: &[(i64, i64, i64)]) -> i64 {
    let mut node_score = 0i64;
    let mut weight_sum = 0i64;
    match strategy {
        Strategy::LeastAllocated | Strategy::MostAllocated => {
            for &(alloc, req, weight) in res {
                if alloc == 0 {
                    continue;
                }
                let s = if *strategy == Strategy::LeastAllocated {
                    least_requested(req, alloc)
                } else {
                    most_requested(req, alloc)
                };
                node_score += s * weight;
                weight_sum += weight;
            }
            if weight_sum == 0 {
                0
            } else {
                node_score / weight_sum
            }
        }
        Strategy::RequestedToCapacityRatio(shape) => {
            for &(alloc, req, weight) in res {
                if alloc == 0 {
                    continue;
                }
                let s = if req > alloc {
                    broken_linear(shape, MAX_UTILIZATION)
                } else {
                    broken_linear(shape, req * MAX_UTILIZATION / alloc)
                };
                if s > 0 {
                    node_score += s * weight;
                    weight_sum += weight;
                }
            }
            if weight_sum == 0 {
                0
            } else {
                (node_score as f64 / weight_sum as f64).round() as i64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_allocated_weighted_average() {
        // cpu 4000m with 1000m requested → 75; memory half used → 50; average 62.
        let res = [(4000, 1000, 1), (8 << 30, 4 << 30, 1)];
        assert_eq!(strategy_score(&Strategy::LeastAllocated, &res), 62);
    }

    #[test]
    fn most_allocated_clamps_overcommit() {
        let res = [(1000, 3000, 1)];
        assert_eq!(strategy_score(&Strategy::MostAllocated, &res), 100);
    }

    #[test]
    fn resources_left_out_do_not_count() {
        let res = [(4000, 2000, 1), (0, 0, 5)];
        assert_eq!(strategy_score(&Strategy::LeastAllocated, &res), 50);
        assert_eq!(strategy_score(&Strategy::LeastAllocated, &[]), 0);
    }

    #[test]
    fn requested_to_capacity_ratio_interpolates() {
        let shape = vec![(0, 0), (100, 100)];
        let res = [(1000, 250, 1)];
        assert_eq!(
            strategy_score(&Strategy::RequestedToCapacityRatio(shape), &res),
            25
        );
    }
}
