//! The database the server under test runs on (`--backend postgres|sqlite`), behind one
//! face for the load loop: the server's environment, growing, and what the database adds
//! and spends per turn. Postgres is in `database.rs`, SQLite in `database_sqlite.rs`.

use anyhow::bail;
use palgraph::testkit::backends::PgSchema;
use serde_json::{json, Map, Value};

use crate::database;
use crate::database_sqlite::{FileMark, SqliteDb};

/// Which database (`--backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fresh schema on `BENCH_DATABASE_URL` (the default).
    Postgres,
    /// A fresh file in a temporary directory.
    Sqlite,
}

impl Kind {
    /// `postgres` or `sqlite`.
    pub fn parse(s: &str) -> anyhow::Result<Kind> {
        match s {
            "postgres" => Ok(Kind::Postgres),
            "sqlite" => Ok(Kind::Sqlite),
            other => bail!("--backend {other}: postgres or sqlite"),
        }
    }
}

/// The server's database and the benchmark's handle on it.
pub enum Backend {
    /// A schema of its own on a shared Postgres.
    Postgres {
        /// Dropped with the backend.
        schema: PgSchema,
        /// The benchmark's pool on the schema.
        pool: sqlx::PgPool,
    },
    /// An embedded file, owned by one server process at a time.
    Sqlite(SqliteDb),
}

/// What the database holds at one moment (see [`Backend::mark`]).
pub struct Mark {
    runs: i64,
    bytes: Bytes,
}

enum Bytes {
    Postgres {
        events: i64,
        runs: i64,
        checkpoints: i64,
    },
    Sqlite(FileMark),
}

const EVENTS: &[&str] = &["run_events"];
const RUNS: &[&str] = &["runs", "threads"];
const CHECKPOINTS: &[&str] = &["checkpoints", "checkpoint_writes"];

impl Backend {
    /// A fresh database of `kind`.
    pub async fn create(kind: Kind) -> anyhow::Result<Backend> {
        Ok(match kind {
            Kind::Postgres => {
                if std::env::var("PALGRAPH_TEST_DATABASE_URL").is_err() {
                    if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
                        std::env::set_var("PALGRAPH_TEST_DATABASE_URL", url);
                    }
                }
                let schema = PgSchema::create().await;
                let pool = schema.pool(2).await;
                Backend::Postgres { schema, pool }
            }
            Kind::Sqlite => Backend::Sqlite(SqliteDb::create()?),
        })
    }

    /// `postgres` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Postgres { .. } => "postgres",
            Backend::Sqlite(_) => "sqlite",
        }
    }

    /// The environment that points `palgraph serve` at this database.
    pub fn server_env(&self) -> Vec<(&'static str, String)> {
        match self {
            Backend::Postgres { schema, .. } => vec![("DATABASE_URL", schema.schema_url())],
            Backend::Sqlite(db) => vec![("PALGRAPH_DB", db.path().display().to_string())],
        }
    }

    /// Whether the server must be stopped while the database grows (SQLite: one writer).
    pub fn grows_offline(&self) -> bool {
        matches!(self, Backend::Sqlite(_))
    }

    /// Whether two server processes can share the database (not an embedded file).
    pub fn shared(&self) -> bool {
        matches!(self, Backend::Postgres { .. })
    }

    /// Runs in the database.
    pub async fn runs(&self) -> anyhow::Result<i64> {
        match self {
            Backend::Postgres { pool, .. } => Ok(sqlx::query_scalar("SELECT count(*) FROM runs")
                .fetch_one(pool)
                .await?),
            Backend::Sqlite(db) => db.runs().await,
        }
    }

    /// Grows the database to at least `runs` finished runs (see `database::grow`).
    pub async fn grow(
        &self,
        runs: i64,
        limit: Option<std::time::Duration>,
    ) -> anyhow::Result<Option<std::time::Duration>> {
        match self {
            Backend::Postgres { pool, .. } => database::grow(pool, runs, limit).await,
            Backend::Sqlite(db) => db.grow(runs, limit).await,
        }
    }

    /// Rows and bytes of the tables.
    pub async fn size(&self) -> anyhow::Result<Value> {
        match self {
            Backend::Postgres { pool, .. } => database::size(pool).await,
            Backend::Sqlite(db) => db.size().await,
        }
    }

    /// Runs and bytes now.
    pub async fn mark(&self) -> anyhow::Result<Mark> {
        let runs = self.runs().await?;
        let bytes = match self {
            Backend::Postgres { pool, .. } => Bytes::Postgres {
                events: database::bytes(pool, EVENTS).await?,
                runs: database::bytes(pool, RUNS).await?,
                checkpoints: database::bytes(pool, CHECKPOINTS).await?,
            },
            Backend::Sqlite(db) => Bytes::Sqlite(db.mark().await?),
        };
        Ok(Mark { runs, bytes })
    }

    /// CPU seconds the database's own processes used so far (every `postgres` process of
    /// the machine); `None` for SQLite, whose work is the server's CPU.
    pub fn cpu_s(&self) -> Option<f64> {
        match self {
            Backend::Postgres { .. } => Some(database::postgres_cpu_s()),
            Backend::Sqlite(_) => None,
        }
    }

    /// What the database grew by per run made between `a` and `b` (JSON entries and a line
    /// for the console).
    pub fn grown(a: &Mark, b: &Mark) -> (Map<String, Value>, String) {
        let made = (b.runs - a.runs).max(1) as f64;
        let per = |after: i64, before: i64| (after - before) as f64 / made;
        let mut out = Map::new();
        out.insert("bytes_runs_made".into(), json!(b.runs - a.runs));
        let line = match (&a.bytes, &b.bytes) {
            (
                Bytes::Postgres {
                    events: e0,
                    runs: r0,
                    checkpoints: c0,
                },
                Bytes::Postgres {
                    events: e1,
                    runs: r1,
                    checkpoints: c1,
                },
            ) => {
                let (e, r, c) = (per(*e1, *e0), per(*r1, *r0), per(*c1, *c0));
                out.insert("event_bytes_per_turn".into(), json!(e));
                out.insert("run_bytes_per_turn".into(), json!(r));
                out.insert("checkpoint_bytes_per_turn".into(), json!(c));
                format!("events {e:.0}, runs {r:.0}, checkpoints {c:.0}")
            }
            (Bytes::Sqlite(x), Bytes::Sqlite(y)) => {
                let logical = per(y.logical_bytes, x.logical_bytes);
                let file = per(y.file_bytes, x.file_bytes);
                let wal = per(y.wal_bytes, x.wal_bytes);
                out.insert("sqlite_logical_bytes_per_turn".into(), json!(logical));
                out.insert("sqlite_file_bytes_per_turn".into(), json!(file));
                out.insert("sqlite_wal_file_bytes_per_turn".into(), json!(wal));
                format!("SQLite pages {logical:.0}, files (main + -wal) {file:.0} (-wal {wal:.0})")
            }
            _ => String::from("?"),
        };
        (out, line)
    }

    /// The database's version and settings, for the report.
    pub async fn meta(&self) -> anyhow::Result<Value> {
        match self {
            Backend::Postgres { pool, .. } => {
                let v: String = sqlx::query_scalar("SHOW server_version")
                    .fetch_one(pool)
                    .await?;
                Ok(json!({ "postgres": { "server_version": v } }))
            }
            Backend::Sqlite(db) => Ok(json!({ "sqlite": db.meta().await? })),
        }
    }

    /// The report's file name.
    pub fn report_name(&self) -> &'static str {
        match self {
            Backend::Postgres { .. } => "server-load.json",
            Backend::Sqlite(_) => "server-load-sqlite.json",
        }
    }
}
