//! Schema migrations: the SQL files of `migrations/postgres` and `migrations/sqlite`,
//! embedded in the binary and applied in order, once each, inside one transaction.
//!
//! Applied versions are recorded in `palgraph_schema`. A database whose schema is newer
//! than the binary is refused with [`CheckpointError::SchemaAhead`] rather than written to.
//! On Postgres an advisory lock makes replicas that start together migrate one at a time.

use crate::checkpoint::CheckpointError;

/// One migration.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its version (the file's number).
    pub version: i64,
    /// Its name (the rest of the file name).
    pub name: &'static str,
    /// The SQL.
    pub sql: &'static str,
}

/// The Postgres migrations, in order.
pub const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        name: "checkpoints",
        sql: include_str!("../../../migrations/postgres/0001_checkpoints.sql"),
    },
    Migration {
        version: 2,
        name: "documents",
        sql: include_str!("../../../migrations/postgres/0002_documents.sql"),
    },
    Migration {
        version: 3,
        name: "runs",
        sql: include_str!("../../../migrations/postgres/0003_runs.sql"),
    },
    Migration {
        version: 4,
        name: "fences",
        sql: include_str!("../../../migrations/postgres/0004_fences.sql"),
    },
    Migration {
        version: 5,
        name: "run_order",
        sql: include_str!("../../../migrations/postgres/0005_run_order.sql"),
    },
];

/// The SQLite migrations, in order.
pub const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        name: "checkpoints",
        sql: include_str!("../../../migrations/sqlite/0001_checkpoints.sql"),
    },
    Migration {
        version: 2,
        name: "documents",
        sql: include_str!("../../../migrations/sqlite/0002_documents.sql"),
    },
    Migration {
        version: 3,
        name: "runs",
        sql: include_str!("../../../migrations/sqlite/0003_runs.sql"),
    },
    Migration {
        version: 4,
        name: "fences",
        sql: include_str!("../../../migrations/sqlite/0004_fences.sql"),
    },
    Migration {
        version: 5,
        name: "run_order",
        sql: include_str!("../../../migrations/sqlite/0005_run_order.sql"),
    },
];

/// The newest schema version this binary knows.
pub fn supported(migrations: &[Migration]) -> i64 {
    migrations.iter().map(|m| m.version).max().unwrap_or(0)
}

fn check_ahead(applied: &[i64], migrations: &[Migration]) -> Result<(), CheckpointError> {
    let found = applied.iter().copied().max().unwrap_or(0);
    let supported = supported(migrations);
    if found > supported {
        return Err(CheckpointError::SchemaAhead { found, supported });
    }
    Ok(())
}

const ADVISORY_LOCK_KEY: i64 = 0x7061_6c67_7261_7068; // "palgraph"

/// Applies the Postgres migrations that are missing; returns the versions applied.
///
/// # Errors
/// Database errors, or [`CheckpointError::SchemaAhead`].
#[cfg(feature = "postgres")]
pub async fn migrate_postgres(pool: &sqlx::PgPool) -> Result<Vec<i64>, CheckpointError> {
    let mut tx = pool.begin().await?;
    match migrate_postgres_in(&mut tx).await {
        Ok(done) => {
            tx.commit().await?;
            if !done.is_empty() {
                tracing::info!(versions = ?done, "applied Postgres migrations");
            }
            Ok(done)
        }
        Err(e) => {
            // Roll back now: a deferred rollback would keep the lock and the transaction open.
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

#[cfg(feature = "postgres")]
async fn migrate_postgres_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
) -> Result<Vec<i64>, CheckpointError> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(ADVISORY_LOCK_KEY)
        .execute(&mut **tx)
        .await?;
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS palgraph_schema (
            version BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .execute(&mut **tx)
    .await?;
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM palgraph_schema ORDER BY version")
            .fetch_all(&mut **tx)
            .await?;
    check_ahead(&applied, POSTGRES)?;
    let mut done = Vec::new();
    for m in POSTGRES.iter().filter(|m| !applied.contains(&m.version)) {
        sqlx::raw_sql(m.sql).execute(&mut **tx).await?;
        sqlx::query("INSERT INTO palgraph_schema (version, name) VALUES ($1, $2)")
            .bind(m.version)
            .bind(m.name)
            .execute(&mut **tx)
            .await?;
        done.push(m.version);
    }
    Ok(done)
}

/// Applies the SQLite migrations that are missing; returns the versions applied.
///
/// # Errors
/// Database errors, or [`CheckpointError::SchemaAhead`].
#[cfg(feature = "sqlite")]
pub async fn migrate_sqlite(pool: &sqlx::SqlitePool) -> Result<Vec<i64>, CheckpointError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    match migrate_sqlite_in(&mut tx).await {
        Ok(done) => {
            tx.commit().await?;
            if !done.is_empty() {
                tracing::info!(versions = ?done, "applied SQLite migrations");
            }
            Ok(done)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

#[cfg(feature = "sqlite")]
async fn migrate_sqlite_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
) -> Result<Vec<i64>, CheckpointError> {
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS palgraph_schema (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )
    .execute(&mut **tx)
    .await?;
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM palgraph_schema ORDER BY version")
            .fetch_all(&mut **tx)
            .await?;
    check_ahead(&applied, SQLITE)?;
    let mut done = Vec::new();
    for m in SQLITE.iter().filter(|m| !applied.contains(&m.version)) {
        sqlx::raw_sql(m.sql).execute(&mut **tx).await?;
        sqlx::query("INSERT INTO palgraph_schema (version, name) VALUES (?1, ?2)")
            .bind(m.version)
            .bind(m.name)
            .execute(&mut **tx)
            .await?;
        done.push(m.version);
    }
    Ok(done)
}
