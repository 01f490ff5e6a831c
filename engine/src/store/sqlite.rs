//! The SQLite store: items in `store_items`, their words in an FTS5 index (text search
//! ranked by BM25), vectors beside them ranked in Rust.

use async_trait::async_trait;
use futures_util::TryStreamExt;
use serde_json::Value;
use sqlx::{Row, SqlitePool};

use super::memory::by_score;
use super::namespace::{self, decode, encode, literal_head, prefix_bounds};
use super::page;
use super::text::{text_of, tokens};
use super::{
    check_key, check_put, check_search, cosine, page_namespaces, ttl_ms, IndexConfig, Item,
    NamespaceQuery, PutOptions, SearchItem, SearchQuery, Store, StoreError,
};
use crate::checkpoint::now_ms;

/// A [`Store`] in a SQLite database (migrated by [`crate::db::open_sqlite`]).
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    index: Option<IndexConfig>,
}

impl SqliteStore {
    /// The store in `pool`'s database (text search only).
    pub fn new(pool: SqlitePool) -> Self {
        SqliteStore { pool, index: None }
    }

    /// The same store, searching by meaning with `index`.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }
}

const COLUMNS: &str =
    "i.namespace, i.key, i.value, i.created_at_ms, i.updated_at_ms, i.expires_at_ms, i.ttl_ms";

/// `?1` exact, `?2` lower, `?3` upper bound of the prefix; `?4` now.
fn scope_sql(prefix: &[String]) -> &'static str {
    if prefix.is_empty() {
        "(i.expires_at_ms IS NULL OR i.expires_at_ms > ?4) AND ?1 IS NOT NULL AND ?2 IS NOT NULL AND ?3 IS NOT NULL"
    } else {
        "(i.expires_at_ms IS NULL OR i.expires_at_ms > ?4) \
         AND (i.namespace = ?1 OR (i.namespace >= ?2 AND i.namespace < ?3))"
    }
}

fn item_of(row: &sqlx::sqlite::SqliteRow) -> Result<(Item, Option<i64>), StoreError> {
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

fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn vector_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// An FTS5 query matching any of the words of `q`.
fn fts_query(q: &str) -> Option<String> {
    let words = tokens(q);
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

impl SqliteStore {
    /// Starts the TTL of the items found again from `now`.
    async fn refresh(&self, hits: &mut [(Item, Option<i64>)], now: i64) -> Result<(), StoreError> {
        for (item, ttl) in hits.iter_mut() {
            if let Some(t) = ttl {
                let expires = now.saturating_add(*t);
                sqlx::query(
                    "UPDATE store_items SET expires_at_ms = ?1 WHERE namespace = ?2 AND key = ?3",
                )
                .bind(expires)
                .bind(encode(&item.namespace))
                .bind(&item.key)
                .execute(&self.pool)
                .await?;
                item.expires_at_ms = Some(expires);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Store for SqliteStore {
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
        let body = text_of(&value, &["$".into()]);
        let _turn = crate::db::writers::write_turn(&self.pool).await;
        let mut tx = self.pool.begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO store_items
                 (namespace, key, value, created_at_ms, updated_at_ms, ttl_ms, expires_at_ms, embedding)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)
             ON CONFLICT (namespace, key) DO UPDATE SET
                 value = excluded.value,
                 created_at_ms = CASE WHEN store_items.expires_at_ms <= ?4
                                      THEN excluded.created_at_ms
                                      ELSE store_items.created_at_ms END,
                 updated_at_ms = excluded.updated_at_ms,
                 ttl_ms = excluded.ttl_ms,
                 expires_at_ms = excluded.expires_at_ms,
                 embedding = excluded.embedding
             RETURNING id",
        )
        .bind(encode(namespace))
        .bind(key)
        .bind(value.to_string())
        .bind(now)
        .bind(ttl)
        .bind(ttl.map(|t| now.saturating_add(t)))
        .bind(vector.as_deref().map(vector_bytes))
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM store_items_fts WHERE rowid = ?1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO store_items_fts (rowid, body) VALUES (?1, ?2)")
            .bind(id)
            .bind(body)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
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
             WHERE i.namespace = ?1 AND i.key = ?2
               AND (i.expires_at_ms IS NULL OR i.expires_at_ms > ?3)"
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
        let _turn = crate::db::writers::write_turn(&self.pool).await;
        let mut tx = self.pool.begin().await?;
        let id: Option<i64> = sqlx::query_scalar(
            "DELETE FROM store_items WHERE namespace = ?1 AND key = ?2 RETURNING id",
        )
        .bind(encode(namespace))
        .bind(key)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(id) = id {
            sqlx::query("DELETE FROM store_items_fts WHERE rowid = ?1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError> {
        check_search(query)?;
        let now = now_ms();
        let (exact, lower, upper) = prefix_bounds(&query.namespace_prefix);
        let scope = scope_sql(&query.namespace_prefix);
        let page: Vec<page::Hit> = match (&self.index, query.text()) {
            (Some(index), Some(q)) => {
                // By meaning: every embedded item of the prefix, ranked here.
                let qv = index.embed_one(q.to_string()).await?;
                let sql = format!(
                    "SELECT {COLUMNS}, i.embedding FROM store_items i
                     WHERE {scope} AND i.embedding IS NOT NULL"
                );
                let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&exact)
                    .bind(&lower)
                    .bind(&upper)
                    .bind(now)
                    .fetch(&self.pool);
                let mut all = Vec::new();
                while let Some(row) = rows.try_next().await? {
                    let (item, ttl) = item_of(&row)?;
                    if !page::passes(query, &item) {
                        continue;
                    }
                    let bytes: Vec<u8> = row.try_get("embedding")?;
                    let score = cosine(&qv, &vector_of(&bytes));
                    all.push((
                        SearchItem {
                            item,
                            score: Some(score),
                        },
                        ttl,
                    ));
                }
                all.sort_by(|a, b| by_score(&a.0, &b.0));
                all.into_iter()
                    .skip(query.offset)
                    .take(query.limit)
                    .map(|(hit, ttl)| (hit.item, ttl, hit.score))
                    .collect()
            }
            (_, text) => {
                let fts = text.and_then(fts_query);
                if text.is_some() && fts.is_none() {
                    return Ok(Vec::new());
                }
                let sql = match &fts {
                    Some(_) => format!(
                        "SELECT {COLUMNS}, -bm25(store_items_fts) AS score
                         FROM store_items_fts JOIN store_items i ON i.id = store_items_fts.rowid
                         WHERE store_items_fts MATCH ?5 AND {scope}
                         ORDER BY score DESC, i.updated_at_ms DESC, i.namespace, i.key"
                    ),
                    None => format!(
                        "SELECT {COLUMNS}, NULL AS score FROM store_items i
                         WHERE {scope} AND ?5 IS NULL
                         ORDER BY i.updated_at_ms DESC, i.namespace, i.key"
                    ),
                };
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&exact)
                    .bind(&lower)
                    .bind(&upper)
                    .bind(now)
                    .bind(fts.as_deref())
                    .fetch(&self.pool);
                page::page_of(rows, query, |row| {
                    let (item, ttl) = item_of(row)?;
                    Ok((item, ttl, row.try_get("score")?))
                })
                .await?
            }
        };
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
            .fetch_all(&self.pool)
            .await?;
        Ok(page_namespaces(found.iter().map(|n| decode(n)), query))
    }

    async fn sweep_expired(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let _turn = crate::db::writers::write_turn(&self.pool).await;
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "DELETE FROM store_items_fts WHERE rowid IN
                 (SELECT id FROM store_items WHERE expires_at_ms <= ?1)",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query("DELETE FROM store_items WHERE expires_at_ms <= ?1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_and_queries_quote_words() {
        let v = vec![0.5_f32, -1.25, 3.0];
        assert_eq!(vector_of(&vector_bytes(&v)), v);
        assert_eq!(
            fts_query("Dark \"roast\" OR coffee!").as_deref(),
            Some("\"dark\" OR \"roast\" OR \"or\" OR \"coffee\"")
        );
        assert_eq!(fts_query("?!"), None);
    }
}
