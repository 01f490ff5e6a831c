//! Section `i`: the composed shapes of [`crate::compose`] (a `Send` fan-out over 100 items,
//! a two-level subgraph turn), in memory and on Postgres: time per turn, and what a turn
//! writes (payload and WAL bytes, puts, pending writes).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use palgraph::checkpoint::{MemoryCheckpointer, PostgresCheckpointer};
use palgraph::testkit::backends::PgSchema;
use palgraph::testkit::counting::Counting;
use palgraph::RunConfig;
use serde_json::json;

use crate::{compose, cpu_us, measure, tid, wal_diff, wal_lsn, Report, Sizes};

/// Times turns of `turn(thread, i)` on fresh threads; with `counting`, first records what
/// 20 turns write (payload bytes, puts, pending writes, WAL on Postgres) into the notes.
async fn composed<F, Fut>(
    r: &mut Report,
    key: &str,
    label: &str,
    sizes: (usize, usize, u64),
    counting: Option<(&Counting, &sqlx::PgPool)>,
    turn: F,
) -> anyhow::Result<()>
where
    F: Fn(String, usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut notes = json!({});
    if let Some((c, pool)) = counting {
        let k = 20;
        let l0 = wal_lsn(pool).await?;
        let before = c.snapshot();
        for i in 0..k {
            turn(tid(&format!("{key}-count")), i).await;
        }
        let after = c.snapshot();
        let l1 = wal_lsn(pool).await?;
        let per = |a: u64, b: u64| (b - a) as f64 / k as f64;
        notes = json!({
            "puts_per_turn": per(before.0, after.0),
            "put_writes_per_turn": per(before.1, after.1),
            "payload_bytes_per_turn": per(before.3, after.3),
            "wal_bytes_per_turn": wal_diff(pool, &l0, &l1).await? as f64 / k as f64,
        });
        println!("  {key} characterization: {notes}");
    }
    let cpu0 = cpu_us();
    let samples = measure(sizes.0, sizes.1, Duration::from_secs(sizes.2), |i| {
        turn(tid(key), i)
    })
    .await;
    let cpu = (cpu_us() - cpu0) / (samples.len() + sizes.0) as f64;
    if let Some(o) = notes.as_object_mut() {
        o.insert("process_cpu_us_per_op".into(), json!(cpu));
    }
    r.fig(key, label, samples, "us", notes);
    Ok(())
}

pub(crate) async fn sec_i(r: &mut Report, s: &Sizes, schema: &PgSchema) -> anyhow::Result<()> {
    let mem = (s.mem.0 / 20 + 1, s.mem.1 / 20 + 1, s.mem.2);
    let pg = (s.pg.0 / 5 + 1, s.pg.1 / 5 + 1, s.pg.2);
    let g = compose::send_graph(Arc::new(MemoryCheckpointer::new()));
    composed(
        r,
        "i_send100_mem_turn",
        "Send fan-out over 100 items, in memory, per turn",
        mem,
        None,
        |t, _| {
            let g = &g;
            async move {
                let out = g.invoke(RunConfig::new(t), compose::send_input(100)).await;
                assert_eq!(out.map(|o| o.state.total).ok(), Some(9900));
            }
        },
    )
    .await?;
    let g = compose::sub_graph(Arc::new(MemoryCheckpointer::new()));
    composed(
        r,
        "i_sub2_mem_turn",
        "two-level subgraph turn, in memory, per turn",
        mem,
        None,
        |t, i| {
            let g = &g;
            async move {
                let out = g.invoke(RunConfig::new(t), compose::sub_input(i)).await;
                assert_eq!(
                    out.map(|o| o.state.trail.clone()).ok().as_deref(),
                    Some("spabf")
                );
            }
        },
    )
    .await?;
    let pool = schema.pool(2).await;
    let counting = Counting::new(Arc::new(PostgresCheckpointer::new(pool.clone())));
    let counting = Arc::new(counting);
    let g = compose::send_graph(counting.clone());
    let bare = compose::send_graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
    composed(
        r,
        "i_send100_pg_turn",
        "Send fan-out over 100 items, Postgres, per turn",
        pg,
        Some((&counting, &pool)),
        |t, i| {
            let (g, bare) = (&g, &bare);
            async move {
                // The first 20 turns are counted (the characterization), the rest timed bare.
                let g = if t.contains("-count") { g } else { bare };
                let out = g.invoke(RunConfig::new(t), compose::send_input(100)).await;
                assert_eq!(out.map(|o| o.state.total).ok(), Some(9900), "turn {i}");
            }
        },
    )
    .await?;
    let g = compose::sub_graph(counting.clone());
    let bare = compose::sub_graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
    composed(
        r,
        "i_sub2_pg_turn",
        "two-level subgraph turn, Postgres, per turn",
        pg,
        Some((&counting, &pool)),
        |t, i| {
            let (g, bare) = (&g, &bare);
            async move {
                let g = if t.contains("-count") { g } else { bare };
                let out = g.invoke(RunConfig::new(t), compose::sub_input(i)).await;
                assert_eq!(
                    out.map(|o| o.state.trail.clone()).ok().as_deref(),
                    Some("spabf")
                );
            }
        },
    )
    .await?;
    Ok(())
}
