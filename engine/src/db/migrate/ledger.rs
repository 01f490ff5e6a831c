//! The statements a migrator runs, as each backend writes them: the only part of applying
//! migrations that differs between Postgres and SQLite.

use super::{Migration, Recorded, UNSCOPED_SENTINEL};

const ADVISORY_LOCK_KEY: i64 = 0x7061_6c67_7261_7068; // "palgraph"

/// The statements a migrator runs, as each backend writes them, inside the transaction that
/// applies a scope's migrations. Everything else about applying them (what to run, what to
/// adopt, what to refuse) is `Migrator::apply_in`, the same on both backends.
pub(super) trait Ledger {
    /// Makes migrators take turns: on Postgres an advisory lock held until the transaction
    /// ends; on SQLite nothing more, since the transaction began with `BEGIN IMMEDIATE`.
    async fn lock(&mut self) -> Result<(), sqlx::Error>;
    /// Creates `palgraph_migrations` when it does not exist.
    async fn create(&mut self) -> Result<(), sqlx::Error>;
    /// The versions of `scope` recorded as applied, with their checksums.
    async fn recorded(&mut self, scope: &str) -> Result<Vec<Recorded>, sqlx::Error>;
    /// The versions of the unscoped `palgraph_schema` table, or `None` when the database
    /// has no such table.
    async fn unscoped(&mut self) -> Result<Option<Vec<i64>>, sqlx::Error>;
    /// Runs a migration's SQL.
    async fn run(&mut self, sql: &'static str) -> Result<(), sqlx::Error>;
    /// Records migration `m` of `scope` as applied.
    async fn record(&mut self, scope: &str, m: &Migration) -> Result<(), sqlx::Error>;
    /// Adds [`UNSCOPED_SENTINEL`] to `palgraph_schema`.
    async fn sentinel(&mut self) -> Result<(), sqlx::Error>;
}

#[cfg(feature = "postgres")]
impl Ledger for sqlx::Transaction<'_, sqlx::Postgres> {
    async fn lock(&mut self) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(ADVISORY_LOCK_KEY)
            .execute(&mut **self)
            .await
            .map(drop)
    }

    async fn create(&mut self) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS palgraph_migrations (
                scope      TEXT NOT NULL,
                version    BIGINT NOT NULL,
                name       TEXT NOT NULL,
                checksum   TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (scope, version))",
        )
        .execute(&mut **self)
        .await
        .map(drop)
    }

    async fn recorded(&mut self, scope: &str) -> Result<Vec<Recorded>, sqlx::Error> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT version, checksum FROM palgraph_migrations WHERE scope = $1 ORDER BY version",
        )
        .bind(scope)
        .fetch_all(&mut **self)
        .await?;
        Ok(rows.into_iter().map(Recorded::from).collect())
    }

    async fn unscoped(&mut self) -> Result<Option<Vec<i64>>, sqlx::Error> {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('palgraph_schema') IS NOT NULL")
            .fetch_one(&mut **self)
            .await?;
        if !exists {
            return Ok(None);
        }
        sqlx::query_scalar("SELECT version FROM palgraph_schema")
            .fetch_all(&mut **self)
            .await
            .map(Some)
    }

    async fn run(&mut self, sql: &'static str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(sql).execute(&mut **self).await.map(drop)
    }

    async fn record(&mut self, scope: &str, m: &Migration) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO palgraph_migrations (scope, version, name, checksum)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(scope)
        .bind(m.version)
        .bind(m.name)
        .bind(m.checksum())
        .execute(&mut **self)
        .await
        .map(drop)
    }

    async fn sentinel(&mut self) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO palgraph_schema (version, name) VALUES ($1, $2)
             ON CONFLICT (version) DO NOTHING",
        )
        .bind(UNSCOPED_SENTINEL)
        .bind(SENTINEL_NAME)
        .execute(&mut **self)
        .await
        .map(drop)
    }
}

#[cfg(feature = "sqlite")]
impl Ledger for sqlx::Transaction<'_, sqlx::Sqlite> {
    async fn lock(&mut self) -> Result<(), sqlx::Error> {
        Ok(())
    }

    async fn create(&mut self) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS palgraph_migrations (
                scope      TEXT NOT NULL,
                version    INTEGER NOT NULL,
                name       TEXT NOT NULL,
                checksum   TEXT NOT NULL,
                applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
                PRIMARY KEY (scope, version))",
        )
        .execute(&mut **self)
        .await
        .map(drop)
    }

    async fn recorded(&mut self, scope: &str) -> Result<Vec<Recorded>, sqlx::Error> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT version, checksum FROM palgraph_migrations WHERE scope = ?1 ORDER BY version",
        )
        .bind(scope)
        .fetch_all(&mut **self)
        .await?;
        Ok(rows.into_iter().map(Recorded::from).collect())
    }

    async fn unscoped(&mut self) -> Result<Option<Vec<i64>>, sqlx::Error> {
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'palgraph_schema')",
        )
        .fetch_one(&mut **self)
        .await?;
        if !exists {
            return Ok(None);
        }
        sqlx::query_scalar("SELECT version FROM palgraph_schema")
            .fetch_all(&mut **self)
            .await
            .map(Some)
    }

    async fn run(&mut self, sql: &'static str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(sql).execute(&mut **self).await.map(drop)
    }

    async fn record(&mut self, scope: &str, m: &Migration) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO palgraph_migrations (scope, version, name, checksum)
             VALUES (?1, ?2, ?3, ?4)",
        )
        .bind(scope)
        .bind(m.version)
        .bind(m.name)
        .bind(m.checksum())
        .execute(&mut **self)
        .await
        .map(drop)
    }

    async fn sentinel(&mut self) -> Result<(), sqlx::Error> {
        sqlx::query("INSERT OR IGNORE INTO palgraph_schema (version, name) VALUES (?1, ?2)")
            .bind(UNSCOPED_SENTINEL)
            .bind(SENTINEL_NAME)
            .execute(&mut **self)
            .await
            .map(drop)
    }
}

/// The name of the [`UNSCOPED_SENTINEL`] row.
const SENTINEL_NAME: &str = "superseded by palgraph_migrations";

impl From<(i64, String)> for Recorded {
    fn from((version, checksum): (i64, String)) -> Self {
        Recorded { version, checksum }
    }
}
