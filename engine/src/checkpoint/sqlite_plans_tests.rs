//! The SQLite checkpointer's queries on a big database, the twin of `pg_plans_tests`:
//! every query on the checkpoint tables finds its rows by an index (a primary key or the
//! unique `(thread_id, seq)` key), never by a full scan of a table, and none sorts a big
//! table's rows in a temporary b-tree, whatever the table size.

use serde_json::json;
use sqlx::SqlitePool;

use super::sqlite_sql as q;
use crate::testkit::backends::{remove_sqlite_files, temp_db_path};

/// A thread of six checkpoints whose `messages` field is a delta chain, with two pending
/// writes on its head, copied `copies` times under the threads `t0000001`, `t0000002`, ...
async fn grow(pool: &SqlitePool, copies: i64) {
    let mut prev: Option<String> = None;
    for seq in 1..=6i64 {
        let id = format!("00000000-0000-7000-8000-{seq:012}");
        let vals = json!({"messages": [prev, prev.is_some(), [format!("message {seq}")]]});
        sqlx::query(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, seq, parent_id, created_at_ms,
                                      metadata, versions, plan, vals)
             VALUES ('template', ?1, ?2, ?3, 0, ?4, ?5, '[]', ?6)",
        )
        .bind(&id)
        .bind(seq)
        .bind(&prev)
        .bind(json!({"run_id": format!("run-{seq}"), "step": seq}).to_string())
        .bind(json!({"messages": id}).to_string())
        .bind(vals.to_string())
        .execute(pool)
        .await
        .expect("insert a checkpoint");
        prev = Some(id);
    }
    sqlx::query(
        "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, task_id, channel, idx, value)
         VALUES ('template', ?1, 'task', 'messages', 0, '[\"pending\"]'),
                ('template', ?1, 'task', '__interrupt__', 0, '{}')",
    )
    .bind(&prev)
    .execute(pool)
    .await
    .expect("insert pending writes");
    // The copies, in key order (a recursive CTE counts them out).
    for (table, cols) in [
        (
            "checkpoints",
            "checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals, hidden",
        ),
        (
            "checkpoint_writes",
            "checkpoint_id, task_id, channel, idx, value",
        ),
    ] {
        let sql = format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
             INSERT INTO {table} (thread_id, {cols})
             SELECT printf('t%07d', n.i), {cols} FROM n, {table} t WHERE t.thread_id = 'template'
             ORDER BY 1"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(copies)
            .execute(pool)
            .await
            .expect("copy the thread");
    }
    sqlx::query("ANALYZE").execute(pool).await.expect("analyze");
}

/// A parameter of a query explained.
enum P {
    T(&'static str),
    I(i64),
    Null,
}

/// `EXPLAIN QUERY PLAN` of `sql` with `params` bound: the plan's lines.
async fn plan(pool: &SqlitePool, sql: &str, params: &[P]) -> Vec<String> {
    let text = format!("EXPLAIN QUERY PLAN {sql}");
    let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(sqlx::AssertSqlSafe(text));
    for p in params {
        query = match p {
            P::T(s) => query.bind(*s),
            P::I(i) => query.bind(*i),
            P::Null => query.bind(None::<String>),
        };
    }
    query
        .fetch_all(pool)
        .await
        .unwrap_or_else(|e| panic!("explain {sql}: {e}"))
        .into_iter()
        .map(|r| r.3)
        .collect()
}

/// Whether a plan line scans something other than a table-valued function (`json_each`),
/// the delta-chain CTE's own rows (`chain`, aliased `ch`) or a constant row: a full scan of
/// a table or of an index (`SCAN t USING INDEX ...`).
fn full_scan(line: &str) -> bool {
    line.starts_with("SCAN ")
        && !line.contains("VIRTUAL TABLE")
        && !line.starts_with("SCAN CONSTANT ROW")
        && line != "SCAN chain"
        && line != "SCAN ch"
}

/// Whether a plan line finds rows of a table through an index.
fn index_probe(line: &str) -> bool {
    line.starts_with("SEARCH ")
        && (line.contains("USING PRIMARY KEY")
            || line.contains("USING INDEX")
            || line.contains("USING COVERING INDEX"))
}

#[tokio::test]
async fn every_checkpoint_query_is_index_probes_on_a_big_database() {
    let path = temp_db_path();
    let pool = crate::db::open_sqlite(&path)
        .await
        .expect("open the file the way palgraph does");
    // 50,000 threads: 300,006 checkpoint rows, 100,002 pending writes.
    let t0 = std::time::Instant::now();
    grow(&pool, 50_000).await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM checkpoints")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(rows, 300_006);
    let grown = t0.elapsed();
    let head = "00000000-0000-7000-8000-000000000006";
    let first = "00000000-0000-7000-8000-000000000001";
    let thread = "t0020000";
    // Every statement of the checkpointer on `checkpoints` / `checkpoint_writes`, with the
    // parameters it runs with; `false`: an insert of values, whose plan has no lines (its
    // conflict check is a probe of the key by construction).
    let cases: Vec<(&str, &str, Vec<P>, bool)> = vec![
        ("head", q::HEAD, vec![P::T(thread)], true),
        ("head in a write", q::HEAD_SEQ, vec![P::T(thread)], true),
        (
            "load the head",
            q::THE_CHECKPOINT,
            vec![P::T(thread), P::Null],
            true,
        ),
        (
            "load by id",
            q::THE_CHECKPOINT,
            vec![P::T(thread), P::T(first)],
            true,
        ),
        (
            "delta chains",
            q::CHAIN,
            vec![
                P::T(thread),
                P::T(r#"{"messages": "00000000-0000-7000-8000-000000000006"}"#),
            ],
            true,
        ),
        (
            "pending writes",
            q::WRITES,
            vec![P::T(thread), P::T(head)],
            true,
        ),
        (
            "list",
            q::LIST,
            vec![P::T(thread), P::Null, P::Null, P::I(-1)],
            true,
        ),
        (
            "list before, filtered, limited",
            q::LIST,
            vec![P::T(thread), P::T(head), P::T(r#"{"step": 3}"#), P::I(2)],
            true,
        ),
        ("fence", q::FENCE_EPOCH, vec![P::T(thread)], true),
        (
            "put",
            q::PUT,
            vec![
                P::T(thread),
                P::T("00000000-0000-7000-8000-000000000007"),
                P::I(7),
                P::T(head),
                P::I(0),
                P::T("{}"),
                P::T("{}"),
                P::T("[]"),
                P::T("{}"),
            ],
            false,
        ),
        (
            "put_writes",
            q::PUT_WRITE,
            vec![
                P::T(thread),
                P::T(head),
                P::T("task"),
                P::T("__error__"),
                P::I(0),
                P::T("{}"),
            ],
            false,
        ),
        ("prune: read the thread", q::LINKS, vec![P::T(thread)], true),
        (
            "prune: delete writes",
            q::DELETE_WRITES_OF,
            vec![P::T(thread), P::T(first)],
            true,
        ),
        (
            "prune: delete",
            q::DELETE_CHECKPOINT,
            vec![P::T(thread), P::T(first)],
            true,
        ),
        (
            "prune: hide",
            q::HIDE,
            vec![P::T(thread), P::T(first), P::T(r#"["messages"]"#)],
            true,
        ),
    ];
    let mut cases = cases;
    for sql in q::DELETE_THREAD {
        let params = vec![P::T(thread), P::T("t0020000|"), P::T("t0020000}")];
        cases.push(("delete_thread", sql, params, true));
    }
    for sql in q::COPY_THREAD {
        let params = vec![
            P::T(thread),
            P::T("copy"),
            P::T("t0020000|"),
            P::T("t0020000}"),
        ];
        cases.push(("copy_thread", sql, params, true));
    }
    let mut report = Vec::new();
    for (name, sql, params, probes) in &cases {
        let lines = plan(&pool, sql, params).await;
        for l in &lines {
            assert!(
                !full_scan(l),
                "{name}: a full scan ({l}) in {lines:#?}\n{sql}"
            );
            assert!(
                !l.contains("USE TEMP B-TREE"),
                "{name}: a sort in a temporary b-tree ({l}) in {lines:#?}\n{sql}"
            );
        }
        if *probes {
            assert!(
                lines.iter().any(|l| index_probe(l)),
                "{name}: no index probe in {lines:#?}\n{sql}"
            );
        }
        report.push(format!("{name}: {}", lines.join("; ")));
    }
    println!(
        "{rows} checkpoint rows (grown in {:.1} s):\n  {}",
        grown.as_secs_f64(),
        report.join("\n  ")
    );
    pool.close().await;
    remove_sqlite_files(&path);
}
