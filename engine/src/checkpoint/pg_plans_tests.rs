//! The Postgres checkpoint load's plan on a big database: index probes only,
//! whatever the table size, and no JIT compilation on palgraph's own connections (the
//! recursive query's estimated cost crosses `jit_above_cost` once the tables are big, and
//! compiling it took longer than running it).

use serde_json::{json, Value};

use crate::testkit::backends::PgSchema;

/// Every node of a plan (depth first).
fn nodes(plan: &Value, out: &mut Vec<Value>) {
    out.push(plan.clone());
    if let Some(children) = plan.get("Plans").and_then(Value::as_array) {
        for c in children {
            nodes(c, out);
        }
    }
}

/// Asserts that a plan's nodes (see [`nodes`]) read `checkpoints` by index probes only and
/// scan no table sequentially; `what` names the plan in the failure.
fn assert_index_probes(all: &[Value], what: &str) {
    assert!(
        all.iter()
            .filter(|n| n["Relation Name"] == "checkpoints" && n["Node Type"] != "ModifyTable")
            .all(|n| n["Node Type"]
                .as_str()
                .is_some_and(|k| k.starts_with("Index"))),
        "only index probes of checkpoints: {what}"
    );
    assert!(
        !all.iter().any(|n| n["Node Type"] == "Seq Scan"),
        "a sequential scan: {what}"
    );
}

/// A pool on `schema`, opened the way palgraph opens its own (with its session settings).
async fn palgraph_pool(schema: &PgSchema, connections: u32) -> sqlx::PgPool {
    crate::db::open_postgres_as(&schema.schema_url(), connections, Some(&schema.name))
        .await
        .expect("open the schema the way palgraph does")
}

/// A thread of six checkpoints whose `messages` field is a delta chain, copied `copies`
/// times under other thread ids.
async fn grow(pool: &sqlx::PgPool, copies: i64) {
    let mut prev: Option<String> = None;
    for seq in 1..=6i64 {
        let id = format!("00000000-0000-7000-8000-{seq:012}");
        let vals = json!({"messages": [prev, prev.is_some(), [format!("message {seq}")]]});
        sqlx::query(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, seq, parent_id, created_at_ms,
                                      metadata, versions, plan, vals)
             VALUES ('template', $1, $2, $3, 0, '{}', $4, '[]', $5)",
        )
        .bind(&id)
        .bind(seq)
        .bind(&prev)
        .bind(json!({"messages": id}))
        .bind(vals)
        .execute(pool)
        .await
        .expect("insert a checkpoint");
        prev = Some(id);
    }
    sqlx::query(
        "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
         VALUES ('template', $1, 'task', 'messages', 0, '[\"pending\"]'),
                ('template', $1, 'task', '__interrupt__', 0, '{}')",
    )
    .bind(&prev)
    .execute(pool)
    .await
    .expect("insert pending writes");
    sqlx::query(
        "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
         SELECT 't' || i, w.checkpoint_id, w.task_id, w.channel, w.idx, w.value
         FROM generate_series(1, $1::bigint) AS i, checkpoint_writes w
         WHERE w.thread_id = 'template'",
    )
    .bind(copies)
    .execute(pool)
    .await
    .expect("copy the writes");
    sqlx::query(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, seq, parent_id, created_at_ms,
                                  metadata, versions, plan, vals)
         SELECT 't' || i, c.checkpoint_id, c.seq, c.parent_id, c.created_at_ms,
                c.metadata, c.versions, c.plan, c.vals
         FROM generate_series(1, $1::bigint) AS i, checkpoints c WHERE c.thread_id = 'template'",
    )
    .bind(copies)
    .execute(pool)
    .await
    .expect("copy the thread");
    sqlx::query("ANALYZE checkpoints")
        .execute(pool)
        .await
        .expect("analyze");
    sqlx::query("ANALYZE checkpoint_writes")
        .execute(pool)
        .await
        .expect("analyze");
}

/// The load's plan for `thread`, run, with the JIT threshold at 0.
async fn explain_on(conn: &mut sqlx::PgConnection, thread: &str) -> Value {
    let sql = format!("EXPLAIN (ANALYZE, FORMAT JSON) {}", super::pg_sql::GET);
    let mut tx = sqlx::Connection::begin(conn).await.expect("begin");
    sqlx::query("SET LOCAL jit_above_cost = 0")
        .execute(&mut *tx)
        .await
        .expect("set the threshold");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(thread)
        .bind(None::<String>)
        .fetch_one(&mut *tx)
        .await
        .expect("explain the load")
}

#[tokio::test]
async fn the_checkpoint_load_is_index_probes_without_jit_on_a_big_database() {
    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    // 40,000 threads, 240,000 checkpoint rows: the load's estimated cost is then above
    // Postgres 15's default `jit_above_cost` (100,000).
    grow(&pool, 40_000).await;
    // Whatever the estimate, palgraph's connections never compile: even with the threshold
    // at 0 (a control connection with the server's defaults does compile then).
    let mut ours = pool.acquire().await.expect("a connection");
    let out = explain_on(&mut ours, "t20000").await;
    let mut control = <sqlx::PgConnection as sqlx::Connection>::connect_with(&schema.options())
        .await
        .expect("a connection with the server's defaults");
    let with_defaults = explain_on(&mut control, "t20000").await;
    let jit_available = with_defaults[0].get("JIT").is_some();
    let top = &out[0];
    let cost = top["Plan"]["Total Cost"].as_f64().unwrap_or(0.0);
    assert!(
        top.get("JIT").is_none(),
        "no JIT on palgraph's connections (cost {cost}): {}",
        top["JIT"]
    );
    let mut all = Vec::new();
    nodes(&top["Plan"], &mut all);
    for n in &all {
        let kind = n["Node Type"].as_str().unwrap_or("");
        let table = n["Relation Name"].as_str().unwrap_or("");
        assert!(
            !(kind == "Seq Scan" && table.starts_with("checkpoint")),
            "a sequential scan of {table} in the load's plan: {top}"
        );
    }
    let probes = all
        .iter()
        .filter(|n| {
            n["Node Type"]
                .as_str()
                .is_some_and(|k| k.starts_with("Index"))
        })
        .count();
    assert!(probes > 0, "index probes: {top}");
    println!(
        "checkpoint load on 240,000 rows: estimated cost {cost}, {:.2} ms, no JIT \
         (with the server's defaults and the threshold at 0: {} ms, JIT {})",
        top["Execution Time"].as_f64().unwrap_or(f64::NAN),
        with_defaults[0]["Execution Time"],
        if jit_available {
            "compiled"
        } else {
            "not available on this server"
        }
    );
}

#[tokio::test]
async fn a_checkpointer_given_a_pool_that_compiles_loads_on_connections_that_do_not() {
    let schema = PgSchema::create().await;
    // A pool as a user might open it: JIT on, and every query over the threshold.
    let pool = schema
        .pool_with(2, schema.options().options([("jit_above_cost", "0")]))
        .await;
    grow(&pool, 10).await;
    let cp = super::PostgresCheckpointer::new(pool.clone());
    let loaded = super::Checkpointer::get(&cp, "t7", None)
        .await
        .expect("load")
        .expect("the thread's head");
    assert_eq!(loaded.record.seq, 6);
    assert_eq!(loaded.writes.len(), 2, "the head's pending writes");
    // The connection the checkpointer just loaded on, and one of the pool's, side by side.
    let mut ours = cp
        .reads
        .take()
        .await
        .expect("the checkpointer's read connection");
    let out = explain_on(&mut ours, "t7").await;
    assert!(
        out[0].get("JIT").is_none(),
        "the checkpointer's load compiled: {}",
        out[0]["JIT"]
    );
    let mut theirs = pool.acquire().await.expect("a pool connection");
    let control = explain_on(&mut theirs, "t7").await;
    let jit_available: bool = sqlx::query_scalar("SELECT pg_jit_available()")
        .fetch_one(&mut *theirs)
        .await
        .expect("ask the server");
    assert_eq!(
        control[0].get("JIT").is_some(),
        jit_available,
        "the control compiles exactly when the server can: {}",
        control[0]
    );
}

/// An unfenced checkpoint row of `thread` with empty values, following `prev` (the head it
/// expects and its parent).
fn empty_row(
    thread: &str,
    id: &str,
    seq: i64,
    prev: Option<&str>,
) -> super::pg_group_commit::NewRow {
    super::pg_group_commit::NewRow {
        thread_id: thread.into(),
        checkpoint_id: id.into(),
        seq,
        parent_id: prev.map(str::to_string),
        created_at_ms: 0,
        metadata: "{}".into(),
        versions: "{}".into(),
        plan: "[]".into(),
        vals: "{}".into(),
        expected: prev.map(str::to_string),
        fence: None,
        claim: false,
        flush: super::Flush::Now,
    }
}

/// Puts on the checkpointer's own connections run on one generic plan: without
/// `force_generic_plan` Postgres keeps planning the guarded insert afresh for every put
/// (its custom plans are estimated cheaper), and planning cost more than the insert.
#[tokio::test]
async fn the_checkpoint_insert_is_planned_once_per_kind_of_put() {
    use super::pg_group_commit::{insert_one, put_statement, Fencing};
    use crate::db::reuse::Reused;

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    grow(&pool, 1_000).await;
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    let mut prev: Option<String> = None;
    for seq in 1..=8i64 {
        let id = format!("00000000-0000-7000-8000-{seq:012}");
        let row = empty_row("planned", &id, seq, prev.as_deref());
        assert!(insert_one(&conns, &row).await.expect("put"), "put {seq}");
        prev = Some(id);
    }
    // The connection came from the pool (migrations and `grow` ran on it before): the
    // puts' own prepared statements are the ones with their exact texts, one for the
    // thread's first checkpoint and one for those that follow a head.
    let mut conn = conns.take().await.expect("the same connection");
    for (first, puts) in [(true, 1), (false, 7)] {
        let (generic, custom): (i64, i64) = sqlx::query_as(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
        )
        .bind(put_statement(first, Fencing::None, super::Flush::Now))
        .fetch_one(&mut *conn)
        .await
        .expect("the insert is a prepared statement of the connection");
        assert_eq!(
            (generic, custom),
            (puts, 0),
            "one generic plan for every put"
        );
    }
    conn.keep();
}

/// Loads and head reads on the checkpointer's own read connections run on one generic plan
/// per statement, made on whatever tables the connection first saw: on a database grown to
/// millions of checkpoint rows, Postgres would otherwise plan the load afresh on every call,
/// and planning it takes longer than running it (`palgraph-bench --only j` measures a load on
/// a grown database against a fresh one). Each plan, made on empty tables and
/// made again once they grew, is index probes.
#[tokio::test]
async fn the_checkpoint_reads_are_planned_once_and_probe_indexes_as_the_tables_grow() {
    use super::pg_sql::{GET, GET_WITHOUT_VALUES, HEAD};
    use super::{Checkpointer, PostgresCheckpointer};

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    let cp = PostgresCheckpointer::new(pool.clone());
    let reads = [
        (GET, "('t20000', NULL)"),
        (GET_WITHOUT_VALUES, "('t20000', NULL)"),
        (HEAD, "('t20000')"),
    ];
    let mut loads = 0;
    for copies in [0, 40_000] {
        if copies > 0 {
            grow(&pool, copies).await;
        }
        for _ in 0..8 {
            let found = cp.get("t20000", None).await.expect("a load").is_some();
            assert_eq!(found, copies > 0);
            cp.get_without_values("t20000", None)
                .await
                .expect("a load without values");
            cp.head("t20000").await.expect("a head read");
            loads += 1;
        }
        // Loads one after the other take the same read connection: its prepared statements
        // are the reads'.
        let mut conn = cp.reads.take().await.expect("the read connection");
        for (sql, args) in reads {
            let (name, generic, custom): (String, i64, i64) = sqlx::query_as(
                "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
                 WHERE statement = $1",
            )
            .bind(sql)
            .fetch_one(&mut *conn)
            .await
            .expect("the read is a prepared statement of the connection");
            assert_eq!((generic, custom), (loads, 0), "one generic plan: {sql}");
            let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "EXPLAIN (FORMAT JSON) EXECUTE {name}{args}"
            )))
            .fetch_one(&mut *conn)
            .await
            .expect("the read's generic plan");
            let mut all = Vec::new();
            nodes(&plan[0]["Plan"], &mut all);
            assert_index_probes(&all, &format!("{sql} on {copies} threads: {plan}"));
        }
        conn.keep();
        // `EXPLAIN EXECUTE` counts as one more use of each plan.
        loads += 1;
    }
}

/// Every kind of single put (a first checkpoint or one that follows a head; without a
/// fence, holding one or claiming it; flushed or not) is planned once per connection, often
/// while the tables are still empty, and keeps that plan as they grow. Each must probe
/// indexes in a plan made on empty tables, and in one made on grown tables (see the batch
/// insert's test below for a check that did not).
#[tokio::test]
async fn every_single_put_planned_on_empty_tables_probes_indexes_as_they_grow() {
    use super::pg_group_commit::{put_statement, Fencing};
    use super::Flush;

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    let mut conn = pool.acquire().await.expect("a connection");
    sqlx::raw_sql("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .expect("generic plans");
    let mut kinds = Vec::new();
    for first in [true, false] {
        for fencing in [Fencing::None, Fencing::Held, Fencing::Claimed] {
            for flush in [Flush::Now, Flush::WithNext] {
                kinds.push((kinds.len(), first, fencing, flush));
            }
        }
    }
    for &(i, first, fencing, flush) in &kinds {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PREPARE put_{i} (text, text, bigint, text, bigint, text, text, text, text, text,
                              text, bigint) AS {}",
            put_statement(first, fencing, flush)
        )))
        .execute(&mut *conn)
        .await
        .expect("prepare the insert");
    }
    let explain = |i: usize, first: bool, fencing: Fencing| {
        let expected = if first { "NULL" } else { "'p'" };
        let fence = match fencing {
            Fencing::None => "NULL, NULL",
            _ => "'k', 1",
        };
        format!(
            "EXPLAIN (FORMAT JSON) EXECUTE put_{i}('t500', 'next', 7, 'p', 0, '{{}}', '{{}}',
                                                   '[]', '{{}}', {expected}, {fence})"
        )
    };
    let mut on_empty = Vec::new();
    for &(i, first, fencing, _) in &kinds {
        let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain(i, first, fencing)))
            .fetch_one(&mut *conn)
            .await
            .expect("explain the insert");
        on_empty.push(plan);
    }
    grow(&pool, 2_000).await;
    for &(i, first, fencing, flush) in &kinds {
        let grown: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain(i, first, fencing)))
            .fetch_one(&mut *conn)
            .await
            .expect("explain the insert");
        for plan in [&on_empty[i], &grown] {
            let mut all = Vec::new();
            nodes(&plan[0]["Plan"], &mut all);
            assert_index_probes(
                &all,
                &format!("first {first}, {fencing:?}, {flush:?}: {plan}"),
            );
        }
    }
    conn.detach();
}

/// A put whose guard passed but whose place was taken (the unique key refuses it: another
/// writer's insert committed first) is answered "not inserted", as a conflict, and its
/// connection is kept for the next statement.
#[tokio::test]
async fn a_put_the_unique_key_refuses_is_a_conflict_on_a_connection_kept() {
    use super::pg_group_commit::insert_one;
    use crate::db::reuse::Reused;

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    let row = |id: &str, seq: i64, prev: Option<&str>| empty_row("raced", id, seq, prev);
    let backend = || async {
        let mut conn = conns.take().await.expect("a connection");
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *conn)
            .await
            .expect("the backend's pid");
        conn.keep();
        pid
    };
    assert!(insert_one(&conns, &row("a", 1, None)).await.expect("put a"));
    assert!(insert_one(&conns, &row("b", 2, Some("a")))
        .await
        .expect("put b"));
    let before = backend().await;
    // The guard passes (the head is `b` at seq 2); the id `a` is taken.
    let refused = insert_one(&conns, &row("a", 3, Some("b"))).await;
    assert!(!refused.expect("a refusal, not an error"), "not inserted");
    assert_eq!(backend().await, before, "the same connection, kept");
    assert!(insert_one(&conns, &row("c", 3, Some("b")))
        .await
        .expect("put c"));
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'raced' ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .expect("the thread's checkpoints");
    assert_eq!(ids, ["a", "b", "c"]);
}

/// Every node of a batch insert's generic plan (as `EXPLAIN EXECUTE` shows it) on `conn`,
/// where `statement` is prepared; `claim`: whether its row claims its fence.
async fn batch_plan(
    conn: &mut sqlx::PgConnection,
    statement: &str,
    claim: bool,
) -> (Value, Vec<Value>) {
    let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN (FORMAT JSON) EXECUTE {statement}('{{t7}}', '{{next}}', '{{1}}', '{{NULL}}',
            '{{0}}', '{{\"{{}}\"}}', '{{\"{{}}\"}}', '{{[]}}', '{{\"{{}}\"}}', '{{NULL}}',
            '{{t7}}', '{{1}}', '{{{claim}}}')"
    )))
    .fetch_one(&mut *conn)
    .await
    .expect("explain the batch insert");
    let mut all = Vec::new();
    nodes(&plan[0]["Plan"], &mut all);
    (plan, all)
}

/// The group commit's inserts are planned once per connection (`force_generic_plan`),
/// often while the tables are still empty, and that plan is kept as they grow (nothing
/// replans it until the next `ANALYZE`). Their checks must probe indexes even in a plan
/// made on empty tables: a hashed `NOT EXISTS` there read the whole table for every batch.
/// The same holds for the batch that claims fences (it raises them first).
#[tokio::test]
async fn the_batch_insert_planned_on_empty_tables_probes_indexes_as_they_grow() {
    use super::pg_group_commit::{PUT_BATCH, PUT_BATCH_CLAIMING};

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 1).await;
    let mut conn = pool.acquire().await.expect("a connection");
    let statements = [
        ("planned_batch", PUT_BATCH, false),
        ("planned_claiming", PUT_BATCH_CLAIMING, true),
    ];
    for (name, sql, _) in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "SET plan_cache_mode = force_generic_plan;
             PREPARE {name} (text[], text[], int8[], text[], int8[], text[], text[],
                 text[], text[], text[], text[], int8[], bool[]) AS {sql}"
        )))
        .execute(&mut *conn)
        .await
        .expect("prepare the batch insert");
    }
    let mut on_empty = Vec::new();
    for (name, _, claim) in statements {
        on_empty.push(batch_plan(&mut conn, name, claim).await);
    }
    // The tables grow on other connections, without an `ANALYZE`: the plans stay.
    for copies in [0, 2_000] {
        if copies > 0 {
            let mut other =
                <sqlx::PgConnection as sqlx::Connection>::connect_with(&schema.options())
                    .await
                    .expect("another connection");
            sqlx::query(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, seq, created_at_ms,
                                          metadata, versions, plan, vals)
                 SELECT 't' || i, 'c' || s, s, 0, '{}', '{}', '[]', '{}'
                 FROM generate_series(1, $1::bigint) AS i, generate_series(1, 6) AS s",
            )
            .bind(copies)
            .execute(&mut other)
            .await
            .expect("grow the table");
        }
        for (i, (name, _, claim)) in statements.into_iter().enumerate() {
            let (plan, all) = if copies == 0 {
                on_empty[i].clone()
            } else {
                batch_plan(&mut conn, name, claim).await
            };
            assert_index_probes(&all, &format!("{name} after {copies} threads: {plan}"));
        }
    }
}

/// The batch insert takes its rows column by column: each JSON column arrives as text and
/// is stored as the same JSON (a `\u0000` escape, which `jsonb` cannot hold, made harmless
/// as in a single put, so that the history filter can read metadata as `jsonb`), a row
/// whose guard fails is left out while the others go in, and a value big enough to be
/// compressed is compressed with lz4 where this Postgres has it (migration 5).
#[tokio::test]
async fn the_batch_insert_stores_each_rows_json_and_compresses_big_values_with_lz4() {
    use super::pg_group_commit::insert_many;
    use crate::db::reuse::Reused;

    let schema = PgSchema::create().await;
    let pool = palgraph_pool(&schema, 2).await;
    let conns = Reused::with_generic_plans(pool.clone(), 1);
    let big: Vec<String> = (0..400)
        .map(|i| format!("passage {i} of the answer"))
        .collect();
    let mut first = empty_row("batched", "a", 1, None);
    first.metadata = r#"{"source": "input", "step": -1, "note": "nul \u0000 here"}"#.into();
    first.versions = r#"{"answer": "a"}"#.into();
    first.plan = r#"{"tasks": [{"id": "t", "node": "n"}]}"#.into();
    first.vals = json!({"answer": big}).to_string();
    let other = empty_row("another", "x", 1, None);
    // Expects a head its thread does not have: refused, the others still inserted.
    let stale = empty_row("stale", "s", 2, Some("nothing"));
    let inserted = insert_many(&conns, &[&first, &other, &stale])
        .await
        .expect("the batch");
    let mut got: Vec<_> = inserted.into_iter().collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("another".to_string(), "x".to_string()),
            ("batched".to_string(), "a".to_string())
        ]
    );
    let (metadata, versions, plan, vals, compression): (
        Value,
        Value,
        Value,
        Value,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT metadata::jsonb, versions::jsonb, plan::jsonb, vals, pg_column_compression(vals)
             FROM checkpoints WHERE thread_id = 'batched'",
    )
    .fetch_one(&pool)
    .await
    .expect("the row");
    assert_eq!(metadata["source"], "input");
    assert_eq!(metadata["step"], -1);
    assert!(
        metadata["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("nul ") && n.ends_with(" here")),
        "{metadata}"
    );
    assert_eq!(versions, json!({"answer": "a"}));
    assert_eq!(plan["tasks"][0]["node"], "n");
    assert_eq!(vals, json!({"answer": big}));
    let has_lz4 = sqlx::query("SELECT set_config('default_toast_compression', 'lz4', true)")
        .execute(&pool)
        .await
        .is_ok();
    let expected = if has_lz4 { "lz4" } else { "pglz" };
    assert_eq!(
        compression.as_deref(),
        Some(expected),
        "a big value, compressed"
    );
}
