//! Reducers: how an update to a field is folded into its current value.
//!
//! Built in: [`Overwrite`] (the default), [`Append`], [`MergeMap`] and
//! [`AddMessages`](crate::AddMessages). A custom reducer is either a type implementing
//! [`Reducer`] or a plain `fn(&mut T, T)` named with `#[state(reduce_with = my_fn)]`.

use serde::{de::DeserializeOwned, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::hash::Hash;

/// An update that a reducer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct ReduceError {
    /// The field the update was for (filled in by the state).
    pub field: Option<String>,
    /// What was wrong.
    pub message: String,
}

impl ReduceError {
    /// A new error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        ReduceError {
            field: None,
            message: message.into(),
        }
    }

    /// The same error, naming the field it happened in.
    pub fn in_field(mut self, field: &str) -> Self {
        if self.field.is_none() {
            self.field = Some(field.to_string());
        }
        self
    }
}

/// Folds updates of type [`Reducer::Update`] into a value of type `T`.
pub trait Reducer<T> {
    /// What a node writes to the field.
    type Update: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static;
    /// The reducer's name.
    const NAME: &'static str;
    /// Store the field as the updates each write adds (append-style), not as whole values.
    const DELTA: bool = false;
    /// Several writes in one step are combined (false: two parallel writes conflict).
    const ACCUMULATES: bool = true;

    /// Applies `update` to `current`.
    fn reduce(current: &mut T, update: Self::Update) -> Result<(), ReduceError>;

    /// Makes an update deterministic before it is recorded (default: nothing to do).
    fn normalize(_update: &mut Self::Update) {}

    /// Applies several updates in order (used when a stored delta chain is folded);
    /// a reducer may override it with something faster than one `reduce` per update.
    fn reduce_batch(current: &mut T, updates: Vec<Self::Update>) -> Result<(), ReduceError> {
        for u in updates {
            Self::reduce(current, u)?;
        }
        Ok(())
    }
}

/// The default reducer: the update replaces the value. Two writes to one field in the same
/// step are a conflict.
#[derive(Debug, Clone, Copy)]
pub struct Overwrite;

impl<T> Reducer<T> for Overwrite
where
    T: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    type Update = T;
    const NAME: &'static str = "overwrite";
    const ACCUMULATES: bool = false;

    fn reduce(current: &mut T, update: T) -> Result<(), ReduceError> {
        *current = update;
        Ok(())
    }
}

/// Appends the update's items to a `Vec`.
#[derive(Debug, Clone, Copy)]
pub struct Append;

impl<I> Reducer<Vec<I>> for Append
where
    I: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    type Update = Vec<I>;
    const NAME: &'static str = "append";
    const DELTA: bool = true;

    fn reduce(current: &mut Vec<I>, update: Vec<I>) -> Result<(), ReduceError> {
        current.extend(update);
        Ok(())
    }
}

/// Merges the update's entries into a map: new keys are added, existing keys are replaced,
/// nothing is ever removed.
#[derive(Debug, Clone, Copy)]
pub struct MergeMap;

impl<K, V> Reducer<BTreeMap<K, V>> for MergeMap
where
    K: Ord + Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    V: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    type Update = BTreeMap<K, V>;
    const NAME: &'static str = "merge_map";

    fn reduce(current: &mut BTreeMap<K, V>, update: BTreeMap<K, V>) -> Result<(), ReduceError> {
        current.extend(update);
        Ok(())
    }
}

impl<K, V> Reducer<HashMap<K, V>> for MergeMap
where
    K: Eq + Hash + Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    V: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    type Update = HashMap<K, V>;
    const NAME: &'static str = "merge_map";

    fn reduce(current: &mut HashMap<K, V>, update: HashMap<K, V>) -> Result<(), ReduceError> {
        current.extend(update);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overwrite_replaces() {
        let mut v = 1u32;
        <Overwrite as Reducer<u32>>::reduce(&mut v, 7).unwrap();
        assert_eq!(v, 7);
    }

    #[test]
    fn append_extends_in_order() {
        let mut v = vec![1, 2];
        Append::reduce(&mut v, vec![3, 4]).unwrap();
        assert_eq!(v, vec![1, 2, 3, 4]);
    }

    #[test]
    fn merge_map_adds_and_replaces_but_never_clears() {
        let mut m: BTreeMap<String, u32> = [("a".into(), 1), ("b".into(), 2)].into();
        MergeMap::reduce(&mut m, [("b".into(), 3), ("c".into(), 4)].into()).unwrap();
        MergeMap::reduce(&mut m, BTreeMap::new()).unwrap();
        assert_eq!(
            m,
            [("a".into(), 1), ("b".into(), 3), ("c".into(), 4)].into()
        );
    }
}
