//! String interning for label keys, label values, taint keys and values.
//!
//! Every string the snapshot compares per node (label keys and values, taint keys and
//! values) is stored as a `u32` id so that the per-node kernels compare integers. Id 0 is
//! reserved for "absent", which lets a label column use 0 for "this node has no such label".

use ahash::AHashMap;

#[derive(Default, Debug, Clone)]
pub struct Interner {
    ids: AHashMap<String, u32>,
    strings: Vec<String>,
    /// The integer value of each string, when it parses as one (for `Gt`/`Lt`).
    numbers: Vec<Option<i64>>,
}

/// The id that means "no string"; never returned by [`Interner::intern`].
pub const ABSENT: u32 = 0;

impl Interner {
    pub fn new() -> Self {
        Interner {
            ids: AHashMap::new(),
            strings: vec![String::new()],
            numbers: vec![None],
        }
    }

    /// The id of `s`, adding it when it was never seen.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_owned());
        self.numbers.push(s.parse::<i64>().ok());
        self.ids.insert(s.to_owned(), id);
        id
    }

    /// The id of `s` if it was ever interned. A string the snapshot never saw cannot be
    /// held by any node, which callers use to short-cut comparisons.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// Number of ids handed out (including the reserved 0).
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.len() <= 1
    }

    /// The integer value of string `id`, if it is one.
    #[inline]
    pub fn number(&self, id: u32) -> Option<i64> {
        self.numbers[id as usize]
    }

    pub fn resolve(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }
}
