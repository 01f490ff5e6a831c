//! Connections kept out of the pool and reused, for a store's hottest statements.
//!
//! sqlx pings a connection every time it goes back to its pool (a `Sync` message and its
//! answer on Postgres): a statement run on the pool costs a second round trip and, on
//! Postgres, a second wake-up of a backend. The group commits (checkpoints, pending writes,
//! fence advances, the server's run rows) and the single statements of hot request paths
//! (a thread read, a library read) run on [`Reused`] connections instead: up to `max` of
//! them, opened through the pool with its settings and then detached from it (so they never
//! starve it, and closing the pool never waits for them), and reused without a ping unless
//! one sat idle long enough for a server or proxy to have dropped it. A connection whose
//! statement failed or was cancelled is closed, not reused; so is one opened before the
//! database was last seen going away ([`crate::db::connections_lost`]: a restart ended it). They live as long as the pool:
//! once it is closed, every statement fails as it would on the pool.
//!
//! **Generic plans** ([`Reused::with_generic_plans`], Postgres). Postgres plans a prepared
//! statement afresh for each of its first five executions and then keeps a generic plan only
//! if that is estimated no dearer than the custom ones; for the guarded checkpoint insert it
//! never is (a custom plan folds away the branch of its `CASE` the parameters rule out), so
//! every put was planned again, and planning it cost more than running it. Its generic plan
//! is the same index probes (see the checkpointer's `pg_plans_tests`). The checkpoint load
//! meets the same on a grown database: with millions of checkpoint rows Postgres would plan
//! it afresh on every call, and a load would take about twice what it takes on a fresh
//! database; on one generic plan it takes the same. The group commits' connections and the checkpointer's reads run with
//! `plan_cache_mode = force_generic_plan`.
//!
//! **No JIT** (Postgres). Every [`Reused`] connection a Postgres store opens runs with
//! `jit = off`, set by the store on its own session whatever pool it was given: the
//! checkpoint load's recursive query is estimated above `jit_above_cost` once the tables are
//! big (its plan is index probes whatever the size), and compiling it cost more than running
//! it, on every call. [`crate::db::open_postgres`] turns JIT off for a whole pool;
//! a pool a user opened themselves need not.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::{Connection, Database, Executor, Pool};
use tokio::sync::{Semaphore, SemaphorePermit};

/// A connection idle longer than this is pinged before it is used again.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(30);

/// Up to `max` connections opened through a pool and reused without going back to it (see
/// the module docs).
pub struct Reused<DB: Database> {
    pool: Pool<DB>,
    /// Idle connections: each with when it became idle and when it was opened.
    idle: Mutex<Vec<(DB::Connection, Instant, Instant)>>,
    slots: Semaphore,
    /// Run once on every new connection.
    session: Option<&'static str>,
}

impl<DB: Database> std::fmt::Debug for Reused<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reused").finish_non_exhaustive()
    }
}

/// A connection in use; [`Taken::keep`] hands it back for reuse, dropping closes it.
pub struct Taken<'a, DB: Database> {
    owner: &'a Reused<DB>,
    conn: DB::Connection,
    opened: Instant,
    _slot: SemaphorePermit<'a>,
}

impl<DB: Database> Reused<DB> {
    /// At most `max` (at least one) connections, opened through `pool`.
    pub fn new(pool: Pool<DB>, max: usize) -> Self {
        Reused {
            pool,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(max.max(1)),
            session: None,
        }
    }
}

impl<DB: Database> Reused<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    /// A connection opened through the pool and detached from it, after running the
    /// session's settings.
    async fn open(&self) -> Result<DB::Connection, sqlx::Error> {
        let mut conn = self.pool.acquire().await?.detach();
        if let Some(sql) = self.session {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await?;
        }
        Ok(conn)
    }

    /// An idle connection, or one from the pool when none is idle (waiting while `max` are
    /// busy).
    ///
    /// # Errors
    /// When the pool is closed or gives no connection.
    pub async fn take(&self) -> Result<Taken<'_, DB>, sqlx::Error> {
        if self.pool.is_closed() {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
            return Err(sqlx::Error::PoolClosed);
        }
        let slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        // The ping and the pool's connect are boxed: their futures are kilobytes, and every
        // future that awaits this one would carry (and copy) them, several times over, on
        // every call, where nearly every call takes an idle connection without either.
        let (conn, opened) = match idle {
            // Ended by a restart: dropped (its socket closed), a fresh one opened.
            Some((_, _, opened)) if super::lost::opened_before_loss(opened) => {
                (Box::pin(self.open()).await?, Instant::now())
            }
            Some((mut c, since, opened)) if since.elapsed() > CHECK_AFTER_IDLE => {
                match Box::pin(c.ping()).await {
                    Ok(()) => (c, opened),
                    Err(_) => (Box::pin(self.open()).await?, Instant::now()),
                }
            }
            Some((c, _, opened)) => (c, opened),
            None => (Box::pin(self.open()).await?, Instant::now()),
        };
        Ok(Taken {
            owner: self,
            conn,
            opened,
            _slot: slot,
        })
    }
}

#[cfg(feature = "postgres")]
impl Reused<sqlx::Postgres> {
    /// [`Reused::new`] on Postgres, its connections planning prepared statements generically
    /// (see the module docs).
    pub fn with_generic_plans(pool: sqlx::PgPool, max: usize) -> Self {
        Reused {
            session: Some("SET plan_cache_mode = force_generic_plan; SET jit = off"),
            ..Reused::new(pool, max)
        }
    }

    /// [`Reused::new`] on Postgres, its connections never compiling a query (JIT off for
    /// the session, whatever the pool's settings): see the module docs.
    pub fn without_jit(pool: sqlx::PgPool, max: usize) -> Self {
        Reused {
            session: Some("SET jit = off"),
            ..Reused::new(pool, max)
        }
    }
}

impl<DB: Database> Taken<'_, DB> {
    /// Keeps the connection for the next statement (call after a statement succeeded).
    pub fn keep(self) {
        self.owner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((self.conn, Instant::now(), self.opened));
    }
}

impl<DB: Database> Deref for Taken<'_, DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.conn
    }
}

impl<DB: Database> DerefMut for Taken<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A kept connection is the one the next statement gets, outside the pool; a dropped
    /// one is not kept; a closed pool refuses.
    #[tokio::test]
    async fn kept_connections_are_reused_and_a_closed_pool_refuses() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(4)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let reused = Reused::new(pool.clone(), 2);
        let mut c = reused.take().await.unwrap();
        sqlx::query("CREATE TEMP TABLE mine (x INTEGER)")
            .execute(&mut *c)
            .await
            .unwrap();
        c.keep();
        assert_eq!(pool.size(), 0, "detached from the pool");
        // A temporary table lives on its connection only: the same one came back.
        let mut c = reused.take().await.unwrap();
        sqlx::query("INSERT INTO mine VALUES (1)")
            .execute(&mut *c)
            .await
            .unwrap();
        drop(c);
        assert!(reused.idle.lock().unwrap().is_empty(), "dropped, not kept");
        pool.close().await;
        assert!(matches!(reused.take().await, Err(sqlx::Error::PoolClosed)));
    }
}
