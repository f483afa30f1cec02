//! Taints and tolerations: the shared matching rule (`Toleration.ToleratesTaint`).
//!
//! The node side stores taints with interned key/value ids; the pod side keeps strings
//! until PreFilter resolves them. NodeUnschedulable and TaintToleration both use
//! [`tolerates`].

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "NoSchedule" => Some(Effect::NoSchedule),
            "PreferNoSchedule" => Some(Effect::PreferNoSchedule),
            "NoExecute" => Some(Effect::NoExecute),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint with interned key and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: u32,
    pub value: u32,
    pub effect: Effect,
}

/// A pod toleration as written in the pod spec. `key` "" with `exists` tolerates every
/// taint; `effect` `None` matches every effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub exists: bool,
    pub value: String,
    pub effect: Option<Effect>,
}

/// Whether `tol` tolerates the taint `(key, value, effect)`, given as strings.
pub fn tolerates(tol: &Toleration, key: &str, value: &str, effect: Effect) -> bool {
    if let Some(e) = tol.effect {
        if e != effect {
            return false;
        }
    }
    if !tol.key.is_empty() && tol.key != key {
        return false;
    }
    tol.exists || tol.value == value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tol(key: &str, exists: bool, value: &str, effect: Option<Effect>) -> Toleration {
        Toleration {
            key: key.into(),
            exists,
            value: value.into(),
            effect,
        }
    }

    #[test]
    fn toleration_rules() {
        let cases = [
            ("exists-any-key-any-effect", tol("", true, "", None), true),
            (
                "equal-same-value",
                tol("k", false, "v", Some(Effect::NoSchedule)),
                true,
            ),
            (
                "equal-other-value",
                tol("k", false, "w", Some(Effect::NoSchedule)),
                false,
            ),
            (
                "other-effect",
                tol("k", true, "", Some(Effect::NoExecute)),
                false,
            ),
            ("other-key", tol("x", true, "", None), false),
            ("exists-same-key-no-effect", tol("k", true, "", None), true),
        ];
        for (name, t, want) in cases {
            assert_eq!(tolerates(&t, "k", "v", Effect::NoSchedule), want, "{name}");
        }
    }
}
