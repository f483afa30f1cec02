//! `core/v1` NodeSelector matching against one node, as
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity.NodeSelector.Match` does:
//! the terms are ORed, the requirements of a term ANDed, a term without requirements
//! matches nothing, and `matchFields` knows `metadata.name`.
//!
//! ResourceSlices and devices carry their own selectors (string labels, few per slice);
//! matching them against the node's label map directly is simpler than interning them
//! into the snapshot's label columns and as fast for the handful of slices a node has.

use std::collections::HashMap;

use super::api::{NodeSelector, NodeSelectorRequirement};

/// A node's labels, by key.
pub trait NodeLabels: Sync {
    fn label(&self, key: &str) -> Option<&str>;
}

impl NodeLabels for HashMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// The node as a selector sees it.
pub struct NodeView<'a> {
    pub name: &'a str,
    pub labels: &'a dyn NodeLabels,
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> Result<bool, String> {
    match r.operator.as_str() {
        "In" => Ok(value.is_some_and(|v| r.values.iter().any(|x| x == v))),
        "NotIn" => Ok(!value.is_some_and(|v| r.values.iter().any(|x| x == v))),
        "Exists" => Ok(value.is_some()),
        "DoesNotExist" => Ok(value.is_none()),
        "Gt" | "Lt" => {
            if r.values.len() != 1 {
                return Err(format!(
                    "{}: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                    r.key
                ));
            }
            let want: i64 = r.values[0].parse().map_err(|_| {
                format!(
                    "{}: Invalid value: {:?}: must be an integer",
                    r.key, r.values[0]
                )
            })?;
            Ok(value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|have| {
                    if r.operator == "Gt" {
                        have > want
                    } else {
                        have < want
                    }
                }))
        }
        op => Err(format!("{}: Unsupported value: {op:?}", r.key)),
    }
}

/// Whether `selector` selects `node`; an error for a selector that cannot be parsed.
pub fn matches(selector: &NodeSelector, node: &NodeView<'_>) -> Result<bool, String> {
    let mut matched = false;
    for term in &selector.terms {
        if term.match_expressions.is_empty() && term.match_fields.is_empty() {
            continue;
        }
        let mut ok = true;
        for r in &term.match_expressions {
            if !requirement_matches(r, node.labels.label(&r.key))? {
                ok = false;
            }
        }
        for r in &term.match_fields {
            let value = if r.key == "metadata.name" {
                Some(node.name)
            } else {
                return Err(format!("{}: Unsupported value: {:?}", r.key, r.key));
            };
            if !requirement_matches(r, value)? {
                ok = false;
            }
        }
        if ok {
            matched = true;
        }
    }
    Ok(matched)
}
