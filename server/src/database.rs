//! The database a server runs on: an embedded SQLite file by default, Postgres with
//! `DATABASE_URL` (any number of replicas). It is opened and migrated once at start, and
//! lends its pool to the checkpointer, the server's store and whatever a registered graph
//! keeps there (PalAssist's documents, say).

use std::sync::Arc;

use palgraph::checkpoint::{
    CheckpointError, Checkpointer, PostgresCheckpointer, SqliteCheckpointer,
};
use palgraph::db::migrate::MigrateError;

use crate::config::ServeConfig;
use crate::store::sql::SqlStore;
use crate::store::Store;

/// The opened database.
#[derive(Clone)]
#[non_exhaustive]
pub enum Database {
    /// Embedded.
    Sqlite(sqlx::SqlitePool),
    /// Production.
    Postgres(sqlx::PgPool),
}

/// Why the database could not be opened. Its message names the step that failed; the cause
/// is its [`source`](std::error::Error::source) (`{:#}` with anyhow prints both).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseError {
    /// The Postgres database could not be reached or migrated.
    #[error("opening the Postgres database (DATABASE_URL)")]
    Postgres(#[source] CheckpointError),
    /// The SQLite file could not be opened or migrated.
    #[error("opening the SQLite database {path}")]
    Sqlite {
        /// The file.
        path: String,
        /// What failed.
        #[source]
        source: CheckpointError,
    },
    /// The server's tables could not be migrated.
    #[error("migrating the server's tables")]
    Migrate(#[from] MigrateError),
}

impl Database {
    /// Opens (and migrates) the configured database.
    ///
    /// # Errors
    /// When it cannot be opened or its schema is newer than this binary.
    pub async fn open(cfg: &ServeConfig) -> Result<Self, DatabaseError> {
        Self::open_as(cfg, None).await
    }

    /// Opens the database with every Postgres connection announcing `worker_id` (so other
    /// processes can tell this one is alive and take its runs over at once when it is not).
    ///
    /// # Errors
    /// When it cannot be opened or its schema is newer than this binary.
    pub async fn open_as(
        cfg: &ServeConfig,
        worker_id: Option<&str>,
    ) -> Result<Self, DatabaseError> {
        let app_name =
            worker_id.map(|w| format!("{}{w}", crate::store::postgres::APPLICATION_PREFIX));
        let db = match &cfg.database_url {
            Some(url) => Database::Postgres(
                palgraph::db::open_postgres_as(url, cfg.db_connections, app_name.as_deref())
                    .await
                    .map_err(DatabaseError::Postgres)?,
            ),
            None => Database::Sqlite(palgraph::db::open_sqlite(&cfg.sqlite_path).await.map_err(
                |source| DatabaseError::Sqlite {
                    path: cfg.sqlite_path.display().to_string(),
                    source,
                },
            )?),
        };
        match &db {
            Database::Sqlite(p) => crate::store::MIGRATIONS.apply_sqlite(p).await?,
            Database::Postgres(p) => crate::store::MIGRATIONS.apply_postgres(p).await?,
        };
        Ok(db)
    }

    /// The checkpointer on it.
    pub fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        match self {
            Database::Sqlite(p) => Arc::new(SqliteCheckpointer::new(p.clone())),
            Database::Postgres(p) => Arc::new(PostgresCheckpointer::new(p.clone())),
        }
    }

    /// The long-term store on it (LangGraph's `Store`: memory across threads), searching by
    /// meaning when given an index, by text otherwise.
    pub fn long_term_store(
        &self,
        index: Option<palgraph::store::IndexConfig>,
    ) -> Arc<dyn palgraph::store::Store> {
        use palgraph::store::{PostgresStore, SqliteStore};
        match (self, index) {
            (Database::Sqlite(p), None) => Arc::new(SqliteStore::new(p.clone())),
            (Database::Sqlite(p), Some(i)) => Arc::new(SqliteStore::new(p.clone()).with_index(i)),
            (Database::Postgres(p), None) => Arc::new(PostgresStore::new(p.clone())),
            (Database::Postgres(p), Some(i)) => {
                Arc::new(PostgresStore::new(p.clone()).with_index(i))
            }
        }
    }

    /// The server's store on it.
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Database::Sqlite(p) => Arc::new(SqlStore::new(p.clone())),
            Database::Postgres(p) => Arc::new(SqlStore::new(p.clone())),
        }
    }
}
