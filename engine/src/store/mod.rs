//! The long-term store: memory that outlives a thread (LangGraph's `BaseStore`).
//!
//! Items are JSON objects filed under a *namespace* (a path of labels such as
//! `["users", "ada", "preferences"]`) and a key. A [`Store`] puts, gets and deletes them,
//! searches a namespace prefix (filtered on the values' fields, ranked by a text query, or by
//! meaning when an [`Embedder`] is configured) and lists namespaces. An item may carry a TTL:
//! it expires that long after it was written or last read (reads refresh it unless asked not
//! to); expired items are invisible at once and removed by [`Store::sweep_expired`].
//!
//! Three backends pass one conformance suite (`palgraph-conformance`'s `store_suite!`): [`MemoryStore`],
//! [`SqliteStore`] (text search with FTS5) and [`PostgresStore`] (full-text search; cosine
//! similarity computed in SQL). [`Scoped`] files everything under a hidden root label, which
//! is how a server keeps one user's items invisible to another. A running node reaches the
//! store its run was given with [`NodeContext::store`](crate::NodeContext::store).
//!
//! ```
//! # use palgraph::store::*;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let store = MemoryStore::new();
//! let ns = vec!["users".to_string(), "ada".to_string()];
//! store.put(&ns, "coffee", serde_json::json!({"likes": "dark roast"}), PutOptions::default()).await?;
//! let hits = store.search(&SearchQuery::new(vec!["users".into()]).query("roast")).await?;
//! assert_eq!(hits[0].item.key, "coffee");
//! # Ok::<(), StoreError>(())
//! # }).unwrap();
//! ```

mod embed;
mod filter;
mod memory;
mod namespace;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod page;
#[cfg(feature = "postgres")]
mod postgres;
mod scoped;
#[cfg(feature = "sqlite")]
mod sqlite;
mod text;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use embed::{cosine, EmbedError, Embedder, IndexConfig};
pub use filter::matches as filter_matches;
pub use memory::MemoryStore;
pub use namespace::{validate_label, validate_namespace};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use scoped::Scoped;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use text::{text_of, tokens};

/// What went wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The request is malformed (a bad namespace or key, a value that is not an object, an
    /// unknown filter operator, ...). Nothing was changed.
    #[error("{0}")]
    Invalid(String),
    /// The embeddings endpoint failed.
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// The database failed for a moment (connection lost, busy, deadlock); trying again
    /// may succeed.
    #[error("store unavailable: {0}")]
    Unavailable(Box<dyn std::error::Error + Send + Sync>),
    /// The database failed.
    #[error("store database error: {0}")]
    Database(Box<dyn std::error::Error + Send + Sync>),
    /// A stored row does not decode.
    #[error("stored item does not decode: {0}")]
    Decode(String),
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if crate::db::is_transient(&e) {
            StoreError::Unavailable(Box::new(e))
        } else {
            StoreError::Database(Box::new(e))
        }
    }
}

/// One stored item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Its namespace.
    pub namespace: Vec<String>,
    /// Its key within the namespace.
    pub key: String,
    /// Its value (a JSON object).
    pub value: Value,
    /// When it was first written (ms since the epoch).
    pub created_at_ms: i64,
    /// When it was last written (ms since the epoch).
    pub updated_at_ms: i64,
    /// When it expires (ms since the epoch), if it has a TTL.
    pub expires_at_ms: Option<i64>,
}

/// An item found by [`Store::search`], with its relevance when the search was ranked by a
/// query (higher is closer: cosine similarity for a search by meaning, the text rank
/// otherwise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Its relevance to the query, if there was one.
    pub score: Option<f64>,
}

/// Which parts of a value are embedded for search by meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Index {
    /// The store's configured fields ([`IndexConfig::fields`]).
    #[default]
    Default,
    /// Not embedded: the item is not found by meaning (it is still found by filters and
    /// text).
    Off,
    /// These fields (dotted paths; `$` for the whole value).
    Fields(Vec<String>),
}

/// Options of [`Store::put`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutOptions {
    /// The item expires this long after it is written or last read (`None`: never).
    pub ttl: Option<Duration>,
    /// What to embed.
    pub index: Index,
}

impl PutOptions {
    /// With a TTL.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// With an index choice.
    #[must_use]
    pub fn index(mut self, index: Index) -> Self {
        self.index = index;
        self
    }
}

/// A search of one namespace prefix.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// Items whose namespace starts with these labels (empty: every item).
    pub namespace_prefix: Vec<String>,
    /// Conditions on the value's fields, LangGraph's shape: `{"field": value}` (equal),
    /// `{"a.b": {"$gt": 3}}` (operators `$eq $ne $gt $gte $lt $lte $in $nin`; dotted
    /// paths reach nested fields).
    pub filter: Option<Map<String, Value>>,
    /// Rank by this text: by meaning with an embedder, else by words (items sharing no word
    /// with it are not found).
    pub query: Option<String>,
    /// At most this many items (default 10).
    pub limit: usize,
    /// Skip this many first.
    pub offset: usize,
    /// Whether the items found have their TTL refreshed (default true).
    pub refresh_ttl: bool,
}

impl SearchQuery {
    /// Every item under `prefix`, newest first, 10 at a time.
    pub fn new(namespace_prefix: Vec<String>) -> Self {
        SearchQuery {
            namespace_prefix,
            filter: None,
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: true,
        }
    }

    /// With a filter.
    #[must_use]
    pub fn filter(mut self, filter: Map<String, Value>) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Ranked by a query.
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// At most `limit` items.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skipping `offset` items.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Whether to refresh the TTL of the items found.
    #[must_use]
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = refresh;
        self
    }

    /// The query text, if it has any word.
    pub(crate) fn text(&self) -> Option<&str> {
        self.query.as_deref().filter(|q| !q.trim().is_empty())
    }
}

/// A listing of namespaces.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct NamespaceQuery {
    /// Namespaces starting with these labels (`*` matches any one label).
    pub prefix: Option<Vec<String>>,
    /// Namespaces ending with these labels (`*` matches any one label).
    pub suffix: Option<Vec<String>>,
    /// Namespaces cut to this many labels (then listed once each).
    pub max_depth: Option<usize>,
    /// At most this many (default 100).
    pub limit: usize,
    /// Skip this many first.
    pub offset: usize,
}

impl NamespaceQuery {
    /// Every namespace, 100 at a time.
    pub fn new() -> Self {
        NamespaceQuery {
            limit: 100,
            ..Default::default()
        }
    }

    /// Starting with `prefix`.
    #[must_use]
    pub fn prefix(mut self, prefix: Vec<String>) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// Ending with `suffix`.
    #[must_use]
    pub fn suffix(mut self, suffix: Vec<String>) -> Self {
        self.suffix = Some(suffix);
        self
    }

    /// Cut to `depth` labels.
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// At most `limit`.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skipping `offset`.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// Long-term memory shared across threads: namespaced JSON items.
///
/// Every backend holds to the same contract (`palgraph-conformance`'s `store_suite!`):
/// - `put` writes or replaces an item (its `created_at` kept when it replaces a live one);
///   the value must be a JSON object;
/// - reads never see an expired item; `get` and `search` refresh the TTL of what they
///   return unless told not to;
/// - `search` returns items of the prefix that pass the filter, ranked by the query when
///   there is one (then by newest update), else newest update first; ties by namespace and
///   key; `offset` and `limit` apply after filtering;
/// - `list_namespaces` returns distinct namespaces in label order.
#[async_trait]
pub trait Store: Send + Sync {
    /// Writes `value` (a JSON object) under `namespace` / `key`.
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        options: PutOptions,
    ) -> Result<(), StoreError>;

    /// The item under `namespace` / `key`, if it exists and has not expired; with
    /// `refresh_ttl`, its expiry starts again from now.
    async fn get(
        &self,
        namespace: &[String],
        key: &str,
        refresh_ttl: bool,
    ) -> Result<Option<Item>, StoreError>;

    /// Removes the item (nothing happens when there is none).
    async fn delete(&self, namespace: &[String], key: &str) -> Result<(), StoreError>;

    /// Items of a namespace prefix (see the trait docs).
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError>;

    /// Namespaces that hold live items (see [`NamespaceQuery`]).
    async fn list_namespaces(&self, query: &NamespaceQuery)
        -> Result<Vec<Vec<String>>, StoreError>;

    /// Removes expired items; returns how many.
    async fn sweep_expired(&self) -> Result<u64, StoreError>;
}

impl std::fmt::Debug for dyn Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dyn Store")
    }
}

/// A TTL in milliseconds (at least 1).
pub(crate) fn ttl_ms(ttl: Option<Duration>) -> Option<i64> {
    ttl.map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX).max(1))
}

/// Checks a put's arguments.
pub(crate) fn check_put(namespace: &[String], key: &str, value: &Value) -> Result<(), StoreError> {
    namespace::check_stored(namespace)?;
    check_key(key)?;
    if !value.is_object() {
        return Err(StoreError::Invalid(
            "an item's value must be a JSON object".into(),
        ));
    }
    Ok(())
}

/// Checks a key: not empty, no control characters.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::Invalid(
            "an item's key must not be empty".into(),
        ));
    }
    if key.chars().any(char::is_control) {
        return Err(StoreError::Invalid(
            "an item's key must not contain control characters".into(),
        ));
    }
    Ok(())
}

/// Checks a search's namespace prefix and filter.
pub(crate) fn check_search(query: &SearchQuery) -> Result<(), StoreError> {
    for label in &query.namespace_prefix {
        namespace::check_stored_label(label)?;
    }
    if let Some(f) = &query.filter {
        filter::check(f)?;
    }
    Ok(())
}

/// Applies a listing's wildcards, depth and page to the sorted distinct namespaces found.
pub(crate) fn page_namespaces(
    found: impl IntoIterator<Item = Vec<String>>,
    query: &NamespaceQuery,
) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for ns in found {
        if let Some(p) = &query.prefix {
            if !namespace::matches_at_start(&ns, p) {
                continue;
            }
        }
        if let Some(s) = &query.suffix {
            if !namespace::matches_at_end(&ns, s) {
                continue;
            }
        }
        let ns = match query.max_depth {
            Some(d) if ns.len() > d => ns[..d].to_vec(),
            _ => ns,
        };
        out.push(ns);
    }
    out.sort();
    out.dedup();
    out.into_iter()
        .skip(query.offset)
        .take(query.limit)
        .collect()
}
