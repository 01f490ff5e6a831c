//! Scheduled runs (the Agent Server API's crons): their table (`crons`, the server's
//! migration 3) and the schedules their ticks follow. The scheduler every replica runs
//! lives with the API that creates runs (`api::langgraph::cron_scheduler`): a due tick is
//! taken by compare-and-set under a lease, its run is created through the run queue with
//! the idempotency key `cron:{cron_id}:{tick}`, and the cron's next tick is then advanced
//! by compare-and-set: each tick runs once however many replicas share the database and
//! whichever of them is killed.

pub(crate) mod schedule;

use serde_json::Value;

use crate::database::Database;

pub(crate) use schedule::Schedule;

/// A scheduled run.
#[derive(Clone, Debug, PartialEq)]
pub struct Cron {
    /// Its id (a UUID).
    pub cron_id: String,
    /// The user it belongs to.
    pub owner: String,
    /// The assistant (or graph) it runs.
    pub assistant_id: String,
    /// The thread it runs on; `None`: a new thread each tick (stateless).
    pub thread_id: Option<String>,
    /// The cron expression.
    pub schedule: String,
    /// The IANA time zone of the expression (UTC when `None`).
    pub timezone: Option<String>,
    /// No tick after this instant (ms).
    pub end_time_ms: Option<i64>,
    /// Whether ticks run.
    pub enabled: bool,
    /// A stateless cron's thread after each run: `delete` (default) or `keep`.
    pub on_run_completed: Option<String>,
    /// The run request each tick makes (input, config, context, stream modes, ...).
    pub payload: Value,
    /// The cron's metadata.
    pub metadata: Value,
    /// The next tick (ms); `None` once the schedule has ended.
    pub next_run_at_ms: Option<i64>,
    /// Created (ms).
    pub created_at_ms: i64,
    /// Updated (ms).
    pub updated_at_ms: i64,
}

/// What went wrong with the crons table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CronError {
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored value that does not decode.
    #[error("stored cron does not decode: {0}")]
    Decode(String),
}

/// Filters of a cron search (all optional), for one owner.
#[derive(Clone, Debug, Default)]
pub struct CronFilter {
    /// Only this assistant's.
    pub assistant_id: Option<String>,
    /// Only this thread's.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) ones.
    pub enabled: Option<bool>,
}

type CronRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<i64>,
    i64,
    Option<String>,
    String,
    String,
    Option<i64>,
    i64,
    i64,
);

const COLUMNS: &str = "cron_id, owner, assistant_id, thread_id, schedule, timezone, end_time_ms, \
     enabled, on_run_completed, payload, metadata, next_run_at_ms, created_at_ms, updated_at_ms";

fn decode(r: CronRow) -> Result<Cron, CronError> {
    let json = |s: &str| serde_json::from_str(s).map_err(|e| CronError::Decode(e.to_string()));
    Ok(Cron {
        cron_id: r.0,
        owner: r.1,
        assistant_id: r.2,
        thread_id: r.3,
        schedule: r.4,
        timezone: r.5,
        end_time_ms: r.6,
        enabled: r.7 != 0,
        on_run_completed: r.8,
        payload: json(&r.9)?,
        metadata: json(&r.10)?,
        next_run_at_ms: r.11,
        created_at_ms: r.12,
        updated_at_ms: r.13,
    })
}

/// Runs the same statement on either database's pool (`$1, $2, ...` read alike by both).
macro_rules! on_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            Database::Sqlite($pool) => $body,
            Database::Postgres($pool) => $body,
        }
    };
}

/// The crons table on the server's database.
#[derive(Clone)]
pub struct CronStore {
    db: Database,
}

impl CronStore {
    /// The crons of `db` (migrated by [`Database::open`]).
    pub fn new(db: Database) -> Self {
        CronStore { db }
    }

    /// Stores a new cron.
    ///
    /// # Errors
    /// The database failed.
    pub async fn insert(&self, c: &Cron) -> Result<(), CronError> {
        let sql = format!(
            "INSERT INTO crons ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
        );
        let (payload, metadata) = (c.payload.to_string(), c.metadata.to_string());
        on_pool!(&self.db, p => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(c.cron_id.as_str())
                .bind(c.owner.as_str())
                .bind(c.assistant_id.as_str())
                .bind(c.thread_id.as_deref())
                .bind(c.schedule.as_str())
                .bind(c.timezone.as_deref())
                .bind(c.end_time_ms)
                .bind(i64::from(c.enabled))
                .bind(c.on_run_completed.as_deref())
                .bind(payload.as_str())
                .bind(metadata.as_str())
                .bind(c.next_run_at_ms)
                .bind(c.created_at_ms)
                .bind(c.updated_at_ms)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// Rewrites a cron's fields (not its owner, thread or creation time); drops any claim on
    /// its tick. `false` when it does not exist.
    ///
    /// # Errors
    /// The database failed.
    pub async fn update(&self, c: &Cron) -> Result<bool, CronError> {
        let sql = "UPDATE crons SET assistant_id = $3, schedule = $4, timezone = $5,
                 end_time_ms = $6, enabled = $7, on_run_completed = $8, payload = $9,
                 metadata = $10, next_run_at_ms = $11, updated_at_ms = $12,
                 claimed_tick_ms = NULL, claim_until_ms = NULL
             WHERE cron_id = $1 AND owner = $2";
        let (payload, metadata) = (c.payload.to_string(), c.metadata.to_string());
        let n = on_pool!(&self.db, p => {
            sqlx::query(sql)
                .bind(c.cron_id.as_str())
                .bind(c.owner.as_str())
                .bind(c.assistant_id.as_str())
                .bind(c.schedule.as_str())
                .bind(c.timezone.as_deref())
                .bind(c.end_time_ms)
                .bind(i64::from(c.enabled))
                .bind(c.on_run_completed.as_deref())
                .bind(payload.as_str())
                .bind(metadata.as_str())
                .bind(c.next_run_at_ms)
                .bind(c.updated_at_ms)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(n > 0)
    }

    /// The owner's cron.
    ///
    /// # Errors
    /// The database failed.
    pub async fn get(&self, owner: &str, cron_id: &str) -> Result<Option<Cron>, CronError> {
        let sql = format!("SELECT {COLUMNS} FROM crons WHERE cron_id = $1 AND owner = $2");
        let row: Option<CronRow> = on_pool!(&self.db, p => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(cron_id)
                .bind(owner)
                .fetch_optional(p)
                .await?
        });
        row.map(decode).transpose()
    }

    /// The owner's crons matching `f`, oldest first.
    ///
    /// # Errors
    /// The database failed.
    pub async fn list(&self, owner: &str, f: &CronFilter) -> Result<Vec<Cron>, CronError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM crons WHERE owner = $1
                 AND ($2 IS NULL OR assistant_id = $2)
                 AND ($3 IS NULL OR thread_id = $3)
                 AND ($4 IS NULL OR enabled = $4)
             ORDER BY created_at_ms, cron_id"
        );
        let enabled = f.enabled.map(i64::from);
        let rows: Vec<CronRow> = on_pool!(&self.db, p => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(f.assistant_id.as_deref())
                .bind(f.thread_id.as_deref())
                .bind(enabled)
                .fetch_all(p)
                .await?
        });
        rows.into_iter().map(decode).collect()
    }

    /// Deletes the owner's cron; `false` when there was none.
    ///
    /// # Errors
    /// The database failed.
    pub async fn delete(&self, owner: &str, cron_id: &str) -> Result<bool, CronError> {
        let sql = "DELETE FROM crons WHERE cron_id = $1 AND owner = $2";
        let n = on_pool!(&self.db, p => {
            sqlx::query(sql).bind(cron_id).bind(owner).execute(p).await?.rows_affected()
        });
        Ok(n > 0)
    }

    /// Deletes the owner's crons on a thread (the thread is going); how many went.
    ///
    /// # Errors
    /// The database failed.
    pub async fn delete_for_thread(&self, owner: &str, thread_id: &str) -> Result<u64, CronError> {
        let sql = "DELETE FROM crons WHERE thread_id = $1 AND owner = $2";
        let n = on_pool!(&self.db, p => {
            sqlx::query(sql).bind(thread_id).bind(owner).execute(p).await?.rows_affected()
        });
        Ok(n)
    }

    /// Up to `limit` enabled crons whose tick is due at `now` and that no live claim holds.
    ///
    /// # Errors
    /// The database failed.
    pub async fn due(&self, now: i64, limit: i64) -> Result<Vec<Cron>, CronError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM crons WHERE enabled = 1 AND next_run_at_ms <= $1
                 AND (claim_until_ms IS NULL OR claim_until_ms < $1)
             ORDER BY next_run_at_ms LIMIT $2"
        );
        let rows: Vec<CronRow> = on_pool!(&self.db, p => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(limit)
                .fetch_all(p)
                .await?
        });
        rows.into_iter().map(decode).collect()
    }

    /// Takes the cron's `tick` until `until` (compare-and-set): `true` for the one caller
    /// that got it while it was still the cron's next tick and no live claim held it.
    ///
    /// # Errors
    /// The database failed.
    pub async fn claim(
        &self,
        cron_id: &str,
        tick: i64,
        now: i64,
        until: i64,
    ) -> Result<bool, CronError> {
        let sql = "UPDATE crons SET claimed_tick_ms = $2, claim_until_ms = $4
             WHERE cron_id = $1 AND next_run_at_ms = $2 AND enabled = 1
                 AND (claim_until_ms IS NULL OR claim_until_ms < $3)";
        let n = on_pool!(&self.db, p => {
            sqlx::query(sql)
                .bind(cron_id)
                .bind(tick)
                .bind(now)
                .bind(until)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(n == 1)
    }

    /// Whether the claim taken on `tick` until `until` still holds at `now` (nobody took the
    /// tick over after it ran out): a replica that stalled past its claim makes no run.
    ///
    /// # Errors
    /// The database failed.
    pub async fn holds(
        &self,
        cron_id: &str,
        tick: i64,
        until: i64,
        now: i64,
    ) -> Result<bool, CronError> {
        let sql = "SELECT count(*) FROM crons WHERE cron_id = $1 AND next_run_at_ms = $2
                 AND claimed_tick_ms = $2 AND claim_until_ms = $3 AND claim_until_ms > $4";
        let n: i64 = on_pool!(&self.db, p => {
            sqlx::query_scalar(sql)
                .bind(cron_id)
                .bind(tick)
                .bind(until)
                .bind(now)
                .fetch_one(p)
                .await?
        });
        Ok(n == 1)
    }

    /// Moves the cron from `tick` to `next` (compare-and-set on `tick`) and ends the claim.
    ///
    /// # Errors
    /// The database failed.
    pub async fn advance(
        &self,
        cron_id: &str,
        tick: i64,
        next: Option<i64>,
    ) -> Result<bool, CronError> {
        let sql = "UPDATE crons SET next_run_at_ms = $3, claimed_tick_ms = NULL,
                 claim_until_ms = NULL
             WHERE cron_id = $1 AND next_run_at_ms = $2";
        let n = on_pool!(&self.db, p => {
            sqlx::query(sql)
                .bind(cron_id)
                .bind(tick)
                .bind(next)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(n == 1)
    }
}
