//! The SQLite side of the load benchmark (`--backend sqlite`): a fresh file in a temporary
//! directory for the server (`PALGRAPH_DB`, created and migrated by the server), the
//! benchmark's own pool on the same file, growing it to a given number of finished runs
//! (copies of a real thread's rows, like `database::grow` on Postgres), and how big it is.
//!
//! The file is grown while the server is **stopped** (the caller stops it, grows, starts it
//! again): the server's pool waits at most its busy timeout (10 s) for the write lock, and a
//! batch of 50,000 copies holds it longer, so growing under an idle but running server
//! could fail its background writes. During loads the benchmark only reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

/// The server's SQLite file and the benchmark's pool on it; the directory is removed when
/// this is dropped.
pub struct SqliteDb {
    dir: PathBuf,
    path: PathBuf,
    pool: SqlitePool,
}

impl Drop for SqliteDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A table holding a thread's rows, copied when the database grows: every one with a
/// `thread_id` column except `run_events` (a finished run's events expire), and
/// `checkpoint_fences`, whose `key` is the thread's id (the epoch its last run's worker
/// raised).
pub(crate) struct ThreadTable {
    /// The table.
    pub name: String,
    /// Its columns, in order.
    pub cols: Vec<String>,
    /// The column holding the thread's id.
    pub key: &'static str,
}

impl ThreadTable {
    /// The table, if it holds a thread's rows.
    pub fn new(name: String, cols: Vec<String>) -> Option<ThreadTable> {
        let has = |c: &str| cols.iter().any(|x| x == c);
        let key = match name.as_str() {
            "run_events" => return None,
            "checkpoint_fences" if has("key") => "key",
            _ if has("thread_id") => "thread_id",
            _ => return None,
        };
        Some(ThreadTable { name, cols, key })
    }

    /// The column list of a copy and what each column gets: the copy's thread id and run
    /// id (SQL expressions of the series' number) for those, the template row's `t` value
    /// for every other column.
    pub fn copy_columns(&self, thread_id: &str, run_id: &str) -> (String, String) {
        let select: Vec<String> = self
            .cols
            .iter()
            .map(|c| match c.as_str() {
                c if c == self.key => thread_id.to_string(),
                "run_id" => run_id.to_string(),
                other => format!("t.\"{other}\""),
            })
            .collect();
        let names: Vec<String> = self.cols.iter().map(|c| format!("\"{c}\"")).collect();
        (names.join(", "), select.join(", "))
    }
}

/// How big the file is at one moment (see [`SqliteDb::mark`]).
#[derive(Clone, Copy, Debug)]
pub struct FileMark {
    /// Pages in use or free, times the page size, as the newest snapshot sees it (pages
    /// still only in the WAL included).
    pub logical_bytes: i64,
    /// Bytes of the main file plus the `-wal` file on disk.
    pub file_bytes: i64,
    /// Bytes of the `-wal` file alone.
    pub wal_bytes: i64,
}

impl SqliteDb {
    /// A fresh temporary directory for `palgraph.db`, and a (lazy) pool on it: the file
    /// is created by the server when it starts.
    pub fn create() -> anyhow::Result<SqliteDb> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("palgraph-loadbench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let path = dir.join("palgraph.db");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // The benchmark's own writes (growing) need not survive a power cut.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(60))
            // 256 MiB of page cache: growing touches every index's rightmost pages.
            .pragma("cache_size", "-262144")
            .foreign_keys(false);
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .test_before_acquire(false)
            .connect_lazy_with(options);
        Ok(SqliteDb { dir, path, pool })
    }

    /// The file the server opens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs in the file.
    pub async fn runs(&self) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM runs")
            .fetch_one(&self.pool)
            .await?)
    }

    /// The file's size now.
    pub async fn mark(&self) -> anyhow::Result<FileMark> {
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(&self.pool)
            .await?;
        let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(&self.pool)
            .await?;
        let len = |suffix: &str| {
            let mut p = self.path.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(p).map(|m| m.len() as i64).unwrap_or(0)
        };
        let wal_bytes = len("-wal");
        Ok(FileMark {
            logical_bytes: pages * page_size,
            file_bytes: len("") + wal_bytes,
            wal_bytes,
        })
    }

    /// The tables holding a thread's rows (see [`ThreadTable`]).
    async fn thread_tables(&self) -> anyhow::Result<Vec<ThreadTable>> {
        let rows = sqlx::query(
            "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
               AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%'
             ORDER BY m.name, p.cid",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut tables: Vec<(String, Vec<String>)> = Vec::new();
        for r in rows {
            let (t, c): (String, String) = (r.get("t"), r.get("c"));
            match tables.last_mut() {
                Some((name, cols)) if *name == t => cols.push(c),
                _ => tables.push((t, vec![c])),
            }
        }
        Ok(tables
            .into_iter()
            .filter_map(|(name, cols)| ThreadTable::new(name, cols))
            .collect())
    }

    /// Grows the file to at least `runs` finished runs, each on a thread of its own with the
    /// checkpoints of a real chat turn (copies of the thread of a finished single-run
    /// thread), in transactions of 50,000 copies, then `ANALYZE`. The server must not be
    /// running. Returns how long it took, or `None` when the file was already that big. With
    /// a `limit`, no batch starts after that long (the file may stay smaller).
    pub async fn grow(
        &self,
        runs: i64,
        limit: Option<Duration>,
    ) -> anyhow::Result<Option<Duration>> {
        let have = self.runs().await?;
        if have >= runs {
            return Ok(None);
        }
        let template: String = sqlx::query_scalar(
            "SELECT thread_id FROM runs WHERE status = 'success' GROUP BY thread_id
             HAVING count(*) = 1 LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await?
        .context("no finished chat turn to copy: run a load first")?;
        let t0 = Instant::now();
        let tables = self.thread_tables().await?;
        // One connection throughout: the template's rows go to TEMP tables of its own
        // first, so that no INSERT reads the table it writes (SQLite would buffer each
        // batch in a temporary table to keep it from seeing its own rows: twice as slow).
        let mut conn = self.pool.acquire().await?;
        for ThreadTable {
            name: table, key, ..
        } in &tables
        {
            // The names come from the file's own catalog, not from a user.
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP TABLE IF EXISTS temp.\"template_{table}\""
            )))
            .execute(&mut *conn)
            .await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "CREATE TEMP TABLE \"template_{table}\" AS SELECT * FROM \"{table}\" WHERE \"{key}\" = ?1"
            )))
            .bind(&template)
            .execute(&mut *conn)
            .await
            .with_context(|| format!("copying the template's rows of {table}"))?;
        }
        // Ids of the copies, the same as on Postgres: UUID-shaped, never minted by the
        // server (its thread ids are random UUIDv4s, its run ids UUIDv7s of now); run ids
        // sort as the oldest UUIDv7s (their events, had they any, would have expired).
        let thread_id = "'00000000-0000-4000-8000-' || printf('%012x', s.i)";
        let run_id = "'00000000-0000-7000-9000-' || printf('%012x', s.i)";
        const BATCH: i64 = 50_000;
        let mut from = have;
        while from < runs {
            if from > have && limit.is_some_and(|l| t0.elapsed() >= l) {
                break;
            }
            let to = (from + BATCH).min(runs) - 1;
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            for t in &tables {
                let table = &t.name;
                let (names, select) = t.copy_columns(thread_id, run_id);
                // The series drives the loop (CROSS JOIN keeps that order), so the copies
                // go into every index in ascending order.
                let sql = format!(
                    "WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
                     INSERT INTO main.\"{table}\" ({names}) SELECT {select} FROM s
                     CROSS JOIN temp.\"template_{table}\" AS t",
                );
                // The names come from the file's own catalog, not from a user.
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(from)
                    .bind(to)
                    .execute(&mut *tx)
                    .await
                    .with_context(|| format!("growing {table}"))?;
            }
            tx.commit().await?;
            from = to + 1;
        }
        for ThreadTable { name: table, .. } in &tables {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP TABLE temp.\"template_{table}\""
            )))
            .execute(&mut *conn)
            .await?;
        }
        drop(conn);
        sqlx::query("ANALYZE").execute(&self.pool).await?;
        // Leave a short WAL behind, as a file that was not just grown in bulk would have.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await?;
        Ok(Some(t0.elapsed()))
    }

    /// Rows and bytes of the file's tables (with their indexes; from `dbstat`), and the
    /// file's own size.
    pub async fn size(&self) -> anyhow::Result<Value> {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        // dbstat reads every page; bundled SQLite has it, a system one may not.
        let bytes: Vec<(String, i64)> = sqlx::query_as(
            "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name
             GROUP BY m.tbl_name",
        )
        .fetch_all(&self.pool)
        .await
        .unwrap_or_default();
        let mut tables = serde_json::Map::new();
        for t in names {
            // The names come from the file's own catalog, not from a user.
            let rows: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM \"{t}\"")))
                    .fetch_one(&self.pool)
                    .await?;
            let b = bytes.iter().find(|(n, _)| *n == t).map(|(_, b)| *b);
            tables.insert(t, json!({"bytes": b, "rows": rows}));
        }
        let m = self.mark().await?;
        Ok(json!({
            "tables": tables,
            "logical_bytes": m.logical_bytes,
            "file_bytes": m.file_bytes,
            "wal_bytes": m.wal_bytes,
        }))
    }

    /// The SQLite library's version and the file's settings, for the report.
    pub async fn meta(&self) -> anyhow::Result<Value> {
        let version: String = sqlx::query_scalar("SELECT sqlite_version()")
            .fetch_one(&self.pool)
            .await?;
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&self.pool)
            .await?;
        let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(&self.pool)
            .await?;
        Ok(json!({
            "version": version,
            "journal_mode": journal,
            "page_size": page_size,
            "server_synchronous": "FULL (palgraph::db::open_sqlite)",
            "file": self.path.display().to_string(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_tables_are_those_naming_a_thread_but_run_events() {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let t = ThreadTable::new("runs".into(), cols(&["run_id", "thread_id"]));
        assert_eq!(t.map(|t| t.key), Some("thread_id"));
        let t = ThreadTable::new("checkpoint_fences".into(), cols(&["key", "epoch"]));
        assert_eq!(t.map(|t| t.key), Some("key"));
        assert!(ThreadTable::new("run_events".into(), cols(&["run_id", "thread_id"])).is_none());
        assert!(ThreadTable::new("documents".into(), cols(&["id", "key"])).is_none());
    }

    #[tokio::test]
    async fn growing_copies_a_finished_thread_under_new_ids() -> anyhow::Result<()> {
        let db = SqliteDb::create()?;
        sqlx::raw_sql(
            "CREATE TABLE threads (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL,
                 status TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
                 vals TEXT NOT NULL, PRIMARY KEY (thread_id, checkpoint_id)) WITHOUT ROWID;
             CREATE TABLE checkpoint_fences (key TEXT PRIMARY KEY, epoch INTEGER NOT NULL);
             CREATE TABLE run_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL,
                 thread_id TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
             INSERT INTO threads VALUES ('t1', 'anon');
             INSERT INTO runs VALUES ('r1', 't1', 'success');
             INSERT INTO checkpoints VALUES ('t1', 'c1', '{}'), ('t1', 'c2', '{}');
             INSERT INTO checkpoint_fences VALUES ('t1', 3);
             INSERT INTO run_events VALUES ('r1', 1, 't1');",
        )
        .execute(&db.pool)
        .await?;
        assert!(db.grow(5, None).await?.is_some());
        assert!(db.grow(5, None).await?.is_none(), "already that big");
        assert_eq!(db.runs().await?, 5);
        let count = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql).fetch_one(&db.pool);
        assert_eq!(count("SELECT count(*) FROM checkpoints").await?, 10);
        assert_eq!(count("SELECT count(*) FROM checkpoint_fences").await?, 5);
        assert_eq!(count("SELECT count(*) FROM run_events").await?, 1);
        let ids: Vec<(String, String)> =
            sqlx::query_as("SELECT run_id, thread_id FROM runs WHERE run_id <> 'r1' ORDER BY 1")
                .fetch_all(&db.pool)
                .await?;
        assert_eq!(
            ids.first(),
            Some(&(
                "00000000-0000-7000-9000-000000000001".to_string(),
                "00000000-0000-4000-8000-000000000001".to_string()
            ))
        );
        assert_eq!(
            ids.last().map(|(_, t)| t.as_str()),
            Some("00000000-0000-4000-8000-000000000004")
        );
        assert!(db.size().await?["tables"]["checkpoints"]["rows"] == 10);
        Ok(())
    }
}
