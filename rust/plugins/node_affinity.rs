//! NodeAffinity: `spec.nodeSelector`, required and preferred node affinity, and the
//! scheduler-enforced `addedAffinity` from the plugin args.
//!
//! Filter: the node must match `addedAffinity` ("node(s) didn't match scheduler-enforced
//! node affinity"), every nodeSelector label, and at least one required term (terms are
//! ORed, requirements within a term ANDed) — otherwise "node(s) didn't match Pod's node
//! affinity/selector". Both are UnschedulableAndUnresolvable.
//!
//! PreFilter: when every required term names nodes with `matchFields metadata.name In`,
//! only those nodes are examined (upstream's PreFilterResult); terms whose name sets do
//! not intersect leave no node ("pod affinity terms conflict").
//!
//! Score: the sum of the weights of the preferred terms (the pod's and addedAffinity's)
//! the node matches, normalized by the highest score to 0..100.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, get};
use crate::selector::{NodeOp, NodeSelectorTermSpec};
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// Node affinity with strings: `required` is `None` when not set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAffinitySpec {
    pub required: Option<Vec<NodeSelectorTermSpec>>,
    pub preferred: Vec<(i64, NodeSelectorTermSpec)>,
}

impl NodeAffinitySpec {
    /// Parse a `v1.NodeAffinity` object at `path`.
    pub fn parse(v: &Bound<'_, PyAny>, path: &str) -> PyResult<NodeAffinitySpec> {
        let d = args::as_dict(v, path)?;
        let mut s = NodeAffinitySpec::default();
        if let Some(req) = get(&d, "requiredDuringSchedulingIgnoredDuringExecution")? {
            s.required = Some(NodeSelectorTermSpec::parse_selector(
                &req,
                &format!("{path}.requiredDuringSchedulingIgnoredDuringExecution"),
            )?);
        }
        if let Some(pref) = get(&d, "preferredDuringSchedulingIgnoredDuringExecution")? {
            let ppath = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
            let pref = args::as_list(&pref, &ppath)?;
            for (i, p) in pref.iter().enumerate() {
                let ipath = format!("{ppath}[{i}]");
                let p = args::as_dict(&p, &ipath)?;
                let weight = match get(&p, "weight")? {
                    Some(w) => args::as_i64(&w, &format!("{ipath}.weight"))?,
                    None => 0,
                };
                let term = match get(&p, "preference")? {
                    Some(t) => NodeSelectorTermSpec::parse(&t, &format!("{ipath}.preference"))?,
                    None => return Err(args::err(&format!("{ipath}.preference"), "is required")),
                };
                s.preferred.push((weight, term));
            }
        }
        Ok(s)
    }

    /// The `nodeAffinity` of a pod's `spec.affinity`.
    pub fn parse_pod(affinity: &Bound<'_, PyDict>) -> PyResult<NodeAffinitySpec> {
        match get(affinity, "nodeAffinity")? {
            Some(na) => Self::parse(&na, "spec.affinity.nodeAffinity"),
            None => Ok(NodeAffinitySpec::default()),
        }
    }
}

/// `NodeAffinityArgs`: the scheduler-enforced affinity.
#[derive(Clone, Debug, Default)]
pub struct NodeAffinityArgs {
    pub added: Option<NodeAffinitySpec>,
}

impl NodeAffinityArgs {
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<NodeAffinityArgs> {
        Ok(NodeAffinityArgs {
            added: match get(d, "addedAffinity")? {
                Some(a) => Some(NodeAffinitySpec::parse(
                    &a,
                    "NodeAffinityArgs.addedAffinity",
                )?),
                None => None,
            },
        })
    }
}

/// One compiled node requirement.
#[derive(Clone, Debug)]
pub enum NodeReq {
    Label {
        /// The label column; `None` when no node has the key.
        col: Option<usize>,
        op: NodeOp,
        values: Vec<u32>,
        number: i64,
    },
    Name {
        op: NodeOp,
        slots: Vec<u32>,
    },
}

/// A compiled node selector term; an empty or invalid term matches no node.
#[derive(Clone, Debug)]
pub struct NodeTerm {
    pub reqs: Vec<NodeReq>,
    pub matches_nothing: bool,
}

impl NodeTerm {
    pub fn compile(spec: &NodeSelectorTermSpec, snap: &mut Snapshot) -> NodeTerm {
        let mut reqs = Vec::with_capacity(spec.exprs.len() + spec.fields.len());
        for r in &spec.exprs {
            let key = snap.interner.intern(&r.key);
            let col = snap.label_index.get(&key).copied();
            let values = r.values.iter().map(|v| snap.interner.intern(v)).collect();
            let number = match r.op {
                NodeOp::Gt | NodeOp::Lt => r.values[0].parse::<i64>().unwrap_or(0),
                _ => 0,
            };
            reqs.push(NodeReq::Label {
                col,
                op: r.op,
                values,
                number,
            });
        }
        for r in &spec.fields {
            let slots = r.values.iter().filter_map(|n| snap.slot_of(n)).collect();
            reqs.push(NodeReq::Name { op: r.op, slots });
        }
        NodeTerm {
            matches_nothing: !spec.valid || (spec.exprs.is_empty() && spec.fields.is_empty()),
            reqs,
        }
    }

    #[inline]
    pub fn matches(&self, snap: &Snapshot, slot: u32) -> bool {
        if self.matches_nothing {
            return false;
        }
        self.reqs.iter().all(|r| match r {
            NodeReq::Label {
                col,
                op,
                values,
                number,
            } => {
                let v = col.map_or(0, |c| snap.label_cols[c][slot as usize]);
                let present = v != 0;
                match op {
                    NodeOp::In => present && values.contains(&v),
                    NodeOp::NotIn => !present || !values.contains(&v),
                    NodeOp::Exists => present,
                    NodeOp::DoesNotExist => !present,
                    NodeOp::Gt | NodeOp::Lt => {
                        present
                            && match snap.interner.number(v) {
                                Some(n) => {
                                    if *op == NodeOp::Gt {
                                        n > *number
                                    } else {
                                        n < *number
                                    }
                                }
                                None => false,
                            }
                    }
                }
            }
            NodeReq::Name { op, slots } => {
                let inside = slots.contains(&slot);
                if *op == NodeOp::In {
                    inside
                } else {
                    !inside
                }
            }
        })
    }
}

/// The pod's required node affinity (`GetRequiredNodeAffinity`): nodeSelector AND (any
/// required term). Also used by PodTopologySpread's node inclusion policy.
#[derive(Clone, Debug, Default)]
pub struct RequiredNodeAffinity {
    /// `(label column, value id)`; a missing column means no node can match.
    pub selector: Vec<(Option<usize>, u32)>,
    pub terms: Option<Vec<NodeTerm>>,
}

impl RequiredNodeAffinity {
    pub fn compile(
        node_selector: &[(String, String)],
        required: Option<&Vec<NodeSelectorTermSpec>>,
        snap: &mut Snapshot,
    ) -> RequiredNodeAffinity {
        let selector = node_selector
            .iter()
            .map(|(k, v)| {
                let kid = snap.interner.intern(k);
                (snap.label_index.get(&kid).copied(), snap.interner.intern(v))
            })
            .collect();
        let terms = required.map(|ts| ts.iter().map(|t| NodeTerm::compile(t, snap)).collect());
        RequiredNodeAffinity { selector, terms }
    }

    pub fn is_empty(&self) -> bool {
        self.selector.is_empty() && self.terms.is_none()
    }

    #[inline]
    pub fn matches(&self, snap: &Snapshot, slot: u32) -> bool {
        for &(col, v) in &self.selector {
            match col {
                Some(c) if snap.label_cols[c][slot as usize] == v => {}
                _ => return false,
            }
        }
        match &self.terms {
            None => true,
            Some(terms) => terms.iter().any(|t| t.matches(snap, slot)),
        }
    }
}

/// Per-pod state.
#[derive(Clone, Debug, Default)]
pub struct NodeAffinityState {
    pub required: RequiredNodeAffinity,
    pub added_required: Option<Vec<NodeTerm>>,
    pub preferred: Vec<(i64, NodeTerm)>,
}

pub fn prefilter(
    snap: &mut Snapshot,
    node_selector: &[(String, String)],
    spec: &NodeAffinitySpec,
    args: &NodeAffinityArgs,
) -> NodeAffinityState {
    let required = RequiredNodeAffinity::compile(node_selector, spec.required.as_ref(), snap);
    let mut preferred: Vec<(i64, NodeTerm)> = Vec::new();
    let mut added_required = None;
    if let Some(added) = &args.added {
        if let Some(req) = &added.required {
            added_required = Some(req.iter().map(|t| NodeTerm::compile(t, snap)).collect());
        }
        for (w, t) in &added.preferred {
            preferred.push((*w, NodeTerm::compile(t, snap)));
        }
    }
    for (w, t) in &spec.preferred {
        preferred.push((*w, NodeTerm::compile(t, snap)));
    }
    NodeAffinityState {
        required,
        added_required,
        preferred,
    }
}

/// The node names a pod's required terms restrict it to: `None` when some term does not
/// name nodes; `Some(empty)` when the terms conflict.
pub fn node_name_restriction(spec: &NodeAffinitySpec) -> Option<Vec<String>> {
    let terms = spec.required.as_ref()?;
    let mut union: Option<Vec<String>> = None;
    for t in terms {
        let mut term_names: Option<Vec<String>> = None;
        for f in &t.fields {
            if f.key == "metadata.name" && f.op == NodeOp::In {
                term_names = Some(match term_names {
                    None => f.values.clone(),
                    Some(prev) => prev.into_iter().filter(|n| f.values.contains(n)).collect(),
                });
            }
        }
        let names = term_names?;
        let u = union.get_or_insert_with(Vec::new);
        for n in names {
            if !u.contains(&n) {
                u.push(n);
            }
        }
    }
    union
}

/// Filter: `Some(detail)` with 0 = enforced affinity, 1 = pod affinity/selector.
#[inline]
pub fn filter(snap: &Snapshot, st: &NodeAffinityState, slot: u32) -> Option<u64> {
    if let Some(added) = &st.added_required {
        if !added.iter().any(|t| t.matches(snap, slot)) {
            return Some(0);
        }
    }
    if !st.required.matches(snap, slot) {
        return Some(1);
    }
    None
}

pub fn reason(detail: u64) -> &'static str {
    if detail == 0 {
        ERR_REASON_ENFORCED
    } else {
        ERR_REASON_POD
    }
}

#[inline]
pub fn score(snap: &Snapshot, st: &NodeAffinityState, slot: u32) -> i64 {
    st.preferred
        .iter()
        .filter(|(_, t)| t.matches(snap, slot))
        .map(|(w, _)| *w)
        .sum()
}
