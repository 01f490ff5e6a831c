//! Section `g`: the floor a Postgres turn is measured against: as many bare single-row
//! `INSERT` + `COMMIT` round trips (sqlx) as a turn commits, alone and in alternating pairs
//! with a turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use palgraph::checkpoint::PostgresCheckpointer;
use palgraph::testkit::backends::PgSchema;
use serde_json::json;

use crate::shape::{graph, Variant};
use crate::{cpu_us, measure, run_turn, tid, uuid_like, Report, Sizes};

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
    // Paired: a Postgres turn, then the floor's inserts, alternately, so both see the same
    // moment of a noisy machine; the ratio of each pair.
    let g = graph(
        Arc::new(PostgresCheckpointer::new(pool.clone())),
        Variant::Plain,
    );
    let mut ratios = Vec::new();
    for i in 0..s.pg.1 {
        let t0 = Instant::now();
        run_turn(&g, &tid("pair"), i).await;
        let turn = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let mut conn = conn.lock().await;
        for _ in 0..commits {
            sqlx::query("INSERT INTO bench_floor (id, data) VALUES ($1, $2::jsonb)")
                .bind(uuid_like())
                .bind(data.as_str())
                .execute(&mut **conn)
                .await?;
        }
        ratios.push(turn / t0.elapsed().as_secs_f64());
    }
    r.fig(
        "g_turn_over_floor_paired",
        "Postgres turn / floor, measured in alternating pairs (ratio)",
        ratios,
        "x",
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
