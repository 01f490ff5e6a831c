//! Databases: opening SQLite and Postgres pools the way palgraph needs them, and the
//! migrations in `migrations/` (applied by [`migrate`]).
//!
//! SQLite runs in WAL mode with `synchronous = FULL`: a commit is on disk before it returns,
//! like Postgres with its default `synchronous_commit = on`.

pub mod migrate;

/// Replaces `\u0000` escapes in JSON text (Postgres `jsonb` cannot hold NUL characters).
pub fn json_without_nul(json: &str) -> std::borrow::Cow<'_, str> {
    crate::checkpoint::without_nul(json)
}

use crate::checkpoint::CheckpointError;

#[cfg(feature = "sqlite")]
pub use sqlx::SqlitePool;

#[cfg(feature = "postgres")]
pub use sqlx::PgPool;

impl From<sqlx::Error> for CheckpointError {
    fn from(e: sqlx::Error) -> Self {
        CheckpointError::Backend(Box::new(e))
    }
}

/// Opens (creating if needed) a SQLite database file for palgraph and applies migrations.
///
/// # Errors
/// When the file cannot be opened, or its schema is newer than this binary.
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
    migrate::migrate_sqlite(&pool).await?;
    Ok(pool)
}

/// Opens a Postgres pool for palgraph and applies migrations.
///
/// # Errors
/// When the database cannot be reached, or its schema is newer than this binary.
#[cfg(feature = "postgres")]
pub async fn open_postgres(url: &str, max_connections: u32) -> Result<PgPool, CheckpointError> {
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    let options: PgConnectOptions = url.parse()?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        // sqlx pings a connection before every checkout by default: one extra round trip
        // per statement, a third of a checkpoint's cost. A connection that died is found
        // by the statement that uses it instead (the pool then drops it), and idle
        // connections are recycled before a server or proxy would time them out.
        .test_before_acquire(false)
        .idle_timeout(std::time::Duration::from_secs(300))
        .connect_with(options)
        .await?;
    migrate::migrate_postgres(&pool).await?;
    Ok(pool)
}
