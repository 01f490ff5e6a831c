//! The server's tables (`migrations/server/`): threads, runs and run events (1), the order
//! of a thread's runs (2), scheduled runs (3), the trace
//! context a run was created under (4), on Postgres the functions that create and end
//! runs in batches (5), leaner rows (6: run events without their thread's id; on Postgres a
//! new thread written once with its first run), and run events stored compressed (7: see
//! `packed`; on Postgres also autovacuum settings for runs and threads, and a leaner
//! function that ends runs), on Postgres runs checked where they are created (8) and every
//! batch's threads locked in the bytes' order of their ids (9), and threads' time to live (10).
//! [`crate::Database::open`]
//! applies them after the engine's. Migrations whose comments were reworded after a release
//! declare the checksum of the text that release applied (`formerly`).

use palgraph::db::migrate::{Migration, Migrator};

/// The server's migrations, for SQLite and Postgres.
pub const MIGRATIONS: Migrator = Migrator {
    scope: "server",
    postgres: &[
        Migration::new(
            1,
            "runs",
            include_str!("../../migrations/postgres/0001_runs.sql"),
        )
        .replacing(3),
        Migration::new(
            2,
            "run_order",
            include_str!("../../migrations/postgres/0002_run_order.sql"),
        )
        .replacing(5),
        Migration::new(
            3,
            "crons",
            include_str!("../../migrations/postgres/0003_crons.sql"),
        ),
        Migration::new(
            4,
            "trace_context",
            include_str!("../../migrations/postgres/0004_trace_context.sql"),
        ),
        Migration::new(
            5,
            "run_batches",
            include_str!("../../migrations/postgres/0005_run_batches.sql"),
        ),
        Migration::new(
            6,
            "leaner_rows",
            include_str!("../../migrations/postgres/0006_leaner_rows.sql"),
        )
        .formerly("39a8ffe0698143cad8b62ea584cb40b3688be68ea0e8a089ad435b7e4ea61254"),
        Migration::new(
            7,
            "packed_events",
            include_str!("../../migrations/postgres/0007_packed_events.sql"),
        )
        .formerly("1f406631740282eafa25336a9b0713c747adcebe47268751904ccbdfeae20b24"),
        Migration::new(
            8,
            "checked_threads",
            include_str!("../../migrations/postgres/0008_checked_threads.sql"),
        )
        .formerly("b22713a2298fbe7fff593575c8bcf609d193820f03dffe25b48aca2801162256"),
        Migration::new(
            9,
            "byte_order_locks",
            include_str!("../../migrations/postgres/0009_byte_order_locks.sql"),
        )
        .formerly("b5917c3c806183d1c45baa1e3a9fabdecf088870ef81623384818b91eb818982"),
        Migration::new(
            10,
            "thread_ttl",
            include_str!("../../migrations/postgres/0010_thread_ttl.sql"),
        ),
    ],
    sqlite: &[
        Migration::new(
            1,
            "runs",
            include_str!("../../migrations/sqlite/0001_runs.sql"),
        )
        .replacing(3),
        Migration::new(
            2,
            "run_order",
            include_str!("../../migrations/sqlite/0002_run_order.sql"),
        )
        .replacing(5),
        Migration::new(
            3,
            "crons",
            include_str!("../../migrations/sqlite/0003_crons.sql"),
        ),
        Migration::new(
            4,
            "trace_context",
            include_str!("../../migrations/sqlite/0004_trace_context.sql"),
        ),
        Migration::new(
            6,
            "leaner_rows",
            include_str!("../../migrations/sqlite/0006_leaner_rows.sql"),
        )
        .formerly("1ba656c5e29abd405e51afab0330aa32dde08e91042a258ad11235ec4d48d895"),
        Migration::new(
            7,
            "packed_events",
            include_str!("../../migrations/sqlite/0007_packed_events.sql"),
        )
        .formerly("440f64dcd33cef4fb07ad4df59bd518d9010c0bc1617a06ab4c247612451d435"),
        Migration::new(
            10,
            "thread_ttl",
            include_str!("../../migrations/sqlite/0010_thread_ttl.sql"),
        ),
    ],
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use palgraph::db::migrate::Applied;
    use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path};
    use palgraph::testkit::unscoped;

    use super::MIGRATIONS;

    #[tokio::test]
    async fn a_database_from_before_scopes_keeps_its_runs_and_reruns_nothing() {
        let path = temp_db_path();
        let pool = unscoped::sqlite_pool(&path).await.unwrap();
        unscoped::migrate_sqlite(&pool, 5).await.unwrap();
        sqlx::query(
            "INSERT INTO runs (run_id, thread_id, owner, assistant_id, graph_id, status, kwargs,
             multitask_strategy, created_at_ms, updated_at_ms, thread_seq)
             VALUES ('r1', 't1', 'u', 'a', 'g', 'success', '{}', 'reject', 1, 1, 1)",
        )
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO run_events (run_id, seq, thread_id, event)
             VALUES ('r1', 1, 't1', '{\"type\": \"completed\"}')",
        )
        .execute(&pool)
        .await
        .unwrap();
        let applied = MIGRATIONS.apply_sqlite(&pool).await.unwrap();
        assert_eq!(
            applied,
            Applied {
                ran: vec![3, 4, 6, 7, 10],
                adopted: vec![1, 2]
            },
            "unscoped 3 and 5 are the server's 1 and 2"
        );
        let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(runs, 1);
        // An event stored before events were packed reads as it was.
        let (event, packed): (
            Option<sqlx::types::Json<serde_json::Value>>,
            Option<Vec<u8>>,
        ) = sqlx::query_as("SELECT event, packed FROM run_events WHERE run_id = 'r1'")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(
            crate::store::stored_event(event.map(|j| j.0), packed.as_deref()).unwrap(),
            serde_json::json!({"type": "completed"})
        );
        assert_eq!(
            MIGRATIONS.apply_sqlite(&pool).await.unwrap(),
            Applied::default()
        );
        pool.close().await;
        remove_sqlite_files(&path);

        let path = temp_db_path();
        let pool = unscoped::sqlite_pool(&path).await.unwrap();
        let applied = MIGRATIONS.apply_sqlite(&pool).await.unwrap();
        assert_eq!(
            applied.ran,
            [1, 2, 3, 4, 6, 7, 10],
            "a fresh database runs them all"
        );
        pool.close().await;
        remove_sqlite_files(&path);
    }
}
