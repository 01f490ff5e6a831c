//! The database side of the load benchmark: growing the server's schema to a given number
//! of finished runs (fast, by copying a real thread's rows in bulk), and what Postgres spends
//! (CPU of its processes, bytes its tables grew by).

use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::{PgPool, Row};

use crate::database_sqlite::ThreadTable;

/// Tables that hold a thread's rows and are copied when the database grows (see
/// [`ThreadTable`]). Run events are not: a finished run's events expire
/// (`PALGRAPH_EVENT_RETENTION_SECS`).
async fn thread_tables(pool: &PgPool) -> anyhow::Result<Vec<ThreadTable>> {
    let rows = sqlx::query(
        "SELECT table_name::text AS t, array_agg(column_name::text ORDER BY ordinal_position) AS cols
         FROM information_schema.columns
         WHERE table_schema = current_schema()
         GROUP BY table_name
         ORDER BY table_name",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .iter()
        .filter_map(|r| ThreadTable::new(r.get::<String, _>("t"), r.get::<Vec<String>, _>("cols")))
        .collect())
}

/// Grows the schema to at least `runs` finished runs, each on a thread of its own with the
/// checkpoints of a real chat turn (copies of the thread of a finished run made by the
/// load). Returns how long it took, or `None` when the schema was already that big. With a
/// `limit`, no batch starts after that long (the schema may stay smaller).
pub(crate) async fn grow(
    pool: &PgPool,
    runs: i64,
    limit: Option<Duration>,
) -> anyhow::Result<Option<Duration>> {
    let have: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(pool)
        .await?;
    if have >= runs {
        return Ok(None);
    }
    let template: String = sqlx::query_scalar(
        "SELECT thread_id FROM runs WHERE status = 'success' GROUP BY thread_id
         HAVING count(*) = 1 LIMIT 1",
    )
    .fetch_optional(pool)
    .await?
    .context("no finished chat turn to copy: run a load first")?;
    let t0 = Instant::now();
    let tables = thread_tables(pool).await?;
    // Ids of the copies: UUID-shaped, never minted by the server; run ids sort as the
    // oldest UUIDv7s (their events, had they any, would have expired).
    let thread_id = "'00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0')";
    let run_id = "'00000000-0000-7000-9000-' || lpad(to_hex(i), 12, '0')";
    const BATCH: i64 = 50_000;
    let mut from = have;
    while from < runs {
        if from > have && limit.is_some_and(|l| t0.elapsed() >= l) {
            break;
        }
        let to = (from + BATCH).min(runs) - 1;
        let mut tx = pool.begin().await?;
        for t in &tables {
            let (table, key) = (&t.name, t.key);
            let (names, select) = t.copy_columns(thread_id, run_id);
            let sql = format!(
                "INSERT INTO \"{table}\" ({names}) SELECT {select} FROM generate_series($1::bigint, $2::bigint) AS i,
                 \"{table}\" t WHERE t.\"{key}\" = $3",
            );
            // The names come from the schema's own catalog, not from a user.
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(from)
                .bind(to)
                .bind(&template)
                .execute(&mut *tx)
                .await
                .with_context(|| format!("growing {table}"))?;
        }
        tx.commit().await?;
        from = to + 1;
    }
    sqlx::query("ANALYZE").execute(pool).await?;
    Ok(Some(t0.elapsed()))
}

/// Rows and bytes of the schema's tables (with their indexes and TOAST).
pub(crate) async fn size(pool: &PgPool) -> anyhow::Result<serde_json::Value> {
    let rows = sqlx::query(
        "SELECT c.relname::text AS t, pg_total_relation_size(c.oid) AS bytes, c.reltuples::bigint AS rows
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind = 'r'",
    )
    .fetch_all(pool)
    .await?;
    let mut out = serde_json::Map::new();
    for r in rows {
        out.insert(
            r.get::<String, _>("t"),
            serde_json::json!({"bytes": r.get::<i64, _>("bytes"), "rows_estimate": r.get::<i64, _>("rows")}),
        );
    }
    Ok(serde_json::Value::Object(out))
}

/// Bytes of the named tables (with their indexes and TOAST).
pub(crate) async fn bytes(pool: &PgPool, tables: &[&str]) -> anyhow::Result<i64> {
    let mut total = 0;
    for t in tables {
        let b: Option<i64> = sqlx::query_scalar("SELECT pg_total_relation_size(to_regclass($1))")
            .bind(*t)
            .fetch_one(pool)
            .await?;
        total += b.unwrap_or(0);
    }
    Ok(total)
}

/// CPU seconds (user + system) used so far by every `postgres` process of this machine.
pub(crate) fn postgres_cpu_s() -> f64 {
    let mut ticks = 0u64;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if !head.ends_with("(postgres") {
            continue;
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        ticks += get(11) + get(12);
    }
    ticks as f64 / 100.0
}
