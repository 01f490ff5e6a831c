//! Postgres connections kept out of the pool for the hottest statements.
//!
//! sqlx pings a connection every time it goes back to its pool (a `Sync` message and its
//! answer), so a statement run on the pool costs a second round trip and a second wake-up
//! of a Postgres backend. The group commits (checkpoints, pending writes, fence advances,
//! the server's run rows) each run one statement at a time, many times a second: they run
//! on a few connections of their own (opened lazily with the pool's settings, at most `max`,
//! never taken from the pool, so they cannot starve it), reused without a ping unless one
//! sat idle long enough for a server or proxy to have dropped it. A connection whose
//! statement failed or was cancelled is closed, not reused. They live as long as the pool:
//! once it is closed, they are closed too and every statement fails as it would on the
//! pool.
//!
//! **Generic plans.** These connections run with `plan_cache_mode = force_generic_plan`.
//! Postgres plans a prepared statement afresh for each of its first five executions and
//! then keeps a generic plan only if that is estimated no dearer than the custom ones; for
//! the guarded checkpoint insert it never is (a custom plan folds away the branch of its
//! `CASE` the parameters rule out), so every put was planned again, and planning it cost
//! more than running it. Its generic plan is the same index probes (see the checkpointer's
//! `pg_plans` test). The other statements run here are keyed lookups and writes whose
//! generic plans are the custom ones.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Up to `max` connections of a writer's own (see the module docs).
#[derive(Debug)]
pub struct OwnConnections {
    pool: PgPool,
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    slots: Arc<Semaphore>,
}

/// A connection idle longer than this is pinged before it is used again.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(30);

/// A connection in use; [`Lease::keep`] hands it back for reuse, dropping closes it.
pub struct Lease<'a> {
    owner: &'a OwnConnections,
    conn: PgConnection,
    _slot: OwnedSemaphorePermit,
}

impl OwnConnections {
    /// At most `max` connections, opened as the pool opens its own.
    pub fn new(pool: PgPool, max: usize) -> Self {
        OwnConnections {
            pool,
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    /// The pool's connect options, with generic plans forced (see the module's docs).
    fn connect_options(&self) -> PgConnectOptions {
        (*self.pool.connect_options())
            .clone()
            .options([("plan_cache_mode", "force_generic_plan")])
    }

    /// An idle connection, or a new one when none is idle (waiting while `max` are busy).
    pub async fn take(&self) -> Result<Lease<'_>, sqlx::Error> {
        if self.pool.is_closed() {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
            return Err(sqlx::Error::PoolClosed);
        }
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some((mut c, since)) if since.elapsed() > CHECK_AFTER_IDLE => match c.ping().await {
                Ok(()) => c,
                Err(_) => self.connect_options().connect().await?,
            },
            Some((c, _)) => c,
            None => self.connect_options().connect().await?,
        };
        Ok(Lease {
            owner: self,
            conn,
            _slot: slot,
        })
    }
}

impl Lease<'_> {
    /// Keeps the connection for the next statement (call after a statement succeeded).
    pub fn keep(self) {
        self.owner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((self.conn, Instant::now()));
    }
}

impl Deref for Lease<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}
