//! The Postgres store: items in `store_items`, full-text search on a `tsvector` of their
//! words (ranked by `ts_rank`), vectors beside them in `real[]` ranked by cosine similarity
//! in SQL. The filter's plain equalities narrow rows by JSONB containment (`@>`); the whole
//! filter is then applied to each row.
//!
//! When the database has the pgvector extension (`CREATE EXTENSION vector`, detected at the
//! first search by meaning), the cosine distance is pgvector's `<=>` on the same columns
//! cast to `vector`; without it, the similarity is computed with plain SQL over the arrays.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::{PgPool, Row};

use super::embed::norm;
use super::filter::equalities;
use super::namespace::{self, decode, encode, literal_head, prefix_bounds};
use super::page;
use super::text::{text_of, tokens};
use super::{
    check_key, check_put, check_search, page_namespaces, ttl_ms, IndexConfig, Item, NamespaceQuery,
    PutOptions, SearchItem, SearchQuery, Store, StoreError,
};
use crate::checkpoint::now_ms;
use crate::db::json_without_nul;

/// The text search configuration (stemming, stop words).
const TS_CONFIG: &str = "english";

/// A [`Store`] in a Postgres database (migrated by [`crate::db::open_postgres`]).
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    index: Option<IndexConfig>,
    pgvector: std::sync::Arc<tokio::sync::OnceCell<bool>>,
}

impl PostgresStore {
    /// The store in `pool`'s database (text search only).
    pub fn new(pool: PgPool) -> Self {
        PostgresStore {
            pool,
            index: None,
            pgvector: Default::default(),
        }
    }

    /// Whether the database has the pgvector extension, so that searches by meaning rank
    /// with its `<=>` operator (asked once, then remembered).
    ///
    /// # Errors
    /// When the database cannot be asked.
    pub async fn uses_pgvector(&self) -> Result<bool, StoreError> {
        self.pgvector
            .get_or_try_init(|| async {
                let found: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')",
                )
                .fetch_one(&self.pool)
                .await?;
                tracing::info!(
                    pgvector = found,
                    "the long-term store ranks searches by meaning with {}",
                    if found {
                        "pgvector"
                    } else {
                        "plain SQL over real[] vectors"
                    }
                );
                Ok::<bool, StoreError>(found)
            })
            .await
            .copied()
    }

    /// The same store, searching by meaning with `index`.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }
}

const COLUMNS: &str = "i.namespace, i.key, i.value::text AS value, i.created_at_ms, \
                       i.updated_at_ms, i.expires_at_ms, i.ttl_ms";

/// `$1` exact, `$2` lower, `$3` upper bound of the prefix; `$4` now; `$5` containment.
fn scope_sql(prefix: &[String]) -> &'static str {
    if prefix.is_empty() {
        "(i.expires_at_ms IS NULL OR i.expires_at_ms > $4)
         AND ($5::jsonb IS NULL OR i.value @> $5::jsonb)
         AND $1::text IS NOT NULL AND $2::text IS NOT NULL AND $3::text IS NOT NULL"
    } else {
        "(i.expires_at_ms IS NULL OR i.expires_at_ms > $4)
         AND ($5::jsonb IS NULL OR i.value @> $5::jsonb)
         AND (i.namespace = $1 OR (i.namespace >= $2 AND i.namespace < $3))"
    }
}

fn item_of(row: &sqlx::postgres::PgRow) -> Result<(Item, Option<i64>), StoreError> {
    let value: String = row.try_get("value")?;
    let value: Value =
        serde_json::from_str(&value).map_err(|e| StoreError::Decode(e.to_string()))?;
    let ns: String = row.try_get("namespace")?;
    Ok((
        Item {
            namespace: decode(&ns),
            key: row.try_get("key")?,
            value,
            created_at_ms: row.try_get("created_at_ms")?,
            updated_at_ms: row.try_get("updated_at_ms")?,
            expires_at_ms: row.try_get("expires_at_ms")?,
        },
        row.try_get("ttl_ms")?,
    ))
}

/// A `to_tsquery` text matching any of the words of `q`.
fn ts_query(q: &str) -> Option<String> {
    let words = tokens(q);
    (!words.is_empty()).then(|| words.join(" | "))
}

impl PostgresStore {
    async fn refresh(&self, hits: &mut [(Item, Option<i64>)], now: i64) -> Result<(), StoreError> {
        let (mut nss, mut keys) = (Vec::new(), Vec::new());
        for (item, ttl) in hits.iter_mut() {
            if let Some(t) = ttl {
                item.expires_at_ms = Some(now.saturating_add(*t));
                nss.push(encode(&item.namespace));
                keys.push(item.key.clone());
            }
        }
        if nss.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "UPDATE store_items i SET expires_at_ms = $1 + i.ttl_ms
             FROM unnest($2::text[], $3::text[]) AS h(namespace, key)
             WHERE i.namespace = h.namespace AND i.key = h.key AND i.ttl_ms IS NOT NULL",
        )
        .bind(now)
        .bind(&nss)
        .bind(&keys)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[async_trait]
impl Store for PostgresStore {
    #[tracing::instrument(level = "debug", skip_all, fields(key))]
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
        let body = text_of(&value, &["$".into()]).replace('\0', " ");
        let json = value.to_string();
        sqlx::query(
            "INSERT INTO store_items (namespace, key, value, created_at_ms, updated_at_ms,
                                      ttl_ms, expires_at_ms, search_text, embedding, embedding_norm)
             VALUES ($1, $2, $3::jsonb, $4, $4, $5, $6, to_tsvector($7::regconfig, $8), $9, $10)
             ON CONFLICT (namespace, key) DO UPDATE SET
                 value = EXCLUDED.value,
                 created_at_ms = CASE WHEN store_items.expires_at_ms <= $4
                                      THEN EXCLUDED.created_at_ms
                                      ELSE store_items.created_at_ms END,
                 updated_at_ms = EXCLUDED.updated_at_ms,
                 ttl_ms = EXCLUDED.ttl_ms,
                 expires_at_ms = EXCLUDED.expires_at_ms,
                 search_text = EXCLUDED.search_text,
                 embedding = EXCLUDED.embedding,
                 embedding_norm = EXCLUDED.embedding_norm",
        )
        .bind(encode(namespace))
        .bind(key)
        .bind(json_without_nul(&json).as_ref())
        .bind(now)
        .bind(ttl)
        .bind(ttl.map(|t| now.saturating_add(t)))
        .bind(TS_CONFIG)
        .bind(body)
        .bind(vector.as_deref())
        .bind(vector.as_deref().map(norm))
        .execute(&self.pool)
        .await?;
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
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM store_items i
             WHERE i.namespace = $1 AND i.key = $2
               AND (i.expires_at_ms IS NULL OR i.expires_at_ms > $3)"
        )))
        .bind(encode(namespace))
        .bind(key)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let mut hit = [item_of(&row)?];
        if refresh_ttl {
            self.refresh(&mut hit, now).await?;
        }
        let [(item, _)] = hit;
        Ok(Some(item))
    }

    async fn delete(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        namespace::check_stored(namespace)?;
        check_key(key)?;
        sqlx::query("DELETE FROM store_items WHERE namespace = $1 AND key = $2")
            .bind(encode(namespace))
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError> {
        check_search(query)?;
        let now = now_ms();
        let (exact, lower, upper) = prefix_bounds(&query.namespace_prefix);
        let scope = scope_sql(&query.namespace_prefix);
        let contains = query
            .filter
            .as_ref()
            .and_then(equalities)
            .map(|v| json_without_nul(&v.to_string()).into_owned());
        let semantic = match (&self.index, query.text()) {
            (Some(index), Some(q)) => Some(index.embed_one(q.to_string()).await?),
            _ => None,
        };
        let text = match (&semantic, query.text()) {
            (None, Some(q)) => match ts_query(q) {
                Some(t) => Some(t),
                None => return Ok(Vec::new()),
            },
            _ => None,
        };
        let pgvector = semantic.is_some() && self.uses_pgvector().await?;
        let sql = if pgvector {
            format!(
                "SELECT {COLUMNS},
                        1 - (i.embedding::vector <=> $6::real[]::vector)::float8 AS score
                 FROM store_items i
                 WHERE {scope} AND i.embedding IS NOT NULL AND $7::float8 IS NOT NULL
                   AND cardinality(i.embedding) = cardinality($6::real[])
                 ORDER BY score DESC NULLS LAST, i.updated_at_ms DESC, i.namespace, i.key"
            )
        } else if semantic.is_some() {
            format!(
                "SELECT {COLUMNS},
                        (SELECT sum(a::float8 * b::float8) FROM unnest(i.embedding, $6::real[]) AS t(a, b))
                          / NULLIF(i.embedding_norm * $7, 0) AS score
                 FROM store_items i
                 WHERE {scope} AND i.embedding IS NOT NULL
                   AND cardinality(i.embedding) = cardinality($6::real[])
                 ORDER BY score DESC NULLS LAST, i.updated_at_ms DESC, i.namespace, i.key"
            )
        } else if text.is_some() {
            format!(
                "SELECT {COLUMNS}, ts_rank(i.search_text, q)::float8 AS score
                 FROM store_items i, to_tsquery($6::regconfig, $7) AS q
                 WHERE {scope} AND i.search_text @@ q
                 ORDER BY score DESC, i.updated_at_ms DESC, i.namespace, i.key"
            )
        } else {
            format!(
                "SELECT {COLUMNS}, NULL::float8 AS score FROM store_items i
                 WHERE {scope}
                 ORDER BY i.updated_at_ms DESC, i.namespace, i.key"
            )
        };
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&exact)
            .bind(&lower)
            .bind(&upper)
            .bind(now)
            .bind(contains);
        if let Some(v) = &semantic {
            q = q.bind(v.clone()).bind(norm(v));
        } else if let Some(t) = &text {
            q = q.bind(TS_CONFIG).bind(t.clone());
        }
        let page = page::page_of(q.fetch(&self.pool), query, |row| {
            let (item, ttl) = item_of(row)?;
            Ok((item, ttl, row.try_get("score")?))
        })
        .await?;
        let (mut hits, scores) = page::split(page);
        if query.refresh_ttl {
            self.refresh(&mut hits, now).await?;
        }
        Ok(page::search_items(hits, scores))
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
        let (exact, lower, upper) = prefix_bounds(&head);
        let sql = format!(
            "SELECT DISTINCT i.namespace FROM store_items i WHERE {} ORDER BY i.namespace",
            scope_sql(&head)
        );
        let found: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(&exact)
            .bind(&lower)
            .bind(&upper)
            .bind(now_ms())
            .bind(None::<String>)
            .fetch_all(&self.pool)
            .await?;
        Ok(page_namespaces(found.iter().map(|n| decode(n)), query))
    }

    async fn sweep_expired(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM store_items WHERE expires_at_ms <= $1")
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_queries_match_any_word() {
        assert_eq!(ts_query("Dark & roast!").as_deref(), Some("dark | roast"));
        assert_eq!(ts_query("&!"), None);
    }
}
