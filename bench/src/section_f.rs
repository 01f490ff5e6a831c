//! Section `f`: growth over 1,000 turns on one thread: the time and the bytes of a turn at
//! each mark, on Postgres.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use palgraph::checkpoint::PostgresCheckpointer;
use palgraph::testkit::backends::PgSchema;
use palgraph::testkit::counting::Counting;
use serde_json::json;

use crate::shape::{graph, Variant};
use crate::{pct, run_turn, tid, wal_diff, wal_lsn, Report, Sizes};

pub(crate) async fn sec_f(r: &mut Report, s: &Sizes, schema: &PgSchema) -> anyhow::Result<()> {
    let pool = schema.pool(4).await;
    let counting = Arc::new(Counting::new(Arc::new(PostgresCheckpointer::new(
        pool.clone(),
    ))));
    let g = graph(counting.clone(), Variant::Plain);
    let marks: Vec<usize> = [1, 10, 50, 100, 200, 1000]
        .into_iter()
        .filter(|m| *m <= s.growth_turns)
        .collect();
    let mut times: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut bytes: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut wal: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for th in 0..s.growth_threads {
        let t = tid(&format!("growth{th}"));
        for turn in 1..=s.growth_turns {
            // Around each mark, measure the turn and its neighbours (+-2) for a stable median.
            let near = marks
                .iter()
                .find(|m| turn + 2 >= **m && turn <= **m + 2)
                .copied();
            if let Some(m) = near {
                let l0 = wal_lsn(&pool).await?;
                let b0 = counting.snapshot().3;
                let t0 = Instant::now();
                run_turn(&g, &t, turn).await;
                times
                    .entry(m)
                    .or_default()
                    .push(t0.elapsed().as_secs_f64() * 1e6);
                bytes
                    .entry(m)
                    .or_default()
                    .push((counting.snapshot().3 - b0) as f64);
                let l1 = wal_lsn(&pool).await?;
                wal.entry(m)
                    .or_default()
                    .push(wal_diff(&pool, &l0, &l1).await? as f64);
            } else {
                run_turn(&g, &t, turn).await;
            }
        }
    }
    let mut table = Vec::new();
    for m in &marks {
        let tm = times.remove(m).unwrap_or_default();
        let by = bytes.remove(m).unwrap_or_default();
        let wl = wal.remove(m).unwrap_or_default();
        let med = |v: &Vec<f64>| {
            let mut v = v.clone();
            v.sort_by(|a, b| a.total_cmp(b));
            pct(&v, 0.5)
        };
        table.push(json!({"turn": m, "median_us": med(&tm), "payload_bytes": med(&by), "wal_bytes": med(&wl)}));
        r.fig(
            &format!("f_growth_turn_{m}"),
            &format!(
                "Postgres growth: turn #{m} on one thread (turns {m}+-2, {} threads)",
                s.growth_threads
            ),
            tm,
            "us",
            json!({"payload_bytes_median": med(&by), "wal_bytes_median": med(&wl)}),
        );
    }
    let (blobs, rows): (i64, i64) = sqlx::query_as(
        "SELECT coalesce(sum(octet_length(vals::text)),0)::bigint, count(*)::bigint FROM checkpoints",
    )
    .fetch_one(&pool)
    .await?;
    r.extra.insert("growth".into(), json!({"turns": s.growth_turns, "threads": s.growth_threads, "per_mark": table, "blob_bytes_all_threads": blobs, "blob_rows_all_threads": rows}));
    Ok(())
}
