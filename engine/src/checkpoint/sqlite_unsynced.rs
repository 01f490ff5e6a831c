//! Unflushed commits on SQLite ([`super::Flush::WithNext`]).
//!
//! In WAL mode, `synchronous = NORMAL` commits without syncing the WAL; the next commit with
//! `FULL` (palgraph's setting, see [`crate::db::open_sqlite`]) syncs the file, and with it
//! every frame appended before. A write that may wait for the next one lowers its pool
//! connection to `NORMAL` with its `BEGIN` (SQLite refuses the change inside a transaction)
//! and hands it back at its earlier level, so no other writer of the pool commits unsynced
//! by mistake: a connection whose level could not be restored, or whose holder was dropped
//! before it could (a cancelled run), is closed instead.

use std::sync::atomic::{AtomicI64, Ordering};

use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};

use super::CheckpointError;

/// `PRAGMA synchronous`'s `NORMAL`.
const NORMAL: i64 = 1;

/// The pool's `synchronous` level, read once (`-1`: not read yet).
#[derive(Debug)]
pub(super) struct Level(AtomicI64);

impl Default for Level {
    fn default() -> Self {
        Level(AtomicI64::new(-1))
    }
}

/// A pool connection for a write that commits unsynced (see the module docs).
pub(super) struct Unsynced {
    conn: PoolConnection<Sqlite>,
    /// The level to restore; at most [`NORMAL`] means the connection is left as it is.
    level: i64,
    /// Whether the level was restored (else the connection is closed when dropped).
    restored: bool,
}

impl Unsynced {
    /// A connection of `pool` (whose level `known` keeps).
    pub(super) async fn take(pool: &SqlitePool, known: &Level) -> Result<Self, CheckpointError> {
        // Boxed, as in `SqliteCheckpointer::store`.
        let mut conn = Box::pin(pool.acquire()).await?;
        let mut level = known.0.load(Ordering::Relaxed);
        if level < 0 {
            level = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await?;
            known.0.store(level, Ordering::Relaxed);
        }
        Ok(Unsynced {
            conn,
            level,
            restored: level <= NORMAL,
        })
    }

    /// The statement that begins the write transaction, lowering the level first.
    pub(super) fn begin(&self) -> &'static str {
        if self.restored {
            "BEGIN IMMEDIATE"
        } else {
            "PRAGMA synchronous = NORMAL; BEGIN IMMEDIATE"
        }
    }

    /// The connection.
    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }

    /// Restores the connection's level and hands it back to the pool (or closes it when
    /// that fails).
    pub(super) async fn give_back(mut self) {
        if self.restored {
            return;
        }
        let sql = format!("PRAGMA synchronous = {}", self.level);
        self.restored = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut *self.conn)
            .await
            .is_ok();
    }
}

impl Drop for Unsynced {
    fn drop(&mut self) {
        if !self.restored {
            self.conn.close_on_drop();
        }
    }
}

#[cfg(all(test, feature = "testkit"))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testkit::backends::{remove_sqlite_files, temp_db_path};

    /// A pool of one connection (so the next statement gets the one just used), migrated.
    async fn one_connection(path: &std::path::Path) -> SqlitePool {
        let pool = crate::db::open_sqlite(path).await.expect("open");
        pool.close().await;
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(path)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .synchronous(sqlx::sqlite::SqliteSynchronous::Full);
        sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("reopen")
    }

    /// A connection of `pool` inside a write transaction begun unsynced.
    async fn begun(pool: &SqlitePool) -> Unsynced {
        let mut unsynced = Unsynced::take(pool, &Level::default()).await.expect("take");
        let begin = unsynced.begin();
        sqlx::raw_sql(begin)
            .execute(unsynced.conn())
            .await
            .expect("begin");
        unsynced
    }

    async fn level(pool: &SqlitePool) -> i64 {
        sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(pool)
            .await
            .expect("read the level")
    }

    #[tokio::test]
    async fn a_connection_handed_back_commits_synced_again() {
        let path = temp_db_path();
        let pool = one_connection(&path).await;
        assert_eq!(level(&pool).await, 2, "FULL");
        let mut unsynced = begun(&pool).await;
        let conn = unsynced.conn();
        sqlx::raw_sql("COMMIT")
            .execute(&mut *conn)
            .await
            .expect("commit");
        let lowered: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&mut *conn)
            .await
            .expect("read");
        assert_eq!(lowered, NORMAL);
        unsynced.give_back().await;
        assert_eq!(level(&pool).await, 2, "restored on the same connection");
        pool.close().await;
        remove_sqlite_files(&path);
    }

    #[tokio::test]
    async fn a_connection_dropped_before_it_was_handed_back_is_closed() {
        let path = temp_db_path();
        let pool = one_connection(&path).await;
        let unsynced = begun(&pool).await;
        // As when the run holding it is cancelled mid-write.
        drop(unsynced);
        assert_eq!(
            level(&pool).await,
            2,
            "a new connection, at the pool's level"
        );
        pool.close().await;
        remove_sqlite_files(&path);
    }
}
