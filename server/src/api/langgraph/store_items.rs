//! The long-term store of the Agent Server API (`client.store.*` of both official SDKs),
//! per user: every request sees the caller's own view of the store
//! ([`Scoped`] under the user id), so one user's items are invisible to another.
//!
//! | route | body / query | answer |
//! |---|---|---|
//! | `PUT /store/items` | `{namespace, key, value, index?, ttl?}` (`ttl` in minutes) | 204 |
//! | `GET /store/items` | `?namespace=a.b&key=k&refresh_ttl=` | the item, or `null` |
//! | `DELETE /store/items` | `{namespace, key}` | 204 |
//! | `POST /store/items/search` | `{namespace_prefix, filter?, query?, limit?, offset?, refresh_ttl?}` | `{items}` |
//! | `POST /store/namespaces` | `{prefix?, suffix?, max_depth?, limit?, offset?}` | `{namespaces}` |
//!
//! Namespace labels may not be empty or hold periods (422), as in the official server.
//! Expired items are invisible at once and removed by a sweep every minute.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use palgraph::store::{
    Index, Item, NamespaceQuery, PutOptions, Scoped, SearchItem, SearchQuery, Store,
    StoreError as LongTermError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::common::Params;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::ApiJson;
use crate::api::json_array::JsonArray;
use crate::api::time::iso;
use crate::api::AppState;
use crate::auth::User;

/// How often expired items are removed.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The most items a search returns at once.
const MAX_LIMIT: usize = 1000;

impl From<LongTermError> for ApiError {
    fn from(e: LongTermError) -> Self {
        match e {
            LongTermError::Invalid(m) => ApiError::Invalid(m),
            LongTermError::Embed(e) => ApiError::Unavailable(format!(
                "the embeddings endpoint failed; retry shortly ({e})"
            )),
            LongTermError::Unavailable(e) => ApiError::Unavailable(format!(
                "the database is unreachable for the moment; retry shortly ({e})"
            )),
            other => ApiError::internal(other),
        }
    }
}

/// The caller's view of the store.
fn view(state: &AppState, user: &User) -> ApiResult<Scoped> {
    Ok(Scoped::new(state.long_term.clone(), &user.id)?)
}

/// `PUT /store/items`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PutItem {
    /// Where the item lives (labels: not empty, no periods).
    namespace: Vec<String>,
    /// Its key within the namespace.
    key: String,
    /// The item (a JSON object).
    value: Map<String, Value>,
    /// What to embed for search by meaning: `false` nothing, a list of fields (dotted
    /// paths), or the store's default (absent or null).
    #[serde(default)]
    index: Option<Value>,
    /// Minutes until the item expires (refreshed when it is read); absent: never.
    #[serde(default)]
    ttl: Option<f64>,
}

/// `DELETE /store/items`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct DeleteItem {
    /// The item's namespace.
    namespace: Vec<String>,
    /// Its key.
    key: String,
}

/// The query of `GET /store/items`.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
pub(crate) struct GetItemQuery {
    /// The namespace, its labels joined by periods.
    namespace: String,
    /// The key.
    key: String,
    /// Whether reading refreshes the item's TTL (default true).
    refresh_ttl: Option<bool>,
}

/// `POST /store/items/search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SearchItems {
    /// Items whose namespace starts with these labels (empty: all the caller's).
    namespace_prefix: Vec<String>,
    /// Conditions on the values' fields: `{"field": value}` or `{"field": {"$gt": 1}}`
    /// (`$eq $ne $gt $gte $lt $lte $in $nin`; dotted paths reach nested fields).
    filter: Option<Map<String, Value>>,
    /// Rank by this text (by meaning when the server embeds, else by words).
    query: Option<String>,
    /// At most this many (default 10, at most 1000).
    limit: Option<usize>,
    /// Skip this many first.
    offset: Option<usize>,
    /// Whether the items found have their TTL refreshed (default true).
    refresh_ttl: Option<bool>,
}

/// `POST /store/namespaces`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ListNamespaces {
    /// Namespaces starting with these labels (`*` matches any label).
    prefix: Option<Vec<String>>,
    /// Namespaces ending with these labels (`*` matches any label).
    suffix: Option<Vec<String>>,
    /// Cut namespaces to this many labels.
    max_depth: Option<usize>,
    /// At most this many (default 100, at most 1000).
    limit: Option<usize>,
    /// Skip this many first.
    offset: Option<usize>,
}

/// An item, as the SDKs read it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ItemOut {
    /// Its namespace.
    namespace: Vec<String>,
    /// Its key.
    key: String,
    /// Its value.
    value: Value,
    /// When it was first written (RFC 3339).
    created_at: String,
    /// When it was last written (RFC 3339).
    updated_at: String,
}

impl From<Item> for ItemOut {
    fn from(i: Item) -> Self {
        ItemOut {
            namespace: i.namespace,
            key: i.key,
            value: i.value,
            created_at: iso(i.created_at_ms),
            updated_at: iso(i.updated_at_ms),
        }
    }
}

/// An item found by a search, with its relevance to the query.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchItemOut {
    #[serde(flatten)]
    item: ItemOut,
    /// Relevance to the query (cosine similarity, or the text rank); null without one.
    score: Option<f64>,
}

impl From<SearchItem> for SearchItemOut {
    fn from(s: SearchItem) -> Self {
        SearchItemOut {
            item: s.item.into(),
            score: s.score,
        }
    }
}

/// The answer of a search.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchItemsOut {
    /// The items found, best first.
    items: Vec<SearchItemOut>,
}

/// The answer of a namespace listing.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct NamespacesOut {
    /// The namespaces, in label order.
    namespaces: Vec<Vec<String>>,
}

fn index_of(index: Option<Value>) -> ApiResult<Index> {
    match index {
        None | Some(Value::Null) | Some(Value::Bool(true)) => Ok(Index::Default),
        Some(Value::Bool(false)) => Ok(Index::Off),
        Some(Value::Array(fields)) => fields
            .into_iter()
            .map(|f| match f {
                Value::String(s) if !s.is_empty() => Ok(s),
                other => Err(ApiError::Invalid(format!(
                    "index fields must be non-empty strings, not {other}"
                ))),
            })
            .collect::<ApiResult<Vec<String>>>()
            .map(Index::Fields),
        Some(other) => Err(ApiError::Invalid(format!(
            "index must be false or a list of fields, not {other}"
        ))),
    }
}

fn ttl_of(minutes: Option<f64>) -> ApiResult<Option<Duration>> {
    match minutes {
        None => Ok(None),
        Some(m) if m.is_finite() && m > 0.0 && m < 1e9 => {
            Ok(Some(Duration::from_secs_f64(m * 60.0)))
        }
        Some(m) => Err(ApiError::Invalid(format!(
            "ttl must be a positive number of minutes, not {m}"
        ))),
    }
}

fn limit_of(limit: Option<usize>, default: usize) -> ApiResult<usize> {
    match limit.unwrap_or(default) {
        n if n <= MAX_LIMIT => Ok(n),
        n => Err(ApiError::Invalid(format!(
            "limit must be at most {MAX_LIMIT}, not {n}"
        ))),
    }
}

/// `PUT /store/items`: writes an item.
pub(crate) async fn put_item(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<PutItem>,
) -> ApiResult<StatusCode> {
    let options = PutOptions::default().index(index_of(req.index)?);
    let options = match ttl_of(req.ttl)? {
        Some(t) => options.ttl(t),
        None => options,
    };
    view(&state, &user)?
        .put(&req.namespace, &req.key, Value::Object(req.value), options)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /store/items`: one item, or null.
pub(crate) async fn get_item(
    State(state): State<AppState>,
    user: User,
    params: Params<GetItemQuery>,
) -> ApiResult<Json<Option<ItemOut>>> {
    let Some(key) = params.get("key") else {
        return Err(ApiError::BadRequest("key is required".into()));
    };
    let namespace: Vec<String> = params
        .get("namespace")
        .unwrap_or_default()
        .split('.')
        .map(str::to_string)
        .collect();
    let refresh = params.flag("refresh_ttl")?.unwrap_or(true);
    let item = view(&state, &user)?.get(&namespace, key, refresh).await?;
    Ok(Json(item.map(ItemOut::from)))
}

/// `DELETE /store/items`: removes an item (204 also when there was none).
pub(crate) async fn delete_item(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<DeleteItem>,
) -> ApiResult<StatusCode> {
    view(&state, &user)?
        .delete(&req.namespace, &req.key)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Items read from the store at once: as many as fit about this many bytes, judged by the
/// ones read so far (a search by meaning embeds its query once a read).
const SEARCH_READ_BYTES: usize = 4 * 1024 * 1024;
/// The first read of a search.
const FIRST_SEARCH_READ: usize = 10;

/// `POST /store/items/search`: the items read a part at a time and written out as they
/// are read; the response ends after the item that takes it past the server's response
/// size (the client asks again from the next offset).
pub(crate) async fn search_items(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<SearchItems>,
) -> ApiResult<JsonArray<SearchItemsOut>> {
    let limit = limit_of(req.limit, 10)?;
    let offset = req.offset.unwrap_or(0);
    let mut q = SearchQuery::new(req.namespace_prefix)
        .limit(limit.min(FIRST_SEARCH_READ))
        .offset(offset)
        .refresh_ttl(req.refresh_ttl.unwrap_or(true));
    if let Some(f) = req.filter {
        q = q.filter(f);
    }
    if let Some(text) = req.query {
        q = q.query(text);
    }
    let store = view(&state, &user)?;
    // The first read before the response starts: its errors are answered with a status.
    let first = store.search(&q).await?;
    let wrap = (r#"{"items":"#, "}");
    Ok(JsonArray::spawn_wrapped(
        wrap,
        state.max_response_bytes,
        move |mut sink| async move {
            let (mut items, mut sent) = (first, 0usize);
            loop {
                let asked = q.limit;
                let read = items.len();
                for item in items {
                    sent += 1;
                    if sink.send(&SearchItemOut::from(item)).await.is_err() || sent == limit {
                        return sink.finish().await;
                    }
                }
                // A short read ends the search (and `limit` 0 asks for nothing).
                if read < asked || asked == 0 || sent >= limit {
                    return sink.finish().await;
                }
                let avg = (sink.written() / sink.items().max(1)).max(1);
                q.limit = (SEARCH_READ_BYTES / avg)
                    .clamp(1, MAX_LIMIT)
                    .min(limit - sent);
                q.offset = offset.saturating_add(sent);
                items = match store.search(&q).await {
                    Ok(i) => i,
                    Err(e) => return sink.fail(e).await,
                };
            }
        },
    ))
}

/// `POST /store/namespaces`.
pub(crate) async fn list_namespaces(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<ListNamespaces>,
) -> ApiResult<Json<NamespacesOut>> {
    let mut q = NamespaceQuery::new()
        .limit(limit_of(req.limit, 100)?)
        .offset(req.offset.unwrap_or(0));
    for labels in [&req.prefix, &req.suffix].into_iter().flatten() {
        for l in labels.iter().filter(|l| *l != "*") {
            palgraph::store::validate_label(l)?;
        }
    }
    if let Some(p) = req.prefix.filter(|p| !p.is_empty()) {
        q = q.prefix(p);
    }
    if let Some(s) = req.suffix.filter(|s| !s.is_empty()) {
        q = q.suffix(s);
    }
    if let Some(d) = req.max_depth {
        q = q.max_depth(d);
    }
    let namespaces = view(&state, &user)?.list_namespaces(&q).await?;
    Ok(Json(NamespacesOut { namespaces }))
}

/// Removes expired items every minute until `shutdown`.
pub(crate) fn sweep_expired_items(store: Arc<dyn Store>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(SWEEP_EVERY) => {}
            }
            match store.sweep_expired().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(removed = n, "expired store items removed"),
                Err(e) => tracing::warn!(error = %e, "sweeping expired store items failed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn index_and_ttl_follow_the_sdk_shapes() {
        assert_eq!(index_of(None).unwrap(), Index::Default);
        assert_eq!(index_of(Some(Value::Bool(false))).unwrap(), Index::Off);
        assert_eq!(
            index_of(Some(serde_json::json!(["text", "meta.title"]))).unwrap(),
            Index::Fields(vec!["text".into(), "meta.title".into()])
        );
        assert!(index_of(Some(serde_json::json!("text"))).is_err());
        assert_eq!(ttl_of(Some(0.5)).unwrap(), Some(Duration::from_secs(30)));
        assert!(ttl_of(Some(0.0)).is_err());
        assert!(ttl_of(Some(-1.0)).is_err());
        assert!(limit_of(Some(1001), 10).is_err());
    }
}
