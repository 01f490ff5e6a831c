//! Migrations on real SQLite files and Postgres schemas: each version of a scope is applied
//! once even when migrators start together; a schema newer than the binary and a changed
//! migration are refused with typed errors; a database migrated before migrations were
//! scoped upgrades in place without running anything again.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use palgraph::checkpoint::{
    CheckpointError, ListOptions, PostgresCheckpointer, PruneStrategy, SqliteCheckpointer,
};
use palgraph::db::migrate::{Applied, MigrateError, Migration, Migrator, UNSCOPED_SENTINEL};
use palgraph::db::MIGRATIONS;
use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};
use palgraph::testkit::fixtures::{build, say, thread, TestState, Upd};
use palgraph::testkit::unscoped;
use palgraph::{Checkpointer, NodeContext, NodeError, RunConfig, StateGraph, END, START};
use serde_json::{json, Value};

fn counter_graph(cp: Arc<dyn Checkpointer>) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("count", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().counter(s.counter + 1))
    });
    g.add_edge(START, "count");
    g.add_edge("count", END);
    build(g, cp)
}

fn versions(migrations: &[Migration]) -> Vec<i64> {
    migrations.iter().map(|m| m.version).collect()
}

/// A pool on a fresh schema that is not migrated yet.
async fn bare_pool(schema: &PgSchema, connections: u32) -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(connections)
        .connect_with(schema.options())
        .await
        .unwrap()
}

#[tokio::test]
async fn sqlite_schema_ahead_of_the_binary_is_refused() {
    let path = temp_db_path();
    let cp = SqliteCheckpointer::open(&path).await.unwrap();
    assert_eq!(
        MIGRATIONS.apply_sqlite(cp.pool()).await.unwrap(),
        Applied::default(),
        "migrating twice applies nothing"
    );
    sqlx::query(
        "INSERT INTO palgraph_migrations (scope, version, name, checksum)
         VALUES ('engine', 999, 'from the future', '')",
    )
    .execute(cp.pool())
    .await
    .unwrap();
    drop(cp);
    let err = SqliteCheckpointer::open(&path).await.unwrap_err();
    let supported = MIGRATIONS.supported_sqlite();
    assert!(
        matches!(
            err,
            CheckpointError::Migrate(MigrateError::SchemaAhead { scope: "engine", found: 999, supported: s })
                if s == supported
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade palgraph"), "{err}");
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn postgres_schema_ahead_of_the_binary_is_refused() {
    let schema = PgSchema::create().await;
    let pool = schema.pool(2).await;
    assert_eq!(
        MIGRATIONS.apply_postgres(&pool).await.unwrap(),
        Applied::default(),
        "migrating twice applies nothing"
    );
    let recorded: Vec<(String, i64, String)> = sqlx::query_as(
        "SELECT scope, version, checksum FROM palgraph_migrations ORDER BY scope, version",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let expected: Vec<(String, i64, String)> = MIGRATIONS
        .postgres
        .iter()
        .map(|m| ("engine".to_string(), m.version, m.checksum()))
        .collect();
    assert_eq!(recorded, expected, "scope, version and checksum recorded");
    sqlx::query(
        "INSERT INTO palgraph_migrations (scope, version, name, checksum)
         VALUES ('engine', 999, 'from the future', '')",
    )
    .execute(&pool)
    .await
    .unwrap();
    let err = MIGRATIONS.apply_postgres(&pool).await.unwrap_err();
    assert!(
        matches!(
            err,
            MigrateError::SchemaAhead {
                scope: "engine",
                found: 999,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_changed_migration_is_refused_on_both_backends() {
    let path = temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    sqlx::query(
        "UPDATE palgraph_migrations SET checksum = 'edited' WHERE scope = 'engine' AND version = 1",
    )
    .execute(&pool)
    .await
    .unwrap();
    let err = MIGRATIONS.apply_sqlite(&pool).await.unwrap_err();
    assert!(
        matches!(
            err,
            MigrateError::Changed {
                scope: "engine",
                version: 1,
                name: "checkpoints"
            }
        ),
        "{err}"
    );
    pool.close().await;
    let err = SqliteCheckpointer::open(&path).await.unwrap_err();
    assert!(
        matches!(err, CheckpointError::Migrate(MigrateError::Changed { .. })),
        "opening refuses it too: {err}"
    );
    remove_sqlite_files(&path);

    let schema = PgSchema::create().await;
    let pool = schema.pool(2).await;
    sqlx::query(
        "UPDATE palgraph_migrations SET checksum = 'edited' WHERE scope = 'engine' AND version = 2",
    )
    .execute(&pool)
    .await
    .unwrap();
    let err = MIGRATIONS.apply_postgres(&pool).await.unwrap_err();
    assert!(
        matches!(
            err,
            MigrateError::Changed {
                version: 2,
                name: "fences",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn concurrent_postgres_migrations_apply_once() {
    let schema = PgSchema::create().await;
    let pool = bare_pool(&schema, 4).await;
    let other = bare_pool(&schema, 2).await;
    let (a, b) = tokio::join!(
        MIGRATIONS.apply_postgres(&pool),
        MIGRATIONS.apply_postgres(&other)
    );
    let mut ran = a.unwrap().ran;
    ran.extend(b.unwrap().ran);
    assert_eq!(
        ran,
        versions(MIGRATIONS.postgres),
        "one migrator applied every version, the other found them done"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sqlite_migrations_apply_once() {
    let path = temp_db_path();
    let (a, b) = (
        unscoped::sqlite_pool(&path).await.unwrap(),
        unscoped::sqlite_pool(&path).await.unwrap(),
    );
    let (x, y) = tokio::join!(MIGRATIONS.apply_sqlite(&a), MIGRATIONS.apply_sqlite(&b));
    let mut ran = x.unwrap().ran;
    ran.extend(y.unwrap().ran);
    assert_eq!(ran, versions(MIGRATIONS.sqlite));
    a.close().await;
    b.close().await;
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn scopes_count_their_versions_apart() {
    const OTHER: Migrator = Migrator {
        scope: "other",
        postgres: &[Migration::new(
            1,
            "widgets",
            "CREATE TABLE widgets (id TEXT)",
        )],
        sqlite: &[Migration::new(
            1,
            "widgets",
            "CREATE TABLE widgets (id TEXT)",
        )],
    };
    let path = temp_db_path();
    let pool = palgraph::db::open_sqlite(&path).await.unwrap();
    assert_eq!(OTHER.apply_sqlite(&pool).await.unwrap().ran, [1]);
    assert_eq!(OTHER.apply_sqlite(&pool).await.unwrap(), Applied::default());
    assert_eq!(
        MIGRATIONS.apply_sqlite(&pool).await.unwrap(),
        Applied::default(),
        "the engine's version 1 is not the other scope's"
    );
    pool.close().await;
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn a_sqlite_database_from_before_scopes_upgrades_in_place() {
    // Everything the unscoped migrator applied, with a conversation on it.
    let path = temp_db_path();
    let pool = unscoped::sqlite_pool(&path).await.unwrap();
    unscoped::migrate_sqlite(&pool, 5).await.unwrap();
    let t = thread();
    let old = counter_graph(Arc::new(SqliteCheckpointer::new(pool.clone())));
    old.invoke(RunConfig::new(&t), say("one")).await.unwrap();

    assert_eq!(
        MIGRATIONS.apply_sqlite(&pool).await.unwrap(),
        Applied {
            ran: vec![3, 4],
            adopted: vec![1, 2]
        },
        "unscoped 1 (checkpoints) and 4 (fences) are adopted, not run again; the node cache (3) and the long-term store (4) are new"
    );
    let recorded: Vec<(i64, String)> = sqlx::query_as(
        "SELECT version, checksum FROM palgraph_migrations WHERE scope = 'engine' ORDER BY version",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let expected: Vec<(i64, String)> = MIGRATIONS
        .sqlite
        .iter()
        .map(|m| (m.version, m.checksum()))
        .collect();
    assert_eq!(recorded, expected, "adopted with their checksums");
    let newest: i64 = sqlx::query_scalar("SELECT max(version) FROM palgraph_schema")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        newest, UNSCOPED_SENTINEL,
        "the old table now reads as newer than any binary from before scopes"
    );
    pool.close().await;

    let cp = SqliteCheckpointer::open(&path).await.unwrap();
    let g = counter_graph(Arc::new(cp));
    let out = g.invoke(RunConfig::new(&t), say("two")).await.unwrap();
    assert_eq!(out.state.counter, 2, "the conversation goes on");
    drop(g);
    remove_sqlite_files(&path);
}

#[tokio::test]
async fn a_postgres_database_from_before_scopes_upgrades_in_place() {
    let schema = PgSchema::create().await;
    let pool = bare_pool(&schema, 2).await;
    unscoped::migrate_postgres(&pool, 5).await.unwrap();
    let t = thread();
    written_with_jsonb_records(&schema, &t, &["one"]).await;
    assert_eq!(
        MIGRATIONS.apply_postgres(&pool).await.unwrap(),
        Applied {
            ran: vec![3, 4, 5, 6],
            adopted: vec![1, 2]
        }
    );
    let g = counter_graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
    assert_eq!(
        MIGRATIONS.apply_postgres(&pool).await.unwrap(),
        Applied::default()
    );
    let newest: i64 = sqlx::query_scalar("SELECT max(version) FROM palgraph_schema")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(newest, UNSCOPED_SENTINEL);
    let out = g.invoke(RunConfig::new(&t), say("two")).await.unwrap();
    assert_eq!(out.state.counter, 2);

    // A database the unscoped migrator left before fences existed gets them now (and the
    // node cache).
    let schema = PgSchema::create().await;
    let pool = bare_pool(&schema, 2).await;
    unscoped::migrate_postgres(&pool, 3).await.unwrap();
    assert_eq!(
        MIGRATIONS.apply_postgres(&pool).await.unwrap(),
        Applied {
            ran: vec![2, 3, 4, 5, 6],
            adopted: vec![1]
        }
    );
    let fences: i64 = sqlx::query_scalar("SELECT count(*) FROM checkpoint_fences")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(fences, 0);
}

/// Writes a conversation of `turns` on thread `t` into `into` (a schema migrated to version
/// 5 or before) as palgraph stored it before migration 6, with each checkpoint's record in
/// jsonb: written on a schema of today's, then copied over with the record cast to jsonb.
/// Returns the history today's checkpointer lists of it there.
async fn written_with_jsonb_records(into: &PgSchema, t: &str, turns: &[&str]) -> Vec<Value> {
    let today = PgSchema::create().await;
    let pool = today.pool(2).await;
    let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
    let g = counter_graph(cp.clone());
    for turn in turns {
        g.invoke(RunConfig::new(t), say(turn)).await.unwrap();
    }
    let (to, from) = (&into.name, &today.name);
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        r#"INSERT INTO "{to}".checkpoints
               (thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan,
                vals, hidden)
           SELECT thread_id, checkpoint_id, seq, parent_id, created_at_ms, metadata::jsonb,
                  versions::jsonb, plan::jsonb, vals, hidden
           FROM "{from}".checkpoints;
           INSERT INTO "{to}".checkpoint_writes SELECT * FROM "{from}".checkpoint_writes"#
    )))
    .execute(&pool)
    .await
    .unwrap();
    history(cp.as_ref(), t, None).await
}

/// A thread's checkpoints, newest first, as JSON (the plan parsed: jsonb reorders its keys).
async fn history(cp: &dyn Checkpointer, t: &str, filter: Option<Value>) -> Vec<Value> {
    let options = ListOptions {
        filter: filter.and_then(|f| f.as_object().cloned()),
        ..Default::default()
    };
    cp.list(t, &options)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let plan: Value = serde_json::from_str(r.plan.get()).unwrap();
            json!([
                r.checkpoint_id,
                r.parent_id,
                r.seq,
                r.created_at_ms,
                r.metadata,
                r.versions,
                plan
            ])
        })
        .collect()
}

/// Migration 6 stores a checkpoint's record as text without rewriting the table: the rows
/// written before keep their jsonb record, and every read takes whichever a row has. A
/// thread written before goes on after it, its old and new checkpoints read, filtered,
/// forked from, copied and pruned alike.
#[tokio::test]
async fn a_postgres_thread_written_before_text_records_reads_and_goes_on() {
    let schema = PgSchema::create().await;
    let pool = bare_pool(&schema, 4).await;
    let before = Migrator {
        scope: "engine",
        postgres: &MIGRATIONS.postgres[..5],
        sqlite: &[],
    };
    before.apply_postgres(&pool).await.unwrap();
    let t = thread();
    let old = written_with_jsonb_records(&schema, &t, &["one", "two"]).await;
    assert_eq!(old.len(), 4, "two turns of two checkpoints");
    assert_eq!(
        MIGRATIONS.apply_postgres(&pool).await.unwrap(),
        Applied {
            ran: vec![6],
            adopted: vec![]
        }
    );
    let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
    assert_eq!(
        history(cp.as_ref(), &t, None).await,
        old,
        "the history reads as written"
    );
    let loops = json!({"source": "loop"});
    assert_eq!(
        history(cp.as_ref(), &t, Some(loops.clone())).await.len(),
        2,
        "the metadata filter reads the old rows"
    );
    let g = counter_graph(cp.clone());
    assert_eq!(g.get_state(&t).await.unwrap().unwrap().values.counter, 2);

    let out = g.invoke(RunConfig::new(&t), say("three")).await.unwrap();
    assert_eq!(
        out.state.counter, 3,
        "the conversation goes on from its old head"
    );
    let now = history(cp.as_ref(), &t, None).await;
    assert_eq!(now.len(), 6);
    assert_eq!(now[2..], old[..], "the new checkpoints follow the old ones");
    assert_eq!(history(cp.as_ref(), &t, Some(loops)).await.len(), 3);
    let (old_rows, new_rows): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE metadata_jsonb IS NOT NULL AND metadata IS NULL),
                count(*) FILTER (WHERE metadata IS NOT NULL AND metadata_jsonb IS NULL)
         FROM checkpoints WHERE thread_id = $1",
    )
    .bind(&t)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((old_rows, new_rows), (4, 2), "nothing was rewritten");

    // An old checkpoint is read by id, with its values, and a copy of the thread holds both.
    let first_turn = old[2][0].as_str().unwrap().to_string();
    let at = g
        .get_state_at(&t, Some(&first_turn))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(at.values.counter, 1);
    let copy = thread();
    cp.copy_thread(&t, &copy).await.unwrap();
    assert_eq!(history(cp.as_ref(), &copy, None).await, now);
    assert_eq!(g.get_state(&copy).await.unwrap().unwrap().values.counter, 3);

    // Removing the first run's checkpoints finds them by the run id in their old metadata.
    let first_run = old[3][4]["run_id"].as_str().unwrap().to_string();
    let removed = cp.delete_for_runs(&t, &[first_run]).await.unwrap();
    assert_eq!(removed.checkpoints, 2);
    assert_eq!(g.get_state(&t).await.unwrap().unwrap().values.counter, 3);
    cp.prune(&copy, PruneStrategy::KeepLatest).await.unwrap();
    assert_eq!(history(cp.as_ref(), &copy, None).await.len(), 1);
    assert_eq!(g.get_state(&copy).await.unwrap().unwrap().values.counter, 3);
}
