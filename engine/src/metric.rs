//! Recording a metric without building its key on every call.
//!
//! The [`metrics`] macros build a [`Key`] at each call: with a label value known only at run
//! time (a node's name, a route, a model) that is a `Vec` of labels and a `String` per value,
//! and the recorder then copies the key into shared storage before looking it up. On a path
//! taken for every node, checkpoint and request, that is several allocations each time for
//! the same few keys. Here a key is built once, retained (its strings shared, its hash
//! computed), and reused: [`KeyCache`] keeps the keys of one metric by their label values,
//! and [`histogram`] / [`counter`] record on a key through the process's recorder, looked up
//! at each call so that a recorder installed later is used from then on (a no-op when none
//! is installed).
//!
//! ```
//! use palgraph::metric::{self, KeyCache};
//!
//! static NODE_SECONDS: KeyCache = KeyCache::new("palgraph_node_duration_seconds");
//! let key = NODE_SECONDS.key(&[("node", "answer")]);
//! metric::histogram(&key, 0.25);
//! assert_eq!(key.labels().next().map(|l| l.value()), Some("answer"));
//! // The second time, the same retained key: nothing is built.
//! assert_eq!(NODE_SECONDS.key(&[("node", "answer")]), key);
//! ```

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{OnceLock, RwLock};

use metrics::{Key, Label, Level, Metadata};

/// What the recorder is told about every metric recorded here.
static METADATA: Metadata<'static> = Metadata::new("palgraph", Level::INFO, Some("palgraph"));

/// Records `value` on the histogram `key` (best built once: a `static` key, or one from a
/// [`KeyCache`]).
pub fn histogram(key: &Key, value: f64) {
    metrics::with_recorder(|r| r.register_histogram(key, &METADATA)).record(value);
}

/// Adds `n` to the counter `key`.
pub fn counter(key: &Key, n: u64) {
    metrics::with_recorder(|r| r.register_counter(key, &METADATA)).increment(n);
}

/// The keys of one metric by the values of their labels, each built and retained the first
/// time it is asked for, then shared. Meant for labels of bounded values (names of nodes,
/// routes, models): every distinct set of values is kept for the life of the process.
#[derive(Debug)]
pub struct KeyCache {
    name: &'static str,
    /// Keys by the hash of their label pairs; a hash shared by two sets of labels holds both.
    keys: OnceLock<RwLock<HashMap<u64, Vec<Key>>>>,
}

impl KeyCache {
    /// The keys of the metric `name` (usable in a `static`).
    pub const fn new(name: &'static str) -> Self {
        KeyCache {
            name,
            keys: OnceLock::new(),
        }
    }

    /// The key with these labels (names, then values), in this order.
    pub fn key(&self, labels: &[(&'static str, &str)]) -> Key {
        let keys = self.keys.get_or_init(Default::default);
        let hash = hash_of(labels);
        let found = |map: &HashMap<u64, Vec<Key>>| {
            map.get(&hash)
                .and_then(|ks| ks.iter().find(|k| same_labels(k, labels)).cloned())
        };
        if let Some(k) = found(&keys.read().unwrap_or_else(|e| e.into_inner())) {
            return k;
        }
        let mut map = keys.write().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = found(&map) {
            return k;
        }
        let owned: Vec<Label> = labels
            .iter()
            .map(|(k, v)| Label::new(*k, v.to_string()))
            .collect();
        let key = Key::from_parts(self.name, owned).to_retained();
        map.entry(hash).or_default().push(key.clone());
        key
    }
}

fn hash_of(labels: &[(&'static str, &str)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    labels.hash(&mut h);
    h.finish()
}

fn same_labels(key: &Key, labels: &[(&'static str, &str)]) -> bool {
    let mut have = key.labels();
    labels.iter().all(|(k, v)| {
        have.next()
            .is_some_and(|l| l.key() == *k && l.value() == *v)
    }) && have.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_built_once_per_set_of_label_values() {
        static C: KeyCache = KeyCache::new("palgraph_test_total");
        let a = C.key(&[("route", "/a"), ("status", "200")]);
        let b = C.key(&[("route", "/a"), ("status", "404")]);
        assert_ne!(a, b);
        assert_eq!(C.key(&[("route", "/a"), ("status", "200")]), a);
        assert_eq!(a.name(), "palgraph_test_total");
        let labels: Vec<_> = b.labels().map(|l| (l.key(), l.value())).collect();
        assert_eq!(labels, [("route", "/a"), ("status", "404")]);
        // Another label name with the same value is another key.
        assert_ne!(C.key(&[("path", "/a"), ("status", "200")]), a);
        let map = C.keys.get().unwrap().read().unwrap();
        assert_eq!(map.values().map(Vec::len).sum::<usize>(), 3);
    }

    #[test]
    fn the_same_labels_are_the_same_labels_only() {
        let key = Key::from_parts("m", vec![Label::new("a", "1"), Label::new("b", "2")]);
        assert!(same_labels(&key, &[("a", "1"), ("b", "2")]));
        assert!(!same_labels(&key, &[("a", "1")]));
        assert!(!same_labels(&key, &[("a", "1"), ("b", "2"), ("c", "3")]));
        assert!(!same_labels(&key, &[("a", "1"), ("b", "3")]));
    }
}
