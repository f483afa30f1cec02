//! Pod volumes as the volume plugins' kernels see them, and the per-attempt requests the
//! plugins' Python PreFilters hand to those kernels.
//!
//! Two kinds of data, kept apart on purpose:
//!
//! * [`PodVolumeSpec`] — what the pod's own `spec.volumes` says, fixed for the pod
//!   object: the claims it names, the in-tree disks VolumeRestrictions compares
//!   (GCE PD, AWS EBS, iSCSI, RBD), and the in-tree inline volumes NodeVolumeLimits
//!   counts as the CSI volumes they migrate to. It is part of the compiled pod, so every
//!   pod accounted on a node carries it ([`RecVolumes`], interned).
//! * the requests ([`VolumeRestrictionsRequest`], [`VolumeZoneRequest`],
//!   [`NodeVolumeLimitsRequest`], [`VolumeBindingRequest`]) — what the plugins' PreFilters
//!   found by looking API objects up (PVCs, PVs, StorageClasses, CSIStorageCapacities)
//!   for one scheduling attempt. Python builds them, once per attempt, and attaches them
//!   to the compiled pod (`CompiledPod.with_requests`); the kernels read them. A request
//!   may carry its plugin's PreFilter verdict (`reject`), which the kernels apply in
//!   the profile's plugin order, as upstream's PreFilter loop stops at the first
//!   rejection.
//!
//! Everything arrives as plain Python values (lists, tuples, dicts in the API's JSON
//! shape); malformed input is a `ValueError` naming the field.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::args::{self, get};
use crate::selector::{LabelSelectorSpec, NodeSelectorTermSpec};
use crate::snapshot::intern::Interner;

/// An in-tree disk VolumeRestrictions checks for conflicts on a node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Disk {
    /// `gcePersistentDisk`: conflicts on the same PD unless both mount it read-only.
    GcePd { pd_name: String, read_only: bool },
    /// `awsElasticBlockStore`: any two mounts of one volume ID conflict.
    AwsEbs { volume_id: String },
    /// `iscsi`: conflicts on the same IQN unless both mount it read-only.
    Iscsi { iqn: String, read_only: bool },
    /// `rbd`: conflicts when monitors overlap and pool and image are equal, unless both
    /// mount it read-only.
    Rbd {
        monitors: Vec<String>,
        pool: String,
        image: String,
        read_only: bool,
    },
}

/// A [`Disk`] with interned strings, as accounted pods keep it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskRec {
    GcePd {
        pd_name: u32,
        read_only: bool,
    },
    AwsEbs {
        volume_id: u32,
    },
    Iscsi {
        iqn: u32,
        read_only: bool,
    },
    Rbd {
        monitors: Vec<u32>,
        pool: u32,
        image: u32,
        read_only: bool,
    },
}

impl Disk {
    pub fn intern(&self, i: &mut Interner) -> DiskRec {
        match self {
            Disk::GcePd { pd_name, read_only } => DiskRec::GcePd {
                pd_name: i.intern(pd_name),
                read_only: *read_only,
            },
            Disk::AwsEbs { volume_id } => DiskRec::AwsEbs {
                volume_id: i.intern(volume_id),
            },
            Disk::Iscsi { iqn, read_only } => DiskRec::Iscsi {
                iqn: i.intern(iqn),
                read_only: *read_only,
            },
            Disk::Rbd {
                monitors,
                pool,
                image,
                read_only,
            } => DiskRec::Rbd {
                monitors: monitors.iter().map(|m| i.intern(m)).collect(),
                pool: i.intern(pool),
                image: i.intern(image),
                read_only: *read_only,
            },
        }
    }
}

impl DiskRec {
    /// Upstream `isVolumeConflict` for one pair of volumes.
    pub fn conflicts(&self, other: &DiskRec) -> bool {
        match (self, other) {
            (
                DiskRec::GcePd {
                    pd_name: a,
                    read_only: ra,
                },
                DiskRec::GcePd {
                    pd_name: b,
                    read_only: rb,
                },
            ) => a == b && !(*ra && *rb),
            (DiskRec::AwsEbs { volume_id: a }, DiskRec::AwsEbs { volume_id: b }) => a == b,
            (
                DiskRec::Iscsi {
                    iqn: a,
                    read_only: ra,
                },
                DiskRec::Iscsi {
                    iqn: b,
                    read_only: rb,
                },
            ) => a == b && !(*ra && *rb),
            (
                DiskRec::Rbd {
                    monitors: ma,
                    pool: pa,
                    image: ia,
                    read_only: ra,
                },
                DiskRec::Rbd {
                    monitors: mb,
                    pool: pb,
                    image: ib,
                    read_only: rb,
                },
            ) => ma.iter().any(|m| mb.contains(m)) && pa == pb && ia == ib && !(*ra && *rb),
            _ => false,
        }
    }
}

/// What a pod's `spec.volumes` says that the volume kernels read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodVolumeSpec {
    /// `persistentVolumeClaim.claimName` of every PVC volume, in spec order.
    pub claims: Vec<String>,
    /// The claims NodeVolumeLimits looks up for this pod: the PVC volumes' claims and
    /// the generic ephemeral volumes' claims (`<pod>-<volume>`), in spec order.
    pub limit_claims: Vec<String>,
    pub disks: Vec<Disk>,
    /// `(CSI driver, volume handle)` of the in-tree inline volumes that migrate to CSI
    /// (counted against the driver's attach limit on nodes that have a CSINode).
    pub inline: Vec<(String, String)>,
}

impl PodVolumeSpec {
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
            && self.limit_claims.is_empty()
            && self.disks.is_empty()
            && self.inline.is_empty()
    }

    /// Parse `{"claims": [...], "limit_claims": [...], "disks": [...], "inline": [...]}`;
    /// a disk is `(kind, key, monitors, pool, image, read_only)` with kind `gce` (key:
    /// PD name), `ebs` (key: volume ID), `iscsi` (key: IQN) or `rbd` (monitors, pool,
    /// image).
    pub fn parse(v: &Bound<'_, PyAny>, path: &str) -> PyResult<PodVolumeSpec> {
        let d = args::as_dict(v, path)?;
        let mut s = PodVolumeSpec {
            claims: args::str_list(&d, "claims", path)?,
            limit_claims: args::str_list(&d, "limit_claims", path)?,
            ..PodVolumeSpec::default()
        };
        if let Some(disks) = get(&d, "disks")? {
            let disks = args::as_list(&disks, &format!("{path}.disks"))?;
            for (i, disk) in disks.iter().enumerate() {
                let dpath = format!("{path}.disks[{i}]");
                let (kind, key, monitors, pool, image, read_only): (
                    String,
                    String,
                    Vec<String>,
                    String,
                    String,
                    bool,
                ) = disk.extract().map_err(|_| {
                    args::err(
                        &dpath,
                        "must be (kind, key, monitors, pool, image, readOnly)",
                    )
                })?;
                s.disks.push(match kind.as_str() {
                    "gce" => Disk::GcePd {
                        pd_name: key,
                        read_only,
                    },
                    "ebs" => Disk::AwsEbs { volume_id: key },
                    "iscsi" => Disk::Iscsi {
                        iqn: key,
                        read_only,
                    },
                    "rbd" => Disk::Rbd {
                        monitors,
                        pool,
                        image,
                        read_only,
                    },
                    other => {
                        return Err(args::err(
                            &dpath,
                            format!("unknown disk kind {other:?} (gce, ebs, iscsi, rbd)"),
                        ))
                    }
                });
            }
        }
        if let Some(inline) = get(&d, "inline")? {
            s.inline = inline.extract().map_err(|_| {
                args::err(&format!("{path}.inline"), "must be (driver, handle) pairs")
            })?;
        }
        Ok(s)
    }
}

/// A pod's volumes as an accounted pod keeps them (interned).
#[derive(Clone, Debug, Default)]
pub struct RecVolumes {
    /// Claim names of the PVC volumes (VolumeRestrictions' AddPod/RemovePod compare
    /// names only, as upstream does).
    pub claims: Vec<u32>,
    /// `namespace/claim` of the PVC volumes (who uses which claim).
    pub claim_keys: Vec<u32>,
    /// `namespace/claim` of the claims NodeVolumeLimits resolves for this pod.
    pub limit_keys: Vec<u32>,
    pub disks: Vec<DiskRec>,
    /// `(driver, "driver/handle")` of the migrated inline volumes.
    pub inline: Vec<(u32, u32)>,
}

impl RecVolumes {
    pub fn compile(spec: &PodVolumeSpec, namespace: &str, i: &mut Interner) -> RecVolumes {
        RecVolumes {
            claims: spec.claims.iter().map(|c| i.intern(c)).collect(),
            claim_keys: spec
                .claims
                .iter()
                .map(|c| i.intern(&format!("{namespace}/{c}")))
                .collect(),
            limit_keys: spec
                .limit_claims
                .iter()
                .map(|c| i.intern(&format!("{namespace}/{c}")))
                .collect(),
            disks: spec.disks.iter().map(|d| d.intern(i)).collect(),
            inline: spec
                .inline
                .iter()
                .map(|(driver, handle)| (i.intern(driver), i.intern(&unique_name(driver, handle))))
                .collect(),
        }
    }
}

/// Upstream `getVolumeUniqueName`: `driver/handle`.
pub fn unique_name(driver: &str, handle: &str) -> String {
    format!("{driver}/{handle}")
}

/// A plugin's PreFilter verdict that rejects the pod outright.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreFilterReject {
    /// An `Error` status (the attempt fails with an error) rather than
    /// UnschedulableAndUnresolvable.
    pub error: bool,
    pub message: String,
}

fn parse_reject(reject: Option<(String, String)>) -> PyResult<Option<PreFilterReject>> {
    match reject {
        None => Ok(None),
        Some((code, message)) => match code.as_str() {
            "UnschedulableAndUnresolvable" => Ok(Some(PreFilterReject {
                error: false,
                message,
            })),
            "Error" => Ok(Some(PreFilterReject {
                error: true,
                message,
            })),
            other => Err(PyValueError::new_err(format!(
                "reject: code {other:?} must be UnschedulableAndUnresolvable or Error"
            ))),
        },
    }
}

fn reject_tuple(r: &Option<PreFilterReject>) -> Option<(&'static str, String)> {
    r.as_ref().map(|r| {
        (
            if r.error {
                "Error"
            } else {
                "UnschedulableAndUnresolvable"
            },
            r.message.clone(),
        )
    })
}

/// VolumeRestrictions' PreFilter result: the pod's claims with the ReadWriteOncePod
/// access mode (the kernel counts how many of them scheduled pods use).
#[pyclass(frozen, module = "ksched._core")]
#[derive(Clone, Debug)]
pub struct VolumeRestrictionsRequest {
    pub rwop_claims: Vec<String>,
    pub reject: Option<PreFilterReject>,
}

#[pymethods]
impl VolumeRestrictionsRequest {
    #[new]
    #[pyo3(signature = (rwop_claims = Vec::new(), *, reject = None))]
    fn py_new(rwop_claims: Vec<String>, reject: Option<(String, String)>) -> PyResult<Self> {
        Ok(VolumeRestrictionsRequest {
            rwop_claims,
            reject: parse_reject(reject)?,
        })
    }

    /// The PreFilter verdict carried, `(code, message)`.
    #[getter]
    fn reject(&self) -> Option<(&'static str, String)> {
        reject_tuple(&self.reject)
    }

    fn __repr__(&self) -> String {
        format!("VolumeRestrictionsRequest({:?})", self.rwop_claims)
    }
}

/// VolumeZone's PreFilter result: the topology labels of the pod's bound PVs,
/// `(label key, allowed values)`.
#[pyclass(frozen, module = "ksched._core")]
#[derive(Clone, Debug)]
pub struct VolumeZoneRequest {
    pub topologies: Vec<(String, Vec<String>)>,
    pub reject: Option<PreFilterReject>,
}

#[pymethods]
impl VolumeZoneRequest {
    #[new]
    #[pyo3(signature = (topologies = Vec::new(), *, reject = None))]
    fn py_new(
        topologies: Vec<(String, Vec<String>)>,
        reject: Option<(String, String)>,
    ) -> PyResult<Self> {
        Ok(VolumeZoneRequest {
            topologies,
            reject: parse_reject(reject)?,
        })
    }

    /// The PreFilter verdict carried, `(code, message)`.
    #[getter]
    fn reject(&self) -> Option<(&'static str, String)> {
        reject_tuple(&self.reject)
    }

    fn __repr__(&self) -> String {
        format!("VolumeZoneRequest({:?})", self.topologies)
    }
}

/// NodeVolumeLimits' per-pod lookups: the pod's attachable volumes as
/// `(driver, volume handle)`, and the Filter errors met while looking its volumes up,
/// in volume order, as `(needs_csi_node, unresolvable, message)`: the first one that
/// applies to a node is that node's status (an in-tree inline volume is only
/// translated, and so can only fail, on a node that has a CSINode). An unresolvable
/// error is UnschedulableAndUnresolvable (a missing claim), the others are errors.
#[pyclass(frozen, module = "ksched._core")]
#[derive(Clone, Debug)]
pub struct NodeVolumeLimitsRequest {
    pub volumes: Vec<(String, String)>,
    pub errors: Vec<(bool, bool, String)>,
}

#[pymethods]
impl NodeVolumeLimitsRequest {
    #[new]
    #[pyo3(signature = (volumes = Vec::new(), *, errors = Vec::new()))]
    fn py_new(volumes: Vec<(String, String)>, errors: Vec<(bool, bool, String)>) -> Self {
        NodeVolumeLimitsRequest { volumes, errors }
    }

    /// `(driver, volume handle)` of the pod's attachable volumes.
    #[getter]
    fn volumes(&self) -> Vec<(String, String)> {
        self.volumes.clone()
    }

    #[getter]
    fn errors(&self) -> Vec<(bool, bool, String)> {
        self.errors.clone()
    }

    fn __repr__(&self) -> String {
        format!("NodeVolumeLimitsRequest({:?})", self.volumes)
    }
}

/// A PV's node affinity (`spec.nodeAffinity.required`): `None` matches every node.
pub type Affinity = Option<Vec<NodeSelectorTermSpec>>;

fn parse_affinity(v: Option<Bound<'_, PyAny>>, path: &str) -> PyResult<Affinity> {
    match v {
        None => Ok(None),
        Some(v) => Ok(Some(NodeSelectorTermSpec::parse_selector(&v, path)?)),
    }
}

/// A bound claim's PV.
#[derive(Clone, Debug)]
pub struct BoundPv {
    pub affinity: Affinity,
    /// For an in-tree PV whose plugin migrates to CSI: the plugin name and the PV's
    /// affinity once translated (or the translation's error), used on nodes whose
    /// CSINode lists the plugin as migrated.
    pub migrated: Option<(String, Result<Affinity, String>)>,
}

/// A PV a claim may bind to.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Index into [`VolumeBindingRequest::pvs`].
    pub pv: u32,
    pub affinity: Affinity,
}

/// One `matchLabelExpressions` term of a StorageClass's `allowedTopologies`: `None`
/// when the term is empty or invalid (it matches no node).
pub type TopologyTerm = Option<Vec<(String, Vec<String>)>>;

/// Whether and where a claim can be provisioned.
#[derive(Clone, Debug)]
pub enum Provision {
    /// The class has no provisioner (or `kubernetes.io/no-provisioner`).
    Unsupported,
    /// Checking failed (the Filter returns an error).
    Error(String),
    Supported {
        /// `allowedTopologies` (empty: every node).
        topologies: Vec<TopologyTerm>,
        /// `None`: no capacity check (no storage request, or the CSI driver does not
        /// track capacity). Otherwise the CSIStorageCapacities of the class that are
        /// big enough, in lister order: `(index into capacities, nodeTopology)`, a
        /// `None` topology never giving access.
        capacity: Option<Vec<(u32, Option<LabelSelectorSpec>)>>,
    },
}

/// An unbound claim of a WaitForFirstConsumer class.
#[derive(Clone, Debug)]
pub struct DelayClaim {
    /// The claim's `volume.kubernetes.io/selected-node` annotation.
    pub selected_node: Option<String>,
    /// A PV pre-bound to the claim (first in list order), which decides alone.
    pub prebound: Option<Candidate>,
    /// The other PVs that fit the claim whatever the node, smallest first (ties in
    /// list order).
    pub candidates: Vec<Candidate>,
    pub provision: Provision,
    /// `spec.resources.requests.storage` (`Value()`) and `spec.storageClassName`, for
    /// storage capacity scoring.
    pub request: i64,
    pub class: String,
}

/// VolumeBinding's PreFilter result: the pod's claims split as upstream's
/// `GetPodVolumeClaims` does, with the API objects Filter needs.
#[pyclass(frozen, module = "ksched._core")]
#[derive(Clone, Debug)]
pub struct VolumeBindingRequest {
    pub reject: Option<PreFilterReject>,
    /// The bound claims' PVs, in pod order (`None`: the PV does not exist).
    pub bound: Vec<Option<BoundPv>>,
    /// The unbound WaitForFirstConsumer claims, in pod order.
    pub delay: Vec<DelayClaim>,
    /// Indices into `delay` of the claims to match with PVs, in upstream's size order.
    pub match_order: Vec<u32>,
    /// `(name, spec.storageClassName, capacity Value())` of every candidate PV.
    pub pvs: Vec<(String, String, i64)>,
    /// `capacity.Value()` of every CSIStorageCapacity a claim may use.
    pub capacities: Vec<i64>,
}

fn parse_candidate(v: &Bound<'_, PyAny>, path: &str) -> PyResult<Candidate> {
    let d = args::as_dict(v, path)?;
    let pv = match get(&d, "pv")? {
        Some(i) => args::as_i64(&i, &format!("{path}.pv"))?,
        None => return Err(args::err(&format!("{path}.pv"), "is required")),
    };
    Ok(Candidate {
        pv: u32::try_from(pv).map_err(|_| args::err(&format!("{path}.pv"), "out of range"))?,
        affinity: parse_affinity(get(&d, "affinity")?, &format!("{path}.affinity"))?,
    })
}

fn parse_provision(v: &Bound<'_, PyAny>, path: &str) -> PyResult<Provision> {
    let d = args::as_dict(v, path)?;
    if let Some(e) = get(&d, "error")? {
        return Ok(Provision::Error(args::as_str(
            &e,
            &format!("{path}.error"),
        )?));
    }
    if !matches!(get(&d, "supported")?, Some(s) if s.is_truthy()?) {
        return Ok(Provision::Unsupported);
    }
    let mut topologies = Vec::new();
    if let Some(ts) = get(&d, "topologies")? {
        let ts = args::as_list(&ts, &format!("{path}.topologies"))?;
        for (i, t) in ts.iter().enumerate() {
            let term: TopologyTerm = t.extract().map_err(|_| {
                args::err(
                    &format!("{path}.topologies[{i}]"),
                    "must be None or (key, values) pairs",
                )
            })?;
            topologies.push(term);
        }
    }
    let capacity = match get(&d, "capacity")? {
        None => None,
        Some(cs) => {
            let cs = args::as_list(&cs, &format!("{path}.capacity"))?;
            let mut out = Vec::with_capacity(cs.len());
            for (i, c) in cs.iter().enumerate() {
                let cpath = format!("{path}.capacity[{i}]");
                let (index, topology): (u32, Option<Bound<'_, PyAny>>) = c
                    .extract()
                    .map_err(|_| args::err(&cpath, "must be (index, nodeTopology)"))?;
                // An invalid selector gives no access (upstream logs and skips it).
                let topology = match topology {
                    Some(t) if !t.is_none() => LabelSelectorSpec::parse(&t, &cpath).ok(),
                    _ => None,
                };
                out.push((index, topology));
            }
            Some(out)
        }
    };
    Ok(Provision::Supported {
        topologies,
        capacity,
    })
}

#[pymethods]
impl VolumeBindingRequest {
    /// Built by the VolumeBinding plugin's PreFilter. ``bound`` holds one dict per bound
    /// claim (``None``: its PV does not exist) with ``affinity`` (the PV's
    /// ``spec.nodeAffinity.required`` or None) and, for a migratable in-tree PV,
    /// ``migrated_plugin`` with ``migrated_affinity`` or ``migrated_error``. ``delay``
    /// holds one dict per unbound WaitForFirstConsumer claim: ``selected_node``,
    /// ``prebound`` and ``candidates`` (``{"pv": index, "affinity": ...}``),
    /// ``provision`` (``{"supported": bool, "topologies": [...], "capacity": [...]}``
    /// or ``{"error": msg}``), ``request`` and ``class``.
    #[new]
    #[pyo3(signature = (*, bound = None, delay = None, match_order = Vec::new(), pvs = Vec::new(), capacities = Vec::new(), reject = None))]
    fn py_new(
        bound: Option<&Bound<'_, PyList>>,
        delay: Option<&Bound<'_, PyList>>,
        match_order: Vec<u32>,
        pvs: Vec<(String, String, i64)>,
        capacities: Vec<i64>,
        reject: Option<(String, String)>,
    ) -> PyResult<Self> {
        let mut req = VolumeBindingRequest {
            reject: parse_reject(reject)?,
            bound: Vec::new(),
            delay: Vec::new(),
            match_order,
            pvs,
            capacities,
        };
        if let Some(bound) = bound {
            for (i, b) in bound.iter().enumerate() {
                let path = format!("bound[{i}]");
                if b.is_none() {
                    req.bound.push(None);
                    continue;
                }
                let d = args::as_dict(&b, &path)?;
                let migrated = match get(&d, "migrated_plugin")? {
                    None => None,
                    Some(p) => {
                        let plugin = args::as_str(&p, &format!("{path}.migrated_plugin"))?;
                        let translated = match get(&d, "migrated_error")? {
                            Some(e) => Err(args::as_str(&e, &format!("{path}.migrated_error"))?),
                            None => Ok(parse_affinity(
                                get(&d, "migrated_affinity")?,
                                &format!("{path}.migrated_affinity"),
                            )?),
                        };
                        Some((plugin, translated))
                    }
                };
                req.bound.push(Some(BoundPv {
                    affinity: parse_affinity(get(&d, "affinity")?, &format!("{path}.affinity"))?,
                    migrated,
                }));
            }
        }
        if let Some(delay) = delay {
            for (i, c) in delay.iter().enumerate() {
                let path = format!("delay[{i}]");
                let d = args::as_dict(&c, &path)?;
                let selected_node = match get(&d, "selected_node")? {
                    Some(s) => Some(args::as_str(&s, &format!("{path}.selected_node"))?),
                    None => None,
                };
                let prebound = match get(&d, "prebound")? {
                    Some(p) => Some(parse_candidate(&p, &format!("{path}.prebound"))?),
                    None => None,
                };
                let mut candidates = Vec::new();
                if let Some(cs) = get(&d, "candidates")? {
                    let cs = args::as_list(&cs, &format!("{path}.candidates"))?;
                    for (j, c) in cs.iter().enumerate() {
                        candidates.push(parse_candidate(&c, &format!("{path}.candidates[{j}]"))?);
                    }
                }
                let provision = match get(&d, "provision")? {
                    Some(p) => parse_provision(&p, &format!("{path}.provision"))?,
                    None => Provision::Unsupported,
                };
                let request = match get(&d, "request")? {
                    Some(r) => args::as_i64(&r, &format!("{path}.request"))?,
                    None => 0,
                };
                let class = match get(&d, "class")? {
                    Some(c) => args::as_str(&c, &format!("{path}.class"))?,
                    None => String::new(),
                };
                req.delay.push(DelayClaim {
                    selected_node,
                    prebound,
                    candidates,
                    provision,
                    request,
                    class,
                });
            }
        }
        let n = req.delay.len() as u32;
        if let Some(bad) = req.match_order.iter().find(|&&i| i >= n) {
            return Err(PyValueError::new_err(format!(
                "match_order: index {bad} is out of range (delay has {n} claims)"
            )));
        }
        let npv = req.pvs.len() as u32;
        for (i, c) in req.delay.iter().enumerate() {
            for cand in c.prebound.iter().chain(&c.candidates) {
                if cand.pv >= npv {
                    return Err(PyValueError::new_err(format!(
                        "delay[{i}]: pv index {} is out of range ({npv} pvs)",
                        cand.pv
                    )));
                }
            }
        }
        Ok(req)
    }

    /// The PreFilter verdict carried, `(code, message)`.
    #[getter]
    fn reject(&self) -> Option<(&'static str, String)> {
        reject_tuple(&self.reject)
    }

    fn __repr__(&self) -> String {
        format!(
            "VolumeBindingRequest({} bound, {} to bind or provision)",
            self.bound.len(),
            self.delay.len()
        )
    }
}

/// The requests of one attempt, attached to the compiled pod.
#[derive(Clone, Debug, Default)]
pub struct KernelRequests {
    pub restrictions: Option<Arc<VolumeRestrictionsRequest>>,
    pub zone: Option<Arc<VolumeZoneRequest>>,
    pub limits: Option<Arc<NodeVolumeLimitsRequest>>,
    pub binding: Option<Arc<VolumeBindingRequest>>,
}

impl KernelRequests {
    pub fn is_empty(&self) -> bool {
        self.restrictions.is_none()
            && self.zone.is_none()
            && self.limits.is_none()
            && self.binding.is_none()
    }

    /// Add one request object (any of the request classes).
    pub fn add(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(r) = v.cast::<VolumeRestrictionsRequest>() {
            self.restrictions = Some(Arc::new(r.get().clone()));
        } else if let Ok(r) = v.cast::<VolumeZoneRequest>() {
            self.zone = Some(Arc::new(r.get().clone()));
        } else if let Ok(r) = v.cast::<NodeVolumeLimitsRequest>() {
            self.limits = Some(Arc::new(r.get().clone()));
        } else if let Ok(r) = v.cast::<VolumeBindingRequest>() {
            self.binding = Some(Arc::new(r.get().clone()));
        } else {
            return Err(PyValueError::new_err(format!(
                "not a kernel request: {}",
                v.get_type().name()?
            )));
        }
        Ok(())
    }
}

/// Check a dict is present for `volumes=` (used by the compiled pod).
pub fn parse_pod_volumes(
    v: Option<&Bound<'_, PyDict>>,
    key: &str,
) -> PyResult<Option<Arc<PodVolumeSpec>>> {
    match v {
        None => Ok(None),
        Some(d) => {
            let spec = PodVolumeSpec::parse(d.as_any(), &format!("Pod {key}: volumes"))?;
            Ok((!spec.is_empty()).then(|| Arc::new(spec)))
        }
    }
}
