//! Section `j`: flat cost with database size. On Postgres and on SQLite: a
//! checkpoint load (`Checkpointer::get` of a thread's latest checkpoint, what a turn and
//! `get_state` start with) of a thread with a few turns, and a turn of the bench graph on a
//! thread with history, first on a fresh database, then again after the checkpoint tables
//! were grown to 10M checkpoint rows (200k with `--quick`; `BENCH_J_ROWS` sets another
//! size) by bulk SQL (copies of a real thread under new thread ids, then ANALYZE, and on
//! Postgres VACUUM and a wait for autovacuum to be idle, as on a database that grew over
//! time rather than a minute before). A second
//! database, set up the same way and never grown, is measured in alternating rounds with
//! the first, before and after the growth: the control for the machine's drift (the ratio
//! to it is in the notes). `BENCH_J_BACKENDS=pg` or `=sqlite` runs one backend.

use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph::checkpoint::{PostgresCheckpointer, SqliteCheckpointer};
use palgraph::testkit::backends::{remove_sqlite_files, temp_db_path, PgSchema};
use palgraph::{Checkpointer, CompiledGraph};
use serde_json::{json, Value};

use crate::shape::{graph, BenchState, Variant};
use crate::{measure, run_turn, tid, Report, Sizes};

/// Turns on the thread whose load is measured (and which the growth copies).
const TEMPLATE_TURNS: usize = 3;
/// Threads the timed turns go round (each with two turns of history first).
const TURN_THREADS: usize = 20;
/// Copies made by one growth statement.
const BATCH: i64 = 20_000;

/// The database under a checkpointer, for growing it in bulk.
enum Db {
    Pg(sqlx::PgPool),
    Sqlite(sqlx::SqlitePool),
}

/// The id of copy `i` (the growth's thread ids, `g000000001`, ...).
fn copy_id(i: i64) -> String {
    format!("g{i:09}")
}

impl Db {
    async fn rows(&self) -> anyhow::Result<(i64, i64)> {
        const SQL: &str = "SELECT (SELECT count(*) FROM checkpoints),
                                  (SELECT count(*) FROM checkpoint_writes)";
        Ok(match self {
            Db::Pg(p) => sqlx::query_as(SQL).fetch_one(p).await?,
            Db::Sqlite(p) => sqlx::query_as(SQL).fetch_one(p).await?,
        })
    }

    /// Bytes of the checkpoint tables with their indexes (Postgres) or of the file (SQLite).
    async fn bytes(&self) -> anyhow::Result<i64> {
        Ok(match self {
            Db::Pg(p) => {
                sqlx::query_scalar(
                    "SELECT (pg_total_relation_size('checkpoints')
                             + pg_total_relation_size('checkpoint_writes'))::bigint",
                )
                .fetch_one(p)
                .await?
            }
            Db::Sqlite(p) => {
                sqlx::query_scalar(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                )
                .fetch_one(p)
                .await?
            }
        })
    }

    /// Copies `template`'s rows under the threads `copy_id(from..=to)`.
    async fn copy(&self, template: &str, from: i64, to: i64) -> anyhow::Result<()> {
        for (table, cols) in [
            (
                "checkpoints",
                "checkpoint_id, seq, parent_id, created_at_ms, metadata, versions, plan, vals, hidden",
            ),
            ("checkpoint_writes", "checkpoint_id, task_id, channel, idx, value"),
        ] {
            let select: Vec<String> = cols.split(", ").map(|c| format!("t.{c}")).collect();
            let select = select.join(", ");
            match self {
                Db::Pg(p) => {
                    let sql = format!(
                        "INSERT INTO {table} (thread_id, {cols})
                         SELECT 'g' || lpad(i::text, 9, '0'), {select}
                         FROM generate_series($1::bigint, $2::bigint) AS i, {table} t
                         WHERE t.thread_id = $3"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(from)
                        .bind(to)
                        .bind(template)
                        .execute(p)
                        .await?;
                }
                Db::Sqlite(p) => {
                    // CROSS JOIN keeps the counter outside: rows come in key order.
                    let sql = format!(
                        "WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
                         INSERT INTO {table} (thread_id, {cols})
                         SELECT printf('g%09d', n.i), {select}
                         FROM n CROSS JOIN {table} t WHERE t.thread_id = ?3"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(from)
                        .bind(to)
                        .bind(template)
                        .execute(p)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Grows the checkpoint table to at least `target` rows with copies of `template`, then
    /// ANALYZE. Returns the number of copies made.
    async fn grow(&self, template: &str, target: i64) -> anyhow::Result<i64> {
        let per_copy: i64 = match self {
            Db::Pg(p) => {
                sqlx::query_scalar("SELECT count(*) FROM checkpoints WHERE thread_id = $1")
                    .bind(template)
                    .fetch_one(p)
                    .await?
            }
            Db::Sqlite(p) => {
                sqlx::query_scalar("SELECT count(*) FROM checkpoints WHERE thread_id = ?1")
                    .bind(template)
                    .fetch_one(p)
                    .await?
            }
        };
        anyhow::ensure!(per_copy > 0, "the template thread has no checkpoints");
        let have = self.rows().await?.0;
        let copies = ((target - have).max(0) + per_copy - 1) / per_copy;
        let t0 = Instant::now();
        let mut from = 1;
        while from <= copies {
            let to = (from + BATCH - 1).min(copies);
            self.copy(template, from, to).await?;
            if to % (BATCH * 25) == 0 {
                println!(
                    "    {} checkpoint rows copied ({:.0} s)",
                    to * per_copy,
                    t0.elapsed().as_secs_f64()
                );
            }
            from = to + 1;
        }
        match self {
            Db::Pg(p) => {
                // VACUUM as well as ANALYZE: a database that grew over months was vacuumed
                // as it grew; without it, autovacuum takes up the bulk insert during the
                // measuring and slows every database on the server alike (a fresh control
                // beside it was seen 1.67x slower).
                sqlx::raw_sql("VACUUM (ANALYZE) checkpoints, checkpoint_writes")
                    .execute(p)
                    .await?;
                idle_autovacuum(p).await?;
                // The growth's dirty pages written out now rather than during the measuring
                // (a superuser's command; without the right, the server does it later).
                if let Err(e) = sqlx::raw_sql("CHECKPOINT").execute(p).await {
                    println!("    (no CHECKPOINT after growing: {e})");
                }
            }
            Db::Sqlite(p) => {
                sqlx::raw_sql("ANALYZE; PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(p)
                    .await?;
            }
        }
        Ok(copies)
    }
}

/// Waits (up to five minutes) until no autovacuum worker runs on the server, so that the
/// measuring does not share the machine with one.
async fn idle_autovacuum(p: &sqlx::PgPool) -> anyhow::Result<()> {
    let t0 = Instant::now();
    loop {
        let busy: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
        )
        .fetch_one(p)
        .await?;
        if busy == 0 {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(300) {
            println!("    ({busy} autovacuum workers still running; measuring anyway)");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A database under test: its checkpointer, the bench graph on it, the thread whose load
/// is measured.
struct Subject {
    db: Db,
    cp: Arc<dyn Checkpointer>,
    g: CompiledGraph<BenchState>,
    thread: String,
}

impl Subject {
    async fn new(db: Db, cp: Arc<dyn Checkpointer>) -> Self {
        let g = graph(cp.clone(), Variant::Plain);
        let thread = tid("j-load");
        for i in 0..TEMPLATE_TURNS {
            run_turn(&g, &thread, i).await;
        }
        Subject { db, cp, g, thread }
    }

    async fn load(&self, thread: &str) {
        match self.cp.get(thread, None).await {
            Ok(Some(_)) => {}
            other => panic!("load of {thread}: {other:?}"),
        }
    }

    /// Fresh threads with two turns of history each, for the timed turns of one phase.
    async fn turn_threads(&self) -> Vec<String> {
        let mut threads = Vec::with_capacity(TURN_THREADS);
        for k in 0..TURN_THREADS {
            let t = tid("j-turn");
            for i in 0..2 {
                run_turn(&self.g, &t, k + i).await;
            }
            threads.push(t);
        }
        threads
    }
}

/// Samples of one subject in one phase: loads of its measured thread, turns.
#[derive(Default)]
struct Samples {
    load: Vec<f64>,
    turn: Vec<f64>,
}

/// Rounds per phase: the subjects of a phase take turns, round by round, so the machine's
/// drift (other work on it) falls on all of them alike.
const ROUNDS: usize = 5;

/// One phase: loads of each subject's measured thread, and turns on threads with two turns
/// of history, in [`ROUNDS`] alternating rounds.
async fn phase(s: &Sizes, quick: bool, subjects: &[&Subject]) -> Vec<Samples> {
    let loads = if quick { (20, 300, 5) } else { (100, 3000, 20) };
    let mut threads = Vec::with_capacity(subjects.len());
    for x in subjects {
        threads.push(x.turn_threads().await);
    }
    let mut out: Vec<Samples> = subjects.iter().map(|_| Samples::default()).collect();
    for round in 0..ROUNDS {
        for (k, x) in subjects.iter().enumerate() {
            let load = measure(
                loads.0 / ROUNDS,
                loads.1 / ROUNDS,
                Duration::from_secs(loads.2) / ROUNDS as u32,
                |_| x.load(&x.thread),
            )
            .await;
            let turn = measure(
                s.pg.0 / ROUNDS,
                s.pg.1 / ROUNDS,
                Duration::from_secs(s.pg.2) / ROUNDS as u32,
                |i| {
                    let t = &threads[k][(round + i) % TURN_THREADS];
                    run_turn(&x.g, t, i)
                },
            )
            .await;
            out[k].load.extend(load);
            out[k].turn.extend(turn);
        }
    }
    out
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    crate::pct(&v, 0.5)
}

/// One backend: `subject` measured fresh, grown, measured again, with `control` (fresh)
/// measured after it.
async fn backend(
    r: &mut Report,
    s: &Sizes,
    quick: bool,
    (key, name): (&str, &str),
    subject: Subject,
    control: Subject,
) -> anyhow::Result<Value> {
    let target = std::env::var("BENCH_J_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 200_000 } else { 10_000_000 });
    println!("  {name}: fresh");
    // Writes other work left in the page cache reach the disk now: a commit's fsync waits
    // for them on a journaled file system (20 ms turns instead of 2.5 ms were seen).
    let _ = std::process::Command::new("sync").status();
    let before = phase(s, quick, &[&subject, &control]).await;
    let fresh_rows = subject.db.rows().await?;
    println!("  {name}: growing to {target} checkpoint rows");
    let t0 = Instant::now();
    let copies = subject.db.grow(&subject.thread, target).await?;
    let growth_s = t0.elapsed().as_secs_f64();
    let rows = subject.db.rows().await?;
    let bytes = subject.db.bytes().await?;
    println!(
        "  {name}: {} checkpoint rows, {} pending writes, {:.0} MB, grown in {growth_s:.1} s",
        rows.0,
        rows.1,
        bytes as f64 / 1e6
    );
    // The growth's writes reach the disk before the measuring starts, not during it.
    let _ = std::process::Command::new("sync").status();
    let after = phase(s, quick, &[&subject, &control]).await;
    // Loads of other threads, spread over the copies (pages the measured thread's loads
    // did not warm).
    let spread = measure(
        10,
        if quick { 300 } else { 3000 },
        Duration::from_secs(10),
        |i| {
            let n = (i as i64)
                .wrapping_mul(2_654_435_761)
                .rem_euclid(copies.max(1))
                + 1;
            let t = copy_id(n);
            let subject = &subject;
            async move { subject.load(&t).await }
        },
    )
    .await;
    let [fresh, control_before] =
        <[Samples; 2]>::try_from(before).map_err(|_| anyhow::anyhow!("two subjects measured"))?;
    let [grown, control_after] =
        <[Samples; 2]>::try_from(after).map_err(|_| anyhow::anyhow!("two subjects measured"))?;
    let (load_fresh, turn_fresh) = (fresh.load, fresh.turn);
    let (load_grown, turn_grown) = (grown.load, grown.turn);
    let (load_control, turn_control) = (control_after.load, control_after.turn);
    let size = json!({"checkpoint_rows": rows.0, "pending_write_rows": rows.1, "bytes": bytes,
        "growth_s": growth_s, "copies": copies, "rows_per_copy": (rows.0 - fresh_rows.0) / copies.max(1),
        "fresh_checkpoint_rows": fresh_rows.0});
    let ratios = json!({
        "load_grown_over_fresh": median(&load_grown) / median(&load_fresh),
        "turn_grown_over_fresh": median(&turn_grown) / median(&turn_fresh),
        "load_grown_over_control": median(&load_grown) / median(&load_control),
        "turn_grown_over_control": median(&turn_grown) / median(&turn_control),
        "control_load_after_over_before": median(&load_control) / median(&control_before.load),
        "control_turn_after_over_before": median(&turn_control) / median(&control_before.turn),
    });
    println!("  {name}: {ratios}");
    let k = |what: &str| format!("j_{key}_{what}");
    let latest = format!("{name}, checkpoint load (latest, {TEMPLATE_TURNS}-turn thread)");
    let turn = format!("{name}, turn on a thread with history");
    r.fig(
        &k("load_fresh"),
        &format!("{latest}, fresh db"),
        load_fresh,
        "us",
        json!({}),
    );
    r.fig(
        &k("load_grown"),
        &format!("{latest}, {} rows", rows.0),
        load_grown,
        "us",
        size.clone(),
    );
    r.fig(
        &k("load_grown_spread"),
        &format!("{name}, load of copied threads across the grown db"),
        spread,
        "us",
        json!({}),
    );
    r.fig(
        &k("load_control"),
        &format!("{latest}, second fresh db, beside the grown one"),
        load_control,
        "us",
        json!({}),
    );
    r.fig(
        &k("turn_fresh"),
        &format!("{turn}, fresh db"),
        turn_fresh,
        "us",
        json!({}),
    );
    r.fig(
        &k("turn_grown"),
        &format!("{turn}, {} rows", rows.0),
        turn_grown,
        "us",
        size.clone(),
    );
    r.fig(
        &k("turn_control"),
        &format!("{turn}, second fresh db, beside the grown one"),
        turn_control,
        "us",
        json!({}),
    );
    for what in ["load", "turn"] {
        r.fig(
            &k(&format!("{what}_ratio")),
            &format!("{name}, {what} p50 grown / fresh (target <= 1.2)"),
            vec![ratios[format!("{what}_grown_over_fresh")]
                .as_f64()
                .unwrap_or(f64::NAN)],
            "x",
            json!({"over_control": ratios[format!("{what}_grown_over_control")]}),
        );
    }
    Ok(json!({"size": size, "ratios": ratios}))
}

/// Postgres: two schemas of their own (fresh whatever sections ran before, dropped with
/// their rows).
async fn on_postgres(r: &mut Report, s: &Sizes, quick: bool) -> anyhow::Result<Value> {
    let (schema, control_schema) = (PgSchema::create().await, PgSchema::create().await);
    let (mut subjects, mut pools) = (Vec::new(), Vec::new());
    for sc in [&schema, &control_schema] {
        let pool = sc.pool(2).await;
        let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
        subjects.push(Subject::new(Db::Pg(pool.clone()), cp).await);
        pools.push(pool);
    }
    let control = subjects.pop().expect("two subjects");
    let subject = subjects.pop().expect("two subjects");
    let out = backend(r, s, quick, ("pg", "Postgres"), subject, control).await;
    for p in pools {
        p.close().await;
    }
    drop((schema, control_schema));
    out
}

/// SQLite: two temporary files, removed afterwards.
async fn on_sqlite(r: &mut Report, s: &Sizes, quick: bool) -> anyhow::Result<Value> {
    let paths = [temp_db_path(), temp_db_path()];
    let (mut subjects, mut pools) = (Vec::new(), Vec::new());
    for p in &paths {
        let cp = SqliteCheckpointer::open(p).await?;
        let pool = cp.pool().clone();
        subjects.push(Subject::new(Db::Sqlite(pool.clone()), Arc::new(cp)).await);
        pools.push(pool);
    }
    let control = subjects.pop().expect("two subjects");
    let subject = subjects.pop().expect("two subjects");
    let out = backend(r, s, quick, ("sqlite", "SQLite"), subject, control).await;
    for p in pools {
        p.close().await;
    }
    for p in &paths {
        remove_sqlite_files(p);
    }
    out
}

/// Both backends, or those `BENCH_J_BACKENDS` names (`pg`, `sqlite`, comma separated).
pub(crate) async fn sec_j(r: &mut Report, s: &Sizes, quick: bool) -> anyhow::Result<()> {
    let only = std::env::var("BENCH_J_BACKENDS").unwrap_or_else(|_| "pg,sqlite".into());
    let want = |b: &str| only.split(',').any(|x| x.trim() == b);
    let mut out = serde_json::Map::new();
    if want("pg") {
        out.insert("postgres".into(), on_postgres(r, s, quick).await?);
    }
    if want("sqlite") {
        out.insert("sqlite".into(), on_sqlite(r, s, quick).await?);
    }
    r.extra.insert("size_flatness".into(), Value::Object(out));
    Ok(())
}
