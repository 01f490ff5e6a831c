//! Schema migrations, owned by the crates whose tables they create. Each crate declares a
//! [`Migrator`]: a scope (its name) and its SQL files for Postgres and SQLite, embedded in
//! the binary; the engine's is [`crate::db::MIGRATIONS`] (checkpoints, fences), applied by
//! [`crate::db::open_sqlite`] and [`crate::db::open_postgres`]. palgraph's own files are in
//! the workspace's top-level `migrations/<scope>/<backend>/`. Applying is written once
//! (`Migrator::apply_in`); what differs between the backends is a handful of statements
//! (the private `Ledger` trait).
//!
//! ```no_run
//! use palgraph::db::migrate::{Migration, Migrator};
//!
//! /// My crate's tables.
//! pub const MIGRATIONS: Migrator = Migrator {
//!     scope: "mine",
//!     postgres: &[Migration::new(1, "widgets", "CREATE TABLE widgets (id TEXT PRIMARY KEY)")],
//!     sqlite: &[Migration::new(1, "widgets", "CREATE TABLE widgets (id TEXT PRIMARY KEY)")],
//! };
//!
//! # async fn f(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
//! let applied = MIGRATIONS.apply_sqlite(&pool).await?;
//! println!("ran {:?}", applied.ran);
//! # Ok(()) }
//! ```
//!
//! Applied migrations are recorded in `palgraph_migrations` as (scope, version, name,
//! checksum of the SQL). A migrator applies the missing versions of its scope in order,
//! all in one transaction, and refuses to run when the database is ahead of it
//! ([`MigrateError::SchemaAhead`]), when an applied migration's SQL changed since
//! ([`MigrateError::Changed`]) or when an applied version is unknown to it
//! ([`MigrateError::Unknown`]). Migrators never race: on Postgres they take one advisory
//! lock (replicas starting together migrate one after the other), on SQLite they run
//! inside `BEGIN IMMEDIATE`.
//!
//! **Comments reworded after a release.** A migration's checksum covers its whole text,
//! comments included. When the text of a released migration is edited without changing
//! what it does (a comment made clearer), the migration declares the checksum the earlier
//! text had ([`Migration::formerly`]): a database that applied the earlier text counts as
//! having applied this migration. Its recorded row keeps the earlier checksum, so the
//! release that applied it still accepts the database too.
//!
//! **Databases from before scopes.** palgraph used to record every migration of every
//! crate in one unscoped `palgraph_schema` table (versions 1 checkpoints, 2 documents,
//! 3 runs, 4 fences, 5 run_order). A [`Migration`] declares the version it had there
//! ([`Migration::replacing`]); a migrator finding that version in `palgraph_schema` records
//! the migration as applied without running it again ([`Applied::adopted`]), and adds a
//! row of version [`UNSCOPED_SENTINEL`] there so that a binary from before scopes refuses
//! the database as newer than itself instead of writing to it.

mod ledger;

use ledger::Ledger;

/// The version recorded in the old `palgraph_schema` table once a scoped migrator has
/// upgraded the database: binaries from before scopes read it as a schema newer than
/// theirs and refuse to run.
pub const UNSCOPED_SENTINEL: i64 = 1000;

/// One migration: a version (its order in its scope), a name, the SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Its version within its scope (1, 2, ...).
    pub version: i64,
    /// Its name (the rest of the file name).
    pub name: &'static str,
    /// The SQL, run as one batch.
    pub sql: &'static str,
    /// The version it had in palgraph's unscoped `palgraph_schema` table, if it is one of
    /// the migrations from before scopes (see the module docs).
    pub replaces: Option<i64>,
    /// Checksums of earlier texts of this migration that differ from its SQL only in ways
    /// that do not change what it does (see [`Migration::formerly`]).
    pub formerly: [Option<&'static str>; FORMERLY_MAX],
}

/// How many earlier checksums one [`Migration`] can declare.
pub const FORMERLY_MAX: usize = 4;

impl Migration {
    /// A migration.
    pub const fn new(version: i64, name: &'static str, sql: &'static str) -> Self {
        Migration {
            version,
            name,
            sql,
            replaces: None,
            formerly: [None; FORMERLY_MAX],
        }
    }

    /// The same migration, which palgraph applied before scopes as version `unscoped` of
    /// `palgraph_schema`.
    #[must_use]
    pub const fn replacing(mut self, unscoped: i64) -> Self {
        self.replaces = Some(unscoped);
        self
    }

    /// The same migration, which an earlier release applied with a text whose checksum was
    /// `checksum` (hex, as [`Migration::checksum`] computes it): the text changed only
    /// where it does not matter to the database, such as a comment. A database recording
    /// that checksum for this version is accepted as having applied this migration, and
    /// its record is left as it is, so the earlier release still accepts the database.
    /// Declare one call per earlier text.
    ///
    /// # Panics
    /// At compile time (in a `const`) when more than [`FORMERLY_MAX`] are declared.
    #[must_use]
    pub const fn formerly(mut self, checksum: &'static str) -> Self {
        let mut i = 0;
        while i < FORMERLY_MAX {
            if self.formerly[i].is_none() {
                self.formerly[i] = Some(checksum);
                return self;
            }
            i += 1;
        }
        panic!("a migration declares at most FORMERLY_MAX earlier checksums");
    }

    /// Whether `recorded`, the checksum a database recorded for this migration's version,
    /// is this migration's: its checksum now or one declared with [`Migration::formerly`].
    pub fn accepts(&self, recorded: &str) -> bool {
        self.checksum() == recorded || self.formerly.iter().flatten().any(|c| *c == recorded)
    }

    /// The SHA-256 of its SQL (line endings normalized to `\n`, so a checkout that
    /// converts them does not read as a change), in hex.
    pub fn checksum(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.sql.replace("\r\n", "\n").as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A crate's migrations: its scope and its SQL for each backend, in version order.
#[derive(Clone, Copy, Debug)]
pub struct Migrator {
    /// The scope (e.g. `engine`): versions count within it.
    pub scope: &'static str,
    /// The Postgres migrations, in order.
    pub postgres: &'static [Migration],
    /// The SQLite migrations, in order.
    pub sqlite: &'static [Migration],
}

/// What one [`Migrator`] did to a database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Versions whose SQL ran now, in order.
    pub ran: Vec<i64>,
    /// Versions recorded as applied without running: the unscoped migrator from before
    /// scopes had applied them.
    pub adopted: Vec<i64>,
}

/// Why migrating refused to run or failed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// The database has a version of the scope newer than this binary knows.
    #[error("database schema `{scope}` is at version {found}, newer than this binary's {supported}; upgrade palgraph")]
    SchemaAhead {
        /// The scope.
        scope: &'static str,
        /// The newest version found in the database.
        found: i64,
        /// The newest version this binary knows.
        supported: i64,
    },
    /// An applied migration's SQL is not what was applied (its checksum differs).
    #[error("migration {version} ({name}) of `{scope}` changed after it was applied; restore its SQL and put the change in a new migration")]
    Changed {
        /// The scope.
        scope: &'static str,
        /// The version.
        version: i64,
        /// Its name.
        name: &'static str,
    },
    /// An applied version this binary does not have (and no newer one is applied).
    #[error("migration {version} of `{scope}` is recorded as applied, but this binary does not have it; run the palgraph that applied it")]
    Unknown {
        /// The scope.
        scope: &'static str,
        /// The version.
        version: i64,
    },
    /// The database failed.
    #[error("database error while migrating")]
    Database(#[from] sqlx::Error),
}

impl MigrateError {
    /// Whether trying again may succeed (the database was unreachable for a moment).
    pub fn is_transient(&self) -> bool {
        matches!(self, MigrateError::Database(e) if super::is_transient(e))
    }
}

/// A migration recorded in `palgraph_migrations`.
struct Recorded {
    version: i64,
    checksum: String,
}

/// What to do with one migration.
enum Step<'m> {
    /// Run its SQL and record it.
    Run(&'m Migration),
    /// Record it without running (the unscoped migrator applied it).
    Adopt(&'m Migration),
}

/// The steps that bring `scope` from `recorded` (its rows in `palgraph_migrations`) and
/// `unscoped` (the versions of the old `palgraph_schema` table) to `migrations`.
fn plan<'m>(
    scope: &'static str,
    migrations: &'m [Migration],
    recorded: &[Recorded],
    unscoped: &[i64],
) -> Result<Vec<Step<'m>>, MigrateError> {
    let supported = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    let found = recorded.iter().map(|r| r.version).max().unwrap_or(0);
    if found > supported {
        return Err(MigrateError::SchemaAhead {
            scope,
            found,
            supported,
        });
    }
    for r in recorded {
        let Some(m) = migrations.iter().find(|m| m.version == r.version) else {
            return Err(MigrateError::Unknown {
                scope,
                version: r.version,
            });
        };
        if !m.accepts(&r.checksum) {
            return Err(MigrateError::Changed {
                scope,
                version: m.version,
                name: m.name,
            });
        }
    }
    let mut steps = Vec::new();
    for m in migrations {
        if recorded.iter().any(|r| r.version == m.version) {
            continue;
        }
        steps.push(match m.replaces {
            Some(v) if unscoped.contains(&v) => Step::Adopt(m),
            _ => Step::Run(m),
        });
    }
    Ok(steps)
}

impl Migrator {
    /// Applies this scope's missing Postgres migrations in one transaction, holding the
    /// advisory lock every palgraph migrator takes.
    ///
    /// # Errors
    /// See [`MigrateError`]; on an error nothing is applied.
    #[cfg(feature = "postgres")]
    pub async fn apply_postgres(&self, pool: &sqlx::PgPool) -> Result<Applied, MigrateError> {
        let tx = pool.begin().await?;
        self.apply(tx, self.postgres, "Postgres").await
    }

    /// Applies this scope's missing SQLite migrations in one `BEGIN IMMEDIATE`
    /// transaction.
    ///
    /// # Errors
    /// See [`MigrateError`]; on an error nothing is applied.
    #[cfg(feature = "sqlite")]
    pub async fn apply_sqlite(&self, pool: &sqlx::SqlitePool) -> Result<Applied, MigrateError> {
        let tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        self.apply(tx, self.sqlite, "SQLite").await
    }

    /// Applies `migrations` in `tx` and commits; on an error rolls back at once (a deferred
    /// rollback would keep the lock and the transaction open).
    async fn apply<DB>(
        &self,
        mut tx: sqlx::Transaction<'_, DB>,
        migrations: &[Migration],
        backend: &str,
    ) -> Result<Applied, MigrateError>
    where
        DB: sqlx::Database,
        for<'t> sqlx::Transaction<'t, DB>: Ledger,
    {
        match self.apply_in(&mut tx, migrations).await {
            Ok(applied) => {
                tx.commit().await?;
                self.log(&applied, backend);
                Ok(applied)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// What applying means, on either backend: take the lock, read what is recorded, run or
    /// adopt what is missing ([`plan`]), record it, and mark a database from before scopes.
    async fn apply_in(
        &self,
        ledger: &mut impl Ledger,
        migrations: &[Migration],
    ) -> Result<Applied, MigrateError> {
        ledger.lock().await?;
        ledger.create().await?;
        let recorded = ledger.recorded(self.scope).await?;
        let unscoped = ledger.unscoped().await?;
        let mut applied = Applied::default();
        let steps = plan(
            self.scope,
            migrations,
            &recorded,
            unscoped.as_deref().unwrap_or_default(),
        )?;
        for step in steps {
            let m = match step {
                Step::Run(m) => {
                    ledger.run(m.sql).await?;
                    applied.ran.push(m.version);
                    m
                }
                Step::Adopt(m) => {
                    applied.adopted.push(m.version);
                    m
                }
            };
            ledger.record(self.scope, m).await?;
        }
        if unscoped.is_some() {
            ledger.sentinel().await?;
        }
        Ok(applied)
    }

    fn log(&self, applied: &Applied, backend: &str) {
        if !applied.ran.is_empty() || !applied.adopted.is_empty() {
            tracing::info!(
                scope = self.scope,
                ran = ?applied.ran,
                adopted = ?applied.adopted,
                "applied {backend} migrations"
            );
        }
    }

    /// The newest Postgres version this binary knows.
    pub fn supported_postgres(&self) -> i64 {
        self.postgres.iter().map(|m| m.version).max().unwrap_or(0)
    }

    /// The newest SQLite version this binary knows.
    pub fn supported_sqlite(&self) -> i64 {
        self.sqlite.iter().map(|m| m.version).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MS: &[Migration] = &[
        Migration::new(1, "one", "CREATE TABLE one (x INT)").replacing(1),
        Migration::new(2, "two", "CREATE TABLE two (x INT)").replacing(4),
        Migration::new(3, "three", "CREATE TABLE three (x INT)"),
    ];

    fn recorded(versions: &[i64]) -> Vec<Recorded> {
        versions
            .iter()
            .map(|v| Recorded {
                version: *v,
                checksum: MS[(*v - 1) as usize].checksum(),
            })
            .collect()
    }

    fn kinds(steps: &[Step<'_>]) -> Vec<(char, i64)> {
        steps
            .iter()
            .map(|s| match s {
                Step::Run(m) => ('r', m.version),
                Step::Adopt(m) => ('a', m.version),
            })
            .collect()
    }

    #[test]
    fn plan_runs_what_is_missing_and_adopts_what_the_unscoped_table_has() {
        assert_eq!(
            kinds(&plan("s", MS, &[], &[]).unwrap()),
            [('r', 1), ('r', 2), ('r', 3)]
        );
        assert_eq!(
            kinds(&plan("s", MS, &recorded(&[1]), &[]).unwrap()),
            [('r', 2), ('r', 3)]
        );
        assert_eq!(
            kinds(&plan("s", MS, &[], &[1, 2, 3, 4, 5]).unwrap()),
            [('a', 1), ('a', 2), ('r', 3)],
            "unscoped 1 and 4 are this scope's 1 and 2"
        );
        assert_eq!(
            kinds(&plan("s", MS, &[], &[1, 2, 3]).unwrap()),
            [('a', 1), ('r', 2), ('r', 3)],
            "a database from before unscoped 4 runs it now"
        );
        assert!(plan("s", MS, &recorded(&[1, 2, 3]), &[1, 4])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn plan_refuses_a_schema_ahead_a_changed_migration_and_an_unknown_one() {
        let ahead = [Recorded {
            version: 9,
            checksum: String::new(),
        }];
        assert!(matches!(
            plan("s", MS, &ahead, &[]),
            Err(MigrateError::SchemaAhead {
                scope: "s",
                found: 9,
                supported: 3
            })
        ));
        let changed = [Recorded {
            version: 2,
            checksum: "0".repeat(64),
        }];
        assert!(matches!(
            plan("s", MS, &changed, &[]),
            Err(MigrateError::Changed {
                version: 2,
                name: "two",
                ..
            })
        ));
        let gaps: &[Migration] = &[MS[0], MS[2]];
        assert!(matches!(
            plan("s", gaps, &recorded(&[2]), &[]),
            Err(MigrateError::Unknown { version: 2, .. })
        ));
    }

    #[test]
    fn an_earlier_text_declared_with_formerly_is_accepted_and_others_are_not() {
        let earlier = Migration::new(2, "two", "-- old comment\nCREATE TABLE two (x INT)");
        let reworded = Migration::new(2, "two", "-- new comment\nCREATE TABLE two (x INT)");
        let applied_earlier = [
            Recorded {
                version: 1,
                checksum: MS[0].checksum(),
            },
            Recorded {
                version: 2,
                checksum: earlier.checksum(),
            },
        ];
        let without: &[Migration] = &[MS[0], reworded, MS[2]];
        assert!(matches!(
            plan("s", without, &applied_earlier, &[]),
            Err(MigrateError::Changed { version: 2, .. })
        ));
        let old = earlier.checksum();
        let old: &'static str = Box::leak(old.into_boxed_str());
        let with: &[Migration] = &[MS[0], reworded.formerly(old), MS[2]];
        assert_eq!(
            kinds(&plan("s", with, &applied_earlier, &[]).unwrap()),
            [('r', 3)],
            "the earlier text counts as applied; the next version runs"
        );
        let unknown = [Recorded {
            version: 2,
            checksum: "0".repeat(64),
        }];
        assert!(matches!(
            plan("s", with, &unknown, &[]),
            Err(MigrateError::Changed { version: 2, .. })
        ));
    }

    /// A migrator over `migrations` (leaked: a [`Migrator`] holds `'static` slices).
    #[cfg(feature = "sqlite")]
    fn migrator(migrations: Vec<Migration>) -> Migrator {
        let migrations: &'static [Migration] = Box::leak(migrations.into_boxed_slice());
        Migrator {
            scope: "formerly",
            postgres: migrations,
            sqlite: migrations,
        }
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_database_that_applied_an_earlier_text_upgrades_with_the_reworded_one() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let earlier = Migration::new(1, "one", "-- a table\nCREATE TABLE one (x INT)");
        let reworded = Migration::new(1, "one", "-- the table one\nCREATE TABLE one (x INT)");
        let two = Migration::new(2, "two", "CREATE TABLE two (x INT)");
        let applied = migrator(vec![earlier]).apply_sqlite(&pool).await.unwrap();
        assert_eq!(applied.ran, [1]);

        let refused = migrator(vec![reworded, two]).apply_sqlite(&pool).await;
        assert!(
            matches!(refused, Err(MigrateError::Changed { version: 1, .. })),
            "a checksum the migration does not declare is refused: {refused:?}"
        );
        let unknown = Migration::new(1, "one", "-- other\nCREATE TABLE one (x INT)")
            .formerly("0000000000000000000000000000000000000000000000000000000000000000");
        let refused = migrator(vec![unknown, two]).apply_sqlite(&pool).await;
        assert!(matches!(
            refused,
            Err(MigrateError::Changed { version: 1, .. })
        ));

        let old: &'static str = Box::leak(earlier.checksum().into_boxed_str());
        let upgraded = migrator(vec![reworded.formerly(old), two]);
        let applied = upgraded.apply_sqlite(&pool).await.unwrap();
        assert_eq!(applied.ran, [2], "version 1 is not run again");
        assert_eq!(
            upgraded.apply_sqlite(&pool).await.unwrap(),
            Applied::default()
        );
        // The record keeps the earlier checksum: the release that applied it still accepts
        // the database.
        let recorded: String = sqlx::query_scalar(
            "SELECT checksum FROM palgraph_migrations WHERE scope = 'formerly' AND version = 1",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(recorded, old);
        assert!(migrator(vec![earlier, two])
            .apply_sqlite(&pool)
            .await
            .is_ok());
    }

    #[test]
    fn checksums_ignore_line_endings_only() {
        let lf = Migration::new(1, "a", "CREATE TABLE a (x INT);\nSELECT 1;\n");
        let crlf = Migration::new(1, "a", "CREATE TABLE a (x INT);\r\nSELECT 1;\r\n");
        let other = Migration::new(1, "a", "CREATE TABLE a (x BIGINT);\nSELECT 1;\n");
        assert_eq!(lf.checksum(), crlf.checksum());
        assert_ne!(lf.checksum(), other.checksum());
        assert_eq!(lf.checksum().len(), 64);
    }
}
