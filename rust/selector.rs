//! Label selectors and node selector requirements, parsed from the API's JSON and
//! compiled to interned ids.
//!
//! Two stages: [`LabelSelectorSpec`] / [`NodeSelectorTermSpec`] hold strings and are parsed
//! once per pod object (with field-path errors); `compile` turns them into id-based
//! matchers against the snapshot's interner at PreFilter time. Label sets are slices of
//! `(key id, value id)` sorted by key.
//!
//! Semantics follow apimachinery: a nil selector matches nothing, an empty one matches
//! everything; `In`/`NotIn`/`Exists`/`DoesNotExist` for labels; node selector terms add
//! `Gt`/`Lt` (integer comparison) and `matchFields` on `metadata.name`; a term with no
//! requirements matches no node; an invalid requirement makes its term match no node
//! (upstream ignores such terms for backwards compatibility).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, err, get};
use crate::snapshot::intern::Interner;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// A `metav1.LabelSelector` with strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelectorSpec {
    pub match_labels: Vec<(String, String)>,
    pub exprs: Vec<(String, SelOp, Vec<String>)>,
}

impl LabelSelectorSpec {
    pub fn parse(v: &Bound<'_, PyAny>, path: &str) -> PyResult<LabelSelectorSpec> {
        let d = args::as_dict(v, path)?;
        let mut s = LabelSelectorSpec::default();
        if let Some(ml) = get(&d, "matchLabels")? {
            let ml = args::as_dict(&ml, &format!("{path}.matchLabels"))?;
            for (k, v) in ml.iter() {
                let k = args::as_str(&k, &format!("{path}.matchLabels"))?;
                let v = args::as_str(&v, &format!("{path}.matchLabels[{k}]"))?;
                s.match_labels.push((k, v));
            }
        }
        if let Some(me) = get(&d, "matchExpressions")? {
            let me = args::as_list(&me, &format!("{path}.matchExpressions"))?;
            for (i, e) in me.iter().enumerate() {
                let epath = format!("{path}.matchExpressions[{i}]");
                let e = args::as_dict(&e, &epath)?;
                let key = match get(&e, "key")? {
                    Some(k) => args::as_str(&k, &format!("{epath}.key"))?,
                    None => return Err(err(&format!("{epath}.key"), "is required")),
                };
                let op_s = match get(&e, "operator")? {
                    Some(o) => args::as_str(&o, &format!("{epath}.operator"))?,
                    None => return Err(err(&format!("{epath}.operator"), "is required")),
                };
                let op = match op_s.as_str() {
                    "In" => SelOp::In,
                    "NotIn" => SelOp::NotIn,
                    "Exists" => SelOp::Exists,
                    "DoesNotExist" => SelOp::DoesNotExist,
                    other => {
                        return Err(err(
                            &format!("{epath}.operator"),
                            format!("{other:?} is not a valid label selector operator"),
                        ))
                    }
                };
                let values = args::str_list(&e, "values", &epath)?;
                match op {
                    SelOp::In | SelOp::NotIn if values.is_empty() => {
                        return Err(err(
                            &format!("{epath}.values"),
                            "must be specified when `operator` is 'In' or 'NotIn'",
                        ))
                    }
                    SelOp::Exists | SelOp::DoesNotExist if !values.is_empty() => {
                        return Err(err(
                            &format!("{epath}.values"),
                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                        ))
                    }
                    _ => {}
                }
                s.exprs.push((key, op, values));
            }
        }
        Ok(s)
    }

    /// Parse an optional selector: absent or null → `None` (matches nothing).
    pub fn parse_opt(d: &Bound<'_, PyDict>, key: &str, path: &str) -> PyResult<Option<Self>> {
        match get(d, key)? {
            Some(v) => Ok(Some(Self::parse(&v, &format!("{path}.{key}"))?)),
            None => Ok(None),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Req {
    pub key: u32,
    pub op: SelOp,
    pub values: Vec<u32>,
}

/// A compiled label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// All requirements must hold; none at all matches everything.
    Reqs(Vec<Req>),
}

/// The value of `key` in a sorted label set.
#[inline]
pub fn label_value(labels: &[(u32, u32)], key: u32) -> Option<u32> {
    labels
        .binary_search_by_key(&key, |&(k, _)| k)
        .ok()
        .map(|i| labels[i].1)
}

impl Selector {
    pub fn everything() -> Selector {
        Selector::Reqs(Vec::new())
    }

    pub fn compile(spec: Option<&LabelSelectorSpec>, interner: &mut Interner) -> Selector {
        let Some(spec) = spec else {
            return Selector::Nothing;
        };
        let mut reqs = Vec::with_capacity(spec.match_labels.len() + spec.exprs.len());
        for (k, v) in &spec.match_labels {
            reqs.push(Req {
                key: interner.intern(k),
                op: SelOp::In,
                values: vec![interner.intern(v)],
            });
        }
        for (k, op, values) in &spec.exprs {
            reqs.push(Req {
                key: interner.intern(k),
                op: *op,
                values: values.iter().map(|v| interner.intern(v)).collect(),
            });
        }
        Selector::Reqs(reqs)
    }

    /// Add `key In [value]` (matchLabelKeys) or `key NotIn [value]` (mismatchLabelKeys).
    pub fn push(&mut self, key: u32, op: SelOp, value: u32) {
        if let Selector::Reqs(r) = self {
            r.push(Req {
                key,
                op,
                values: vec![value],
            });
        }
    }

    pub fn is_nothing(&self) -> bool {
        matches!(self, Selector::Nothing)
    }

    /// `labels.Selector.Empty()`: a selector with no requirements.
    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Reqs(r) if r.is_empty())
    }

    #[inline]
    pub fn matches(&self, labels: &[(u32, u32)]) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Reqs(reqs) => reqs.iter().all(|r| {
                let v = label_value(labels, r.key);
                match r.op {
                    SelOp::In => v.is_some_and(|v| r.values.contains(&v)),
                    SelOp::NotIn => v.is_none_or(|v| !r.values.contains(&v)),
                    SelOp::Exists => v.is_some(),
                    SelOp::DoesNotExist => v.is_none(),
                }
            }),
        }
    }
}

/// Intern a string label map into a sorted label set.
pub fn intern_labels(labels: &[(String, String)], interner: &mut Interner) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = labels
        .iter()
        .map(|(k, v)| (interner.intern(k), interner.intern(v)))
        .collect();
    out.sort_unstable();
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReqSpec {
    pub key: String,
    pub op: NodeOp,
    pub values: Vec<String>,
}

/// A `v1.NodeSelectorTerm` with strings; `valid` is false when a requirement could not
/// be parsed (the term then matches no node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorTermSpec {
    pub exprs: Vec<NodeReqSpec>,
    pub fields: Vec<NodeReqSpec>,
    pub valid: bool,
}

fn parse_node_reqs(
    d: &Bound<'_, PyDict>,
    key: &str,
    path: &str,
    fields: bool,
    valid: &mut bool,
) -> PyResult<Vec<NodeReqSpec>> {
    let mut out = Vec::new();
    let Some(list) = get(d, key)? else {
        return Ok(out);
    };
    let list = args::as_list(&list, &format!("{path}.{key}"))?;
    for (i, r) in list.iter().enumerate() {
        let rpath = format!("{path}.{key}[{i}]");
        let r = args::as_dict(&r, &rpath)?;
        let k = match get(&r, "key")? {
            Some(k) => args::as_str(&k, &format!("{rpath}.key"))?,
            None => String::new(),
        };
        let op_s = match get(&r, "operator")? {
            Some(o) => args::as_str(&o, &format!("{rpath}.operator"))?,
            None => String::new(),
        };
        let values = args::str_list(&r, "values", &rpath)?;
        let op = match op_s.as_str() {
            "In" => NodeOp::In,
            "NotIn" => NodeOp::NotIn,
            "Exists" => NodeOp::Exists,
            "DoesNotExist" => NodeOp::DoesNotExist,
            "Gt" => NodeOp::Gt,
            "Lt" => NodeOp::Lt,
            _ => {
                *valid = false;
                continue;
            }
        };
        let ok = match op {
            NodeOp::In | NodeOp::NotIn => !values.is_empty(),
            NodeOp::Exists | NodeOp::DoesNotExist => values.is_empty(),
            NodeOp::Gt | NodeOp::Lt => values.len() == 1 && values[0].parse::<i64>().is_ok(),
        };
        let names_ok = is_qualified_name(&k)
            && (fields
                || !matches!(op, NodeOp::In | NodeOp::NotIn)
                || values.iter().all(|v| is_label_value(v)));
        let field_ok = !fields
            || (k == "metadata.name"
                && matches!(op, NodeOp::In | NodeOp::NotIn)
                && values.len() == 1);
        if !ok || !field_ok || (!fields && !names_ok) || k.is_empty() {
            *valid = false;
            continue;
        }
        out.push(NodeReqSpec { key: k, op, values });
    }
    Ok(out)
}

impl NodeSelectorTermSpec {
    pub fn parse(v: &Bound<'_, PyAny>, path: &str) -> PyResult<NodeSelectorTermSpec> {
        let d = args::as_dict(v, path)?;
        let mut valid = true;
        let exprs = parse_node_reqs(&d, "matchExpressions", path, false, &mut valid)?;
        let fields = parse_node_reqs(&d, "matchFields", path, true, &mut valid)?;
        Ok(NodeSelectorTermSpec {
            exprs,
            fields,
            valid,
        })
    }

    /// Parse `{"nodeSelectorTerms": [...]}`.
    pub fn parse_selector(v: &Bound<'_, PyAny>, path: &str) -> PyResult<Vec<NodeSelectorTermSpec>> {
        let d = args::as_dict(v, path)?;
        let mut out = Vec::new();
        if let Some(terms) = get(&d, "nodeSelectorTerms")? {
            let terms = args::as_list(&terms, &format!("{path}.nodeSelectorTerms"))?;
            for (i, t) in terms.iter().enumerate() {
                out.push(Self::parse(&t, &format!("{path}.nodeSelectorTerms[{i}]"))?);
            }
        }
        Ok(out)
    }
}

/// A valid label value: at most 63 characters, empty or alphanumeric at both ends with
/// `-`, `_`, `.` inside.
pub fn is_label_value(v: &str) -> bool {
    if v.is_empty() {
        return true;
    }
    let b = v.as_bytes();
    v.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A valid qualified name (label key): an optional DNS-subdomain prefix and `/`, then a
/// name of at most 63 characters shaped like a label value (non-empty).
pub fn is_qualified_name(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if name.is_empty() || !is_label_value(name) {
        return false;
    }
    match prefix {
        None => true,
        Some(p) => {
            !p.is_empty()
                && p.len() <= 253
                && p.split('.').all(|part| {
                    let b = part.as_bytes();
                    !b.is_empty()
                        && b[0].is_ascii_alphanumeric()
                        && b[b.len() - 1].is_ascii_alphanumeric()
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                })
        }
    }
}
