//! NodeResourcesBalancedAllocation: prefer nodes whose resource usage fractions (after
//! placing the pod, plain requests, capped at 1) are close to each other.
//!
//! A node's balance is `(1 − std) × 100` over the usage fractions, where std is half the
//! absolute difference for two resources and the population standard deviation for more.
//! Since v1.36 (kubernetes#135573) the score rewards the *change* the pod makes:
//! `50 + (50 + balance(with pod) − balance(without)) / 2`, so 75 means no change.
//! Best-effort pods (requesting none of the configured resources) skip this plugin
//! (score 0).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::node_resources_fit::read_resources;

pub const NAME: &str = "NodeResourcesBalancedAllocation";

#[derive(Clone, Debug)]
pub struct BalancedArgs {
    pub resources: Vec<(String, i64)>,
}

impl Default for BalancedArgs {
    fn default() -> Self {
        BalancedArgs {
            resources: vec![("cpu".into(), 1), ("memory".into(), 1)],
        }
    }
}

impl BalancedArgs {
    pub fn from_py(d: &Bound<'_, PyDict>) -> PyResult<BalancedArgs> {
        Ok(BalancedArgs {
            resources: read_resources(d, "NodeResourcesBalancedAllocationArgs")?,
        })
    }
}

/// Score from `(allocatable, requested with the pod, weight)` triples and the pod's
/// `(source, request, weight)` per resource (same order).
pub fn score(
    res: &[(i64, i64, i64)],
    pod: &[(crate::plugins::node_resources_fit::ScoreSource, i64, i64)],
) -> i64 {
    let with = balance(res.iter().map(|&(a, r, _)| (a, r)));
    let without = balance(
        res.iter()
            .zip(pod)
            .map(|(&(a, r, _), &(_, p, _))| (a, r - p)),
    );
    50 + (50 + with - without) / 2
}

/// `int((1 − std) × 100)` over `(allocatable, requested)` pairs (allocatable 0: left out).
fn balance(res: impl Iterator<Item = (i64, i64)>) -> i64 {
    let mut buf = [0f64; crate::plugins::node_resources_fit::INLINE_RESOURCES];
    let mut heap: Vec<f64> = Vec::new();
    let mut n = 0usize;
    let mut total = 0f64;
    for (alloc, req) in res {
        if alloc == 0 {
            continue;
        }
        let f = (req as f64 / alloc as f64).min(1.0);
        total += f;
        if n < buf.len() {
            buf[n] = f;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&buf);
            }
            heap.push(f);
        }
        n += 1;
    }
    let fractions: &[f64] = if heap.is_empty() { &buf[..n] } else { &heap };
    let std = match fractions.len() {
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n if n > 2 => {
            let mean = total / n as f64;
            let sum: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * 100.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balance_of_fractions() {
        // cpu 50%, memory 50% → std 0 → 100.
        assert_eq!(balance([(1000, 500), (2000, 1000)].into_iter()), 100);
        // cpu 100%, memory 0% → std 0.5 → 50.
        assert_eq!(balance([(1000, 1000), (2000, 0)].into_iter()), 50);
        // One resource only: std 0.
        assert_eq!(balance([(1000, 300), (0, 0)].into_iter()), 100);
    }

    #[test]
    fn score_rewards_the_change() {
        use crate::plugins::node_resources_fit::ScoreSource::{Cpu, Memory};
        let pod = [(Cpu, 500, 1), (Memory, 0, 1)];
        // Empty node, pod uses half the cpu: balance 100 → 75, score 50 + 25/2 = 62.
        assert_eq!(score(&[(1000, 500, 1), (2000, 0, 1)], &pod), 62);
        let none = [(Cpu, 0, 1), (Memory, 0, 1)];
        assert_eq!(score(&[(1000, 500, 1), (2000, 0, 1)], &none), 75);
    }
}
