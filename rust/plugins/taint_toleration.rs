//! TaintToleration: a node's NoSchedule/NoExecute taints must be tolerated; untolerated
//! PreferNoSchedule taints lower the score.
//!
//! Filter: a taint with effect NoSchedule or NoExecute that no toleration tolerates
//! rejects the node, "node(s) had untolerated taint(s)" (UnschedulableAndUnresolvable).
//! As v1.36's Filter, the reason names no taint, so all such nodes make one entry of the
//! FailedScheduling histogram.
//!
//! Score: the number of PreferNoSchedule taints not tolerated by the pod's tolerations
//! whose effect is PreferNoSchedule or empty; normalized in reverse (fewer is better).

use super::taint::{Effect, Taint};
use crate::snapshot::intern::Interner;
use crate::snapshot::Snapshot;

pub const NAME: &str = "TaintToleration";

/// A toleration with interned key/value (`key` `None` = empty key).
#[derive(Clone, Copy, Debug)]
pub struct TolC {
    pub key: Option<u32>,
    pub exists: bool,
    pub value: u32,
    pub effect: Option<Effect>,
}

impl TolC {
    #[inline]
    pub fn tolerates(&self, t: &Taint) -> bool {
        if let Some(e) = self.effect {
            if e != t.effect {
                return false;
            }
        }
        if let Some(k) = self.key {
            if k != t.key {
                return false;
            }
        }
        self.exists || self.value == t.value
    }
}

#[derive(Clone, Debug, Default)]
pub struct TaintState {
    pub tolerations: Vec<TolC>,
    /// Tolerations considered by Score (effect PreferNoSchedule or empty).
    pub prefer: Vec<TolC>,
}

pub fn prefilter(tolerations: &[super::taint::Toleration], interner: &mut Interner) -> TaintState {
    let tolerations: Vec<TolC> = tolerations
        .iter()
        .map(|t| TolC {
            key: if t.key.is_empty() {
                None
            } else {
                Some(interner.intern(&t.key))
            },
            exists: t.exists,
            value: interner.intern(&t.value),
            effect: t.effect,
        })
        .collect();
    let prefer = tolerations
        .iter()
        .copied()
        .filter(|t| t.effect.is_none() || t.effect == Some(Effect::PreferNoSchedule))
        .collect();
    TaintState {
        tolerations,
        prefer,
    }
}

/// Filter: the index of the first untolerated NoSchedule/NoExecute taint (for logs; the
/// reason is [`ERR_REASON`] whichever it is).
#[inline]
pub fn filter(snap: &Snapshot, st: &TaintState, slot: u32) -> Option<u64> {
    for (i, t) in snap.taints[slot as usize].iter().enumerate() {
        if t.effect == Effect::PreferNoSchedule {
            continue;
        }
        if !st.tolerations.iter().any(|tol| tol.tolerates(t)) {
            return Some(i as u64);
        }
    }
    None
}

pub const ERR_REASON: &str = "node(s) had untolerated taint(s)";

#[inline]
pub fn score(snap: &Snapshot, st: &TaintState, slot: u32) -> i64 {
    snap.taints[slot as usize]
        .iter()
        .filter(|t| t.effect == Effect::PreferNoSchedule)
        .filter(|t| !st.prefer.iter().any(|tol| tol.tolerates(t)))
        .count() as i64
}
