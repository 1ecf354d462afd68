//! Small maps and sets keyed by strings (task ids, message ids, call ids), kept as sorted
//! vectors.
//!
//! Why not `BTreeMap`: each value type a `BTreeMap` holds brings its own copy of the tree's
//! insert, search, remove, clone and drop code into the browser's download, about 4 KB per
//! type. These maps hold a chat's tasks, its messages or one batch's calls: a few hundred
//! entries at most, where a binary search over a vector is as quick and its code is a few
//! hundred bytes per type. Iteration is in key order, as with `BTreeMap`.

use std::fmt;

/// A map from string keys to `V`, in key order.
#[derive(Clone, PartialEq)]
pub struct KeyedMap<V> {
    entries: Vec<(String, V)>,
}

impl<V> Default for KeyedMap<V> {
    fn default() -> Self {
        KeyedMap {
            entries: Vec::new(),
        }
    }
}

impl<V> KeyedMap<V> {
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(probe, _)| probe.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        let at = self.find(key).ok()?;
        self.entries.get(at).map(|(_, value)| value)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; the value it had, if any.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => self
                .entries
                .get_mut(at)
                .map(|(_, old)| std::mem::replace(old, value)),
            Err(at) => {
                self.entries.insert(at, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        let at = self.find(key).ok()?;
        Some(self.entries.remove(at).1)
    }

    /// The value of `key`, first set to `V::default()` if it has none.
    pub fn get_or_default(&mut self, key: &str) -> &mut V
    where
        V: Default,
    {
        let at = match self.find(key) {
            Ok(at) => at,
            Err(at) => {
                self.entries.insert(at, (key.to_owned(), V::default()));
                at
            }
        };
        &mut self.entries[at].1
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(key, value)| (key, value))
    }
}

impl<V: fmt::Debug> fmt::Debug for KeyedMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A set of strings, in order.
#[derive(Clone, Default, PartialEq)]
pub struct KeySet {
    keys: KeyedMap<()>,
}

impl KeySet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }

    /// Adds `key`; `false` if it was already there.
    pub fn insert(&mut self, key: String) -> bool {
        self.keys.insert(key, ()).is_none()
    }

    /// Takes `key` out; `false` if it was not there.
    pub fn remove(&mut self, key: &str) -> bool {
        self.keys.remove(key).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.keys.iter().map(|(key, _)| key))
            .finish()
    }
}

// proptest is a native-only dev-dependency.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(String, u8),
        Remove(String),
        Bump(String),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct keys, so operations meet the same entries often.
        let key = "[a-d]{0,2}";
        prop_oneof![
            (key, any::<u8>()).prop_map(|(key, value)| Op::Insert(key, value)),
            key.prop_map(Op::Remove),
            key.prop_map(Op::Bump),
        ]
    }

    proptest! {
        /// Any sequence of operations leaves the map as a `BTreeMap` would be, entry for entry
        /// and in the same order, with the same answers on the way.
        #[test]
        fn behaves_as_a_btree_map(ops in proptest::collection::vec(op(), 0..60)) {
            let mut ours = KeyedMap::new();
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(key, value) => {
                        prop_assert_eq!(ours.insert(key.clone(), value), model.insert(key, value));
                    }
                    Op::Remove(key) => prop_assert_eq!(ours.remove(&key), model.remove(&key)),
                    Op::Bump(key) => {
                        let value = ours.get_or_default(&key);
                        *value = value.wrapping_add(1);
                        let value = model.entry(key).or_default();
                        *value = value.wrapping_add(1);
                    }
                }
                prop_assert_eq!(ours.len(), model.len());
                prop_assert!(ours.iter().eq(model.iter()));
            }
            for key in ["", "a", "ab", "d", "e"] {
                prop_assert_eq!(ours.get(key), model.get(key));
                prop_assert_eq!(ours.contains_key(key), model.contains_key(key));
            }
        }
    }

    #[test]
    fn a_set_says_whether_it_changed() {
        let mut set = KeySet::new();
        assert!(set.is_empty());
        assert!(set.insert("m-2".to_owned()));
        assert!(set.insert("m-1".to_owned()));
        assert!(!set.insert("m-2".to_owned()));
        assert!(set.contains("m-1"));
        assert_eq!(format!("{set:?}"), r#"{"m-1", "m-2"}"#);
        assert!(set.remove("m-1"));
        assert!(!set.remove("m-1"));
        assert!(!set.contains("m-1"));
    }
}
