//! Databases: opening SQLite and Postgres pools the way palgraph needs them, and the
//! engine's own tables ([`MIGRATIONS`]: checkpoints, their pending writes, writer fences),
//! applied when a pool is opened. Other crates declare their tables' migrations the same
//! way ([`migrate::Migrator`]) and apply them on the pool.
//!
//! SQLite runs in WAL mode with `synchronous = FULL`: a commit is on disk before it returns,
//! like Postgres with its default `synchronous_commit = on`.

pub mod batch;
mod lost;
pub mod migrate;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod reuse;
#[cfg(feature = "sqlite")]
pub mod writers;

use migrate::{Migration, Migrator};

/// The engine's tables (`migrations/engine/`): checkpoints and their pending writes (1),
/// writer fences (2), cached node results (3), the long-term store's items (4); on Postgres,
/// values compressed with lz4 (5), checkpoint records stored as text (6).
pub const MIGRATIONS: Migrator = Migrator {
    scope: "engine",
    postgres: &[
        Migration::new(
            1,
            "checkpoints",
            include_str!("../../migrations/postgres/0001_checkpoints.sql"),
        )
        .replacing(1),
        Migration::new(
            2,
            "fences",
            include_str!("../../migrations/postgres/0002_fences.sql"),
        )
        .replacing(4),
        Migration::new(
            3,
            "node_cache",
            include_str!("../../migrations/postgres/0003_node_cache.sql"),
        ),
        Migration::new(
            4,
            "store",
            include_str!("../../migrations/postgres/0004_store.sql"),
        ),
        Migration::new(
            5,
            "lz4",
            include_str!("../../migrations/postgres/0005_lz4.sql"),
        )
        .formerly("cd1030297a570292e9a4ce037fbc151807dfa12c90a956d3eef1a57ac95e5793"),
        Migration::new(
            6,
            "text_records",
            include_str!("../../migrations/postgres/0006_text_records.sql"),
        )
        .formerly("85dc66818390bde1058fdd3ad87cc6574cb25d46da95f2739740aeca247067de"),
    ],
    sqlite: &[
        Migration::new(
            1,
            "checkpoints",
            include_str!("../../migrations/sqlite/0001_checkpoints.sql"),
        )
        .replacing(1),
        Migration::new(
            2,
            "fences",
            include_str!("../../migrations/sqlite/0002_fences.sql"),
        )
        .replacing(4),
        Migration::new(
            3,
            "node_cache",
            include_str!("../../migrations/sqlite/0003_node_cache.sql"),
        ),
        Migration::new(
            4,
            "store",
            include_str!("../../migrations/sqlite/0004_store.sql"),
        ),
    ],
};

/// Replaces `\u0000` escapes in JSON text (Postgres `jsonb` cannot hold NUL characters).
pub fn json_without_nul(json: &str) -> std::borrow::Cow<'_, str> {
    crate::checkpoint::without_nul(json)
}

use crate::checkpoint::CheckpointError;

#[cfg(feature = "sqlite")]
pub use sqlx::SqlitePool;

#[cfg(feature = "postgres")]
pub use sqlx::PgPool;

pub use lost::connections_lost;

impl From<sqlx::Error> for CheckpointError {
    fn from(e: sqlx::Error) -> Self {
        if is_transient(&e) {
            CheckpointError::Unavailable(Box::new(e))
        } else {
            CheckpointError::Backend(Box::new(e))
        }
    }
}

/// Whether a database error may go away when the same work is tried again: the connection
/// was lost or refused, the server is shutting down or starting, the pool timed out, or the
/// transaction lost a deadlock or a serialization race. Constraint violations, syntax and
/// decode errors are not.
pub fn is_transient(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => transient_database_error(db.as_ref()),
        _ => false,
    }
}

fn transient_database_error(db: &dyn sqlx::error::DatabaseError) -> bool {
    #[cfg(feature = "postgres")]
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        // Class 08 connection exception; 57P01 admin_shutdown, 57P02 crash_shutdown,
        // 57P03 cannot_connect_now; 40001 serialization_failure, 40P01 deadlock_detected;
        // 53300 too_many_connections; 55P03 lock_not_available.
        let code = pg.code();
        return code.starts_with("08")
            || matches!(
                code,
                "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "53300" | "55P03"
            );
    }
    #[cfg(feature = "sqlite")]
    if let Some(lite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
        use sqlx::error::DatabaseError as _;
        // SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes.
        return lite
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6));
    }
    false
}

/// Opens (creating if needed) a SQLite database file for palgraph and applies the engine's
/// [`MIGRATIONS`].
///
/// # Errors
/// When the file cannot be opened, or migrating refuses ([`CheckpointError::Migrate`]: a
/// schema newer than this binary, a changed migration).
#[cfg(feature = "sqlite")]
pub async fn open_sqlite(path: &std::path::Path) -> Result<SqlitePool, CheckpointError> {
    use sqlx::sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
    };
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(std::time::Duration::from_secs(10))
        .foreign_keys(false);
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .min_connections(1)
        // A local file does not go away between statements: no ping before each one.
        .test_before_acquire(false)
        .connect_with(options)
        .await?;
    MIGRATIONS.apply_sqlite(&pool).await?;
    Ok(pool)
}

/// Opens a Postgres pool for palgraph and applies the engine's [`MIGRATIONS`].
///
/// # Errors
/// When the database cannot be reached, or migrating refuses ([`CheckpointError::Migrate`]).
#[cfg(feature = "postgres")]
pub async fn open_postgres(url: &str, max_connections: u32) -> Result<PgPool, CheckpointError> {
    open_postgres_as(url, max_connections, None).await
}

/// [`open_postgres`], with every connection announcing `application_name` (a server
/// process uses its worker id, so other processes can see it is alive). Connections run
/// with `jit = off`, and those opened before [`connections_lost`] was last called are
/// closed instead of lent.
///
/// # Errors
/// When the database cannot be reached, or migrating refuses ([`CheckpointError::Migrate`]).
#[cfg(feature = "postgres")]
pub async fn open_postgres_as(
    url: &str,
    max_connections: u32,
    application_name: Option<&str>,
) -> Result<PgPool, CheckpointError> {
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    // JIT off: the checkpoint load's recursive query is costed above Postgres's
    // `jit_above_cost` once the tables are big (its plan is index probes whatever the
    // size), and compiling it on every call would cost more than running it.
    let mut options: PgConnectOptions = url.parse::<PgConnectOptions>()?.options([("jit", "off")]);
    if let Some(name) = application_name {
        options = options.application_name(name);
    }
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        // sqlx pings a connection before every checkout by default: one extra round trip
        // per statement, a third of a checkpoint's cost. A connection that died is found
        // by the statement that uses it instead (the pool then drops it), and idle
        // connections are recycled before a server or proxy would time them out.
        .test_before_acquire(false)
        // A connection opened before the database was last seen going away (a restart
        // ends every session) is closed instead of lent: see [`connections_lost`].
        .before_acquire(|_, meta| Box::pin(async move { Ok(!lost::aged_before_loss(meta.age)) }))
        .idle_timeout(std::time::Duration::from_secs(300))
        .connect_with(options)
        .await?;
    MIGRATIONS.apply_postgres(&pool).await?;
    Ok(pool)
}
