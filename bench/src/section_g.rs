//! Section `g`: the floor a Postgres turn is measured against: as many bare single-row
//! `INSERT` + `COMMIT` round trips (sqlx) as a turn commits, alone and in alternating rounds
//! with a turn (durability sync, the default, and async) and the turn's puts replayed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph::checkpoint::{Checkpointer, PostgresCheckpointer, PutCheckpoint};
use palgraph::testkit::backends::PgSchema;
use palgraph::testkit::counting::Counting;
use palgraph::{Durability, RunConfig};
use serde_json::json;

use crate::shape::{graph, Variant};
use crate::{cpu_us, measure, run_turn, run_turn_with, tid, uuid_like, Report, Sizes};

pub(crate) async fn sec_g(
    r: &mut Report,
    s: &Sizes,
    schema: &PgSchema,
    payload: f64,
    commits: usize,
) -> anyhow::Result<()> {
    let pool = schema.pool(2).await;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS bench_floor (id text PRIMARY KEY, data jsonb)")
        .execute(&pool)
        .await?;
    let pad = "x".repeat((payload as usize).saturating_sub(20));
    let data = json!({"v": 4, "pad": pad}).to_string();
    // One connection held throughout, as a client doing nothing but these inserts would
    // (sqlx pings a connection each time it returns to the pool).
    let conn = tokio::sync::Mutex::new(pool.acquire().await?);
    let cpu0 = cpu_us();
    let samples = measure(s.pg.0, s.pg.1, Duration::from_secs(s.pg.2), |_| {
        let (conn, data) = (&conn, &data);
        async move {
            let mut conn = conn.lock().await;
            for _ in 0..commits {
                sqlx::query("INSERT INTO bench_floor (id, data) VALUES ($1, $2::jsonb)")
                    .bind(uuid_like())
                    .bind(data.as_str())
                    .execute(&mut **conn)
                    .await
                    .expect("floor insert");
            }
        }
    })
    .await;
    let cpu = (cpu_us() - cpu0) / (samples.len() + s.pg.0) as f64;
    let per: Vec<f64> = samples.iter().map(|x| x / commits as f64).collect();
    // Paired: a Postgres turn, the same turn's puts alone, then the floor's inserts, in
    // turn, so all three see the same moment of a noisy machine; the ratios of each round.
    // The puts are a real turn's, kept as the engine made them and replayed on a new thread
    // straight into the checkpointer: what the checkpoint statements cost (the head guard,
    // both unique keys, four JSON columns, the checkpointer's own encoding) apart from what
    // the engine does around them (running the nodes, building each checkpoint).
    let cp = Arc::new(PostgresCheckpointer::new(pool.clone()));
    let g = graph(cp.clone(), Variant::Plain);
    let puts = kept_puts(cp.clone()).await?;
    let (mut ratios, mut put_ratios, mut engine) = (Vec::new(), Vec::new(), Vec::new());
    let (mut async_ratios, mut async_engine) = (Vec::new(), Vec::new());
    for i in 0..s.pg.1 {
        let t0 = Instant::now();
        run_turn(&g, &tid("pair"), i).await;
        let turn = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let cfg = RunConfig::new(tid("pair-async")).durability(Durability::Async);
        run_turn_with(&g, cfg, i).await;
        let turn_async = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let thread = tid("replay");
        for p in &puts {
            let mut p = p.clone();
            p.record.thread_id = thread.clone();
            cp.put(&p).await?;
        }
        let replay = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let mut conn = conn.lock().await;
        for _ in 0..commits {
            sqlx::query("INSERT INTO bench_floor (id, data) VALUES ($1, $2::jsonb)")
                .bind(uuid_like())
                .bind(data.as_str())
                .execute(&mut **conn)
                .await?;
        }
        let floor = t0.elapsed().as_secs_f64();
        ratios.push(turn / floor);
        async_ratios.push(turn_async / floor);
        put_ratios.push(replay / floor);
        engine.push((turn - replay) * 1e6);
        async_engine.push((turn_async - replay) * 1e6);
    }
    r.fig(
        "g_turn_over_floor_paired",
        "Postgres turn / floor, measured in alternating pairs (ratio; durability sync, the default)",
        ratios,
        "x",
        json!({}),
    );
    r.fig(
        "g_turn_async_over_floor_paired",
        "Postgres turn with durability async / floor, same rounds (ratio)",
        async_ratios,
        "x",
        json!({}),
    );
    r.fig(
        "g_turn_async_minus_puts_paired",
        "an async turn minus its puts alone: the engine's own time per async turn, same rounds",
        async_engine,
        "us",
        json!({}),
    );
    r.fig(
        "g_puts_over_floor_paired",
        "a turn's puts alone (replayed, no engine) / floor, in the same rounds (ratio)",
        put_ratios,
        "x",
        json!({"puts": puts.len()}),
    );
    r.fig(
        "g_turn_minus_puts_paired",
        "a turn minus its puts alone: the engine's own time per turn, same rounds",
        engine,
        "us",
        json!({}),
    );
    r.fig(
        "g_floor_turn_sc_on",
        &format!("floor: {commits} x autocommit INSERT jsonb (~{payload:.0} B), sqlx"),
        samples,
        "us",
        json!({"inserts_per_turn": commits, "process_cpu_us_per_op": cpu}),
    );
    r.fig(
        "g_floor_insert_sc_on",
        "floor: one autocommit INSERT (= above / inserts)",
        per,
        "us",
        json!({}),
    );
    let rtt = measure(100, 2000, Duration::from_secs(5), |_| {
        let conn = &conn;
        async move {
            let mut conn = conn.lock().await;
            let _: i32 = sqlx::query_scalar("SELECT 1")
                .fetch_one(&mut **conn)
                .await
                .expect("select 1");
        }
    })
    .await;
    r.fig(
        "g_select1_rtt",
        "reference: SELECT 1 round trip (TCP 127.0.0.1)",
        rtt,
        "us",
        json!({}),
    );
    Ok(())
}

/// The puts of one real turn, as the engine hands them to `cp` (in order; the first is the
/// input checkpoint, stored unflushed).
async fn kept_puts(cp: Arc<PostgresCheckpointer>) -> anyhow::Result<Vec<PutCheckpoint>> {
    let counting = Arc::new(Counting::new(cp));
    let g = graph(counting.clone(), Variant::Plain);
    counting.keep_puts();
    run_turn(&g, &tid("kept"), 0).await;
    let puts = counting.take_puts();
    anyhow::ensure!(!puts.is_empty(), "a turn made no puts");
    Ok(puts)
}
