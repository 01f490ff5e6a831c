//! The in-memory store (tests, single-process tools): everything in a map, ranked in Rust.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use serde_json::Value;

use super::embed::cosine;
use super::filter::matches;
use super::namespace::{has_prefix, literal_head};
use super::text::{text_of, tokens};
use super::{
    check_key, check_put, check_search, namespace, page_namespaces, ttl_ms, IndexConfig, Item,
    NamespaceQuery, PutOptions, SearchItem, SearchQuery, Store, StoreError,
};
use crate::checkpoint::now_ms;

struct Entry {
    item: Item,
    ttl_ms: Option<i64>,
    vector: Option<Vec<f32>>,
    words: HashSet<String>,
}

impl Entry {
    fn live(&self, now: i64) -> bool {
        self.item.expires_at_ms.is_none_or(|e| e > now)
    }
}

type Key = (Vec<String>, String);

/// A [`Store`] held in memory.
#[derive(Default)]
pub struct MemoryStore {
    items: RwLock<BTreeMap<Key, Entry>>,
    index: Option<IndexConfig>,
}

impl MemoryStore {
    /// An empty store (text search only).
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store, searching by meaning with `index`.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<Key, Entry>> {
        self.items.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<Key, Entry>> {
        self.items.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// Newest update first, then namespace and key.
pub(crate) fn recency(a: &Item, b: &Item) -> Ordering {
    b.updated_at_ms
        .cmp(&a.updated_at_ms)
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.key.cmp(&b.key))
}

/// Highest score first, then [`recency`].
pub(crate) fn by_score(a: &SearchItem, b: &SearchItem) -> Ordering {
    let (x, y) = (a.score.unwrap_or(f64::MIN), b.score.unwrap_or(f64::MIN));
    y.partial_cmp(&x)
        .unwrap_or(Ordering::Equal)
        .then_with(|| recency(&a.item, &b.item))
}

#[async_trait]
impl Store for MemoryStore {
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        options: PutOptions,
    ) -> Result<(), StoreError> {
        check_put(namespace, key, &value)?;
        let vector = match &self.index {
            Some(index) => index.embed_item(&value, &options.index).await?,
            None => None,
        };
        let now = now_ms();
        let ttl = ttl_ms(options.ttl);
        let words = tokens(&text_of(&value, &["$".into()]))
            .into_iter()
            .collect();
        let mut items = self.write();
        let k = (namespace.to_vec(), key.to_string());
        let created = items
            .get(&k)
            .filter(|e| e.live(now))
            .map_or(now, |e| e.item.created_at_ms);
        items.insert(
            k,
            Entry {
                item: Item {
                    namespace: namespace.to_vec(),
                    key: key.to_string(),
                    value,
                    created_at_ms: created,
                    updated_at_ms: now,
                    expires_at_ms: ttl.map(|t| now.saturating_add(t)),
                },
                ttl_ms: ttl,
                vector,
                words,
            },
        );
        Ok(())
    }

    async fn get(
        &self,
        namespace: &[String],
        key: &str,
        refresh_ttl: bool,
    ) -> Result<Option<Item>, StoreError> {
        namespace::check_stored(namespace)?;
        check_key(key)?;
        let now = now_ms();
        let mut items = self.write();
        let Some(e) = items
            .get_mut(&(namespace.to_vec(), key.to_string()))
            .filter(|e| e.live(now))
        else {
            return Ok(None);
        };
        if let (true, Some(t)) = (refresh_ttl, e.ttl_ms) {
            e.item.expires_at_ms = Some(now.saturating_add(t));
        }
        Ok(Some(e.item.clone()))
    }

    async fn delete(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        namespace::check_stored(namespace)?;
        check_key(key)?;
        self.write().remove(&(namespace.to_vec(), key.to_string()));
        Ok(())
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError> {
        check_search(query)?;
        let query_vector = match (&self.index, query.text()) {
            (Some(index), Some(q)) => Some(index.embed_one(q.to_string()).await?),
            _ => None,
        };
        let query_words: Option<HashSet<String>> = match (&query_vector, query.text()) {
            (None, Some(q)) => Some(tokens(q).into_iter().collect()),
            _ => None,
        };
        let now = now_ms();
        let mut found: Vec<SearchItem> = Vec::new();
        {
            let items = self.read();
            for e in items.values() {
                if !e.live(now) || !has_prefix(&e.item.namespace, &query.namespace_prefix) {
                    continue;
                }
                if let Some(f) = &query.filter {
                    if !matches(f, &e.item.value) {
                        continue;
                    }
                }
                let score = if let Some(qv) = &query_vector {
                    match &e.vector {
                        Some(v) => Some(cosine(qv, v)),
                        None => continue,
                    }
                } else if let Some(words) = &query_words {
                    let hits = words.iter().filter(|w| e.words.contains(*w)).count();
                    if hits == 0 {
                        continue;
                    }
                    Some(hits as f64)
                } else {
                    None
                };
                found.push(SearchItem {
                    item: e.item.clone(),
                    score,
                });
            }
        }
        found.sort_by(by_score);
        let mut page: Vec<SearchItem> = found
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect();
        if query.refresh_ttl {
            let mut items = self.write();
            for hit in &mut page {
                let k = (hit.item.namespace.clone(), hit.item.key.clone());
                if let Some(e) = items.get_mut(&k) {
                    if let Some(t) = e.ttl_ms {
                        e.item.expires_at_ms = Some(now.saturating_add(t));
                        hit.item.expires_at_ms = e.item.expires_at_ms;
                    }
                }
            }
        }
        Ok(page)
    }

    async fn list_namespaces(
        &self,
        query: &NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        let head = query
            .prefix
            .as_deref()
            .map(literal_head)
            .unwrap_or_default();
        let now = now_ms();
        let found: Vec<Vec<String>> = self
            .read()
            .values()
            .filter(|e| e.live(now) && has_prefix(&e.item.namespace, &head))
            .map(|e| e.item.namespace.clone())
            .collect();
        Ok(page_namespaces(found, query))
    }

    async fn sweep_expired(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let mut items = self.write();
        let before = items.len();
        items.retain(|_, e| e.live(now));
        Ok((before - items.len()) as u64)
    }
}
