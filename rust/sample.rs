//! How many feasible nodes to look for: kube-scheduler's `numFeasibleNodesToFind`.
//!
//! Fewer than 100 nodes: all of them. Otherwise the profile's (or global)
//! `percentageOfNodesToScore`; 0 means adaptive, `max(5, 50 - N/125)` percent; and never
//! fewer than 100 nodes.

pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

pub fn num_feasible_nodes_to_find(num_all_nodes: usize, percentage: u32) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let n = num_all_nodes as i64;
    let mut pct = percentage as i64;
    if pct == 0 {
        pct = (50 - n / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let num = n * pct / 100;
    (num as usize).max(MIN_FEASIBLE_NODES_TO_FIND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_table() {
        let cases = [
            ("small-cluster-all", 10, 0, 10),
            ("just-below-100", 99, 50, 99),
            ("adaptive-1000", 1000, 0, 420),
            ("adaptive-5000", 5000, 0, 500),
            ("adaptive-floor-5pct", 6000, 0, 300),
            ("adaptive-huge", 100_000, 0, 5000),
            ("fixed-percent", 5000, 30, 1500),
            ("at-least-100", 1000, 1, 100),
            ("hundred-percent", 5000, 100, 5000),
        ];
        for (name, n, pct, want) in cases {
            assert_eq!(num_feasible_nodes_to_find(n, pct), want, "{name}");
        }
    }
}
