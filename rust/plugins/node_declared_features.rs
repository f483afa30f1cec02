//! NodeDeclaredFeatures: a pod that needs node features (KEP-5328) fits only nodes whose
//! `status.declaredFeatures` include every one of them.
//!
//! The feature names are interned into one table per snapshot ([`FeatureTable`]); a
//! node's declared features and a pod's required ones are bitsets over it
//! ([`FeatureSet`]), and the Filter is a subset test, a few word operations per node
//! (upstream: `FeatureSet.IsSubset` over the registry's bitmap). What a pod requires is
//! inferred in Python from its spec once per pod object
//! (`ksched.api.declared_features`), and what a node declares is mapped there onto the
//! registry (`TryMap`), so both sides only ever name registered features; the table
//! interns whatever it is given all the same.
//!
//! PreFilter is a Skip when the pod requires nothing (the filter is then not active for
//! the pod). A node missing a feature is UnschedulableAndUnresolvable: evicting pods
//! cannot make it declare one.

use ahash::AHashMap;

pub const NAME: &str = "NodeDeclaredFeatures";
/// `errReasonUnsatisfiedRequirements`.
pub const ERR_REASON_UNSATISFIED: &str = "node(s) didn't match Pod's required features";

/// Feature name → bit position.
#[derive(Debug, Default, Clone)]
pub struct FeatureTable {
    ids: AHashMap<String, u32>,
}

impl FeatureTable {
    /// The bit of `name`, assigning the next free one when new.
    pub fn bit(&mut self, name: &str) -> u32 {
        if let Some(&b) = self.ids.get(name) {
            return b;
        }
        let b = self.ids.len() as u32;
        self.ids.insert(name.to_owned(), b);
        b
    }

    /// The set of `names`.
    pub fn set_of<S: AsRef<str>>(&mut self, names: &[S]) -> FeatureSet {
        let mut s = FeatureSet::default();
        for n in names {
            s.insert(self.bit(n.as_ref()));
        }
        s
    }
}

/// A set of features as bits over a [`FeatureTable`]; an empty set holds no words.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FeatureSet {
    words: Vec<u64>,
}

impl FeatureSet {
    pub fn insert(&mut self, bit: u32) {
        let w = (bit / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (bit % 64);
    }

    pub fn contains(&self, bit: u32) -> bool {
        self.words
            .get((bit / 64) as usize)
            .is_some_and(|w| w & (1u64 << (bit % 64)) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Every feature of `self` is in `other`.
    #[inline]
    pub fn is_subset(&self, other: &FeatureSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }
}

/// PreFilter: the pod's required features, `None` when it requires none (Skip).
pub fn prefilter(table: &mut FeatureTable, required: &[String]) -> Option<FeatureSet> {
    if required.is_empty() {
        return None;
    }
    Some(table.set_of(required))
}

/// Filter: whether the node declares every required feature.
#[inline]
pub fn filter(required: &FeatureSet, declared: &FeatureSet) -> bool {
    required.is_subset(declared)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Upstream TestFilter's cases (nodedeclaredfeatures_test.go).
    #[test]
    fn filter_cases() {
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            (
                "node-matches-requirements",
                &["FeatureA", "FeatureB"],
                &["FeatureA"],
                true,
            ),
            (
                "node-does-not-match-requirements",
                &["FeatureB"],
                &["FeatureA"],
                false,
            ),
            (
                "node-with-multiple-features-pod-requires-subset",
                &["FeatureA", "FeatureB", "FeatureC"],
                &["FeatureA", "FeatureC"],
                true,
            ),
            ("node-has-no-declared-features", &[], &["FeatureA"], false),
            (
                "node-with-some-but-not-all-required-features",
                &["FeatureA"],
                &["FeatureA", "FeatureB"],
                false,
            ),
        ];
        for &(name, node, pod, fits) in cases {
            let mut t = FeatureTable::default();
            let declared = t.set_of(node);
            let required = t.set_of(pod);
            assert_eq!(filter(&required, &declared), fits, "{name}");
        }
    }

    #[test]
    fn nothing_required_is_a_skip() {
        let mut t = FeatureTable::default();
        assert!(prefilter(&mut t, &[]).is_none());
        let r = prefilter(&mut t, &["X".to_string()]).unwrap();
        assert!(r.contains(t.bit("X")) && !r.is_empty());
    }

    #[test]
    fn sets_wider_than_one_word() {
        let mut t = FeatureTable::default();
        let names: Vec<String> = (0..130).map(|i| format!("F{i}")).collect();
        let all = t.set_of(&names);
        let last = t.set_of(&names[129..]);
        let first = t.set_of(&names[..1]);
        assert!(last.is_subset(&all) && first.is_subset(&all));
        assert!(!last.is_subset(&first) && !all.is_subset(&last));
        assert!(FeatureSet::default().is_subset(&first));
    }
}
