//! Score normalization, as the framework's `DefaultNormalizeScore`.
//!
//! Scales scores to `[0, max_priority]` by the highest score; with `reverse`, the result
//! is `max_priority - score` (used when a lower raw score is better, e.g. counts of
//! intolerable taints). When every score is 0 and `reverse` is set, all become
//! `max_priority`.

pub fn default_normalize(max_priority: i64, reverse: bool, scores: &mut [i64]) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            for s in scores.iter_mut() {
                *s = max_priority;
            }
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut v = max_priority * *s / max;
        if reverse {
            v = max_priority - v;
        }
        *s = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_reverses() {
        let mut s = [0, 2, 4];
        default_normalize(100, false, &mut s);
        assert_eq!(s, [0, 50, 100]);
        let mut s = [0, 2, 4];
        default_normalize(100, true, &mut s);
        assert_eq!(s, [100, 50, 0]);
        let mut s = [0, 0];
        default_normalize(100, true, &mut s);
        assert_eq!(s, [100, 100]);
        let mut s = [0, 0];
        default_normalize(100, false, &mut s);
        assert_eq!(s, [0, 0]);
    }
}
