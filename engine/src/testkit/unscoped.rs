//! Databases as palgraph's unscoped migrator left them, before each crate owned its
//! migrations: every migration of every crate in one `palgraph_schema` table (versions
//! 1 checkpoints, 2 documents, 3 runs, 4 fences, 5 run_order). The SQL is frozen in
//! `testkit/unscoped/{postgres,sqlite}.sql`, so a test can build such a database and check
//! that today's migrators upgrade it in place.

use crate::checkpoint::CheckpointError;

const POSTGRES: &str = include_str!("unscoped/postgres.sql");
const SQLITE: &str = include_str!("unscoped/sqlite.sql");

/// The old migrations in a frozen file: (version, name, SQL).
fn migrations(file: &'static str) -> Vec<(i64, &'static str, String)> {
    let mut out: Vec<(i64, &'static str, String)> = Vec::new();
    for line in file.lines() {
        if let Some(rest) = line.strip_prefix("-- version ") {
            let mut parts = rest.splitn(2, ' ');
            let version = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            out.push((version, parts.next().unwrap_or(""), String::new()));
        } else if let Some((_, _, sql)) = out.last_mut() {
            sql.push_str(line);
            sql.push('\n');
        }
    }
    out
}

/// Migrates a SQLite database the way palgraph did before scopes, up to version `up_to`
/// (5: everything).
///
/// # Errors
/// Database errors.
#[cfg(feature = "sqlite")]
pub async fn migrate_sqlite(pool: &sqlx::SqlitePool, up_to: i64) -> Result<(), CheckpointError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS palgraph_schema (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )
    .execute(&mut *tx)
    .await?;
    for (version, name, sql) in migrations(SQLITE) {
        if version > up_to {
            break;
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO palgraph_schema (version, name) VALUES (?1, ?2)")
            .bind(version)
            .bind(name)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Migrates a Postgres database the way palgraph did before scopes, up to version `up_to`
/// (5: everything).
///
/// # Errors
/// Database errors.
#[cfg(feature = "postgres")]
pub async fn migrate_postgres(pool: &sqlx::PgPool, up_to: i64) -> Result<(), CheckpointError> {
    let mut tx = pool.begin().await?;
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS palgraph_schema (
            version BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .execute(&mut *tx)
    .await?;
    for (version, name, sql) in migrations(POSTGRES) {
        if version > up_to {
            break;
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO palgraph_schema (version, name) VALUES ($1, $2)")
            .bind(version)
            .bind(name)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A fresh, unmigrated SQLite pool on `path` (what the old binary opened).
///
/// # Errors
/// When the file cannot be opened.
#[cfg(feature = "sqlite")]
pub async fn sqlite_pool(path: &std::path::Path) -> Result<sqlx::SqlitePool, CheckpointError> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
    Ok(sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_frozen_files_hold_the_five_unscoped_migrations() {
        for file in [super::POSTGRES, super::SQLITE] {
            let found: Vec<(i64, &str)> = super::migrations(file)
                .iter()
                .map(|(v, n, sql)| {
                    assert!(sql.contains("CREATE") || sql.contains("ALTER"), "{n}");
                    (*v, *n)
                })
                .collect();
            assert_eq!(
                found,
                [
                    (1, "checkpoints"),
                    (2, "documents"),
                    (3, "runs"),
                    (4, "fences"),
                    (5, "run_order")
                ]
            );
        }
    }
}
