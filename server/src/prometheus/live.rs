//! Gauges read from the database at scrape time, so every replica reports the same truth:
//! the runs pending or running by graph and status, the queue's depth and the age of its
//! oldest run.
//!
//! One grouped query over the active runs: Postgres answers it from the partial index
//! `runs_active_idx` (runs pending or running), SQLite from `runs_status_idx`; finished
//! runs, however many, are not read. One reading serves every scrape of the next
//! [`LIVE_TTL`] ([`LiveCache`]): several scrapers (two Prometheus servers, a dashboard)
//! cost one query a second, and scrapes arriving together wait for the same query.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::database::Database;
use crate::store::now_ms;

/// How long one reading of the active runs serves scrapes.
pub const LIVE_TTL: Duration = Duration::from_secs(1);

/// One reading of the active runs, and when it was made.
type Reading = (Instant, Arc<[LiveRuns]>);

/// The last reading of the active runs, shared by the scrapes of one server.
#[derive(Clone, Debug, Default)]
pub struct LiveCache(Arc<tokio::sync::Mutex<Option<Reading>>>);

impl LiveCache {
    /// The active runs as read less than [`LIVE_TTL`] ago, or read now (a failed read is
    /// not kept: the next scrape tries again).
    ///
    /// # Errors
    /// The database's.
    pub async fn rows(&self, database: &Database) -> Result<Arc<[LiveRuns]>, sqlx::Error> {
        // Held across the read: concurrent scrapes wait for it rather than query too.
        let mut last = self.0.lock().await;
        if let Some((at, rows)) = &*last {
            if at.elapsed() < LIVE_TTL {
                return Ok(rows.clone());
            }
        }
        let rows: Arc<[LiveRuns]> = live_runs(database).await?.into();
        *last = Some((Instant::now(), rows.clone()));
        Ok(rows)
    }
}

/// The query: active runs grouped by graph and status, with the oldest's creation time.
pub const LIVE_RUNS: &str =
    "SELECT graph_id, status, COUNT(*) AS runs, MIN(created_at_ms) AS oldest_ms
     FROM runs WHERE status IN ('pending', 'running')
     GROUP BY graph_id, status";

/// One group of active runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRuns {
    /// The graph.
    pub graph_id: String,
    /// `pending` or `running`.
    pub status: String,
    /// How many.
    pub runs: i64,
    /// When the oldest was created (ms since the epoch).
    pub oldest_ms: i64,
}

/// Reads the active runs.
///
/// # Errors
/// The database's.
pub async fn live_runs(database: &Database) -> Result<Vec<LiveRuns>, sqlx::Error> {
    type Group = (String, String, i64, i64);
    let rows: Vec<Group> = match database {
        Database::Sqlite(pool) => sqlx::query_as(LIVE_RUNS).fetch_all(pool).await?,
        Database::Postgres(pool) => sqlx::query_as(LIVE_RUNS).fetch_all(pool).await?,
    };
    Ok(rows
        .into_iter()
        .map(|(graph_id, status, runs, oldest_ms)| LiveRuns {
            graph_id,
            status,
            runs,
            oldest_ms,
        })
        .collect())
}

/// Appends the live gauges to `out` (read through `cache`): a line per graph served (and any other graph the
/// database holds runs of) and status, zero included; `palgraph_database_up 0` and no run
/// gauges when the database could not be read.
pub async fn render(cache: &LiveCache, database: &Database, graphs: &[String], out: &mut String) {
    let rows = match cache.rows(database).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "metrics: could not read the active runs");
            gauge_head(
                out,
                "palgraph_database_up",
                "1 when the scrape's database read succeeded",
            );
            out.push_str("palgraph_database_up 0\n");
            return;
        }
    };
    render_rows(&rows, graphs, now_ms(), out);
}

/// The gauges of `rows` at `now_ms`.
pub fn render_rows(rows: &[LiveRuns], graphs: &[String], now_ms: i64, out: &mut String) {
    let mut counts: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for g in graphs {
        for status in ["pending", "running"] {
            counts.insert((g.as_str(), status), 0);
        }
    }
    let (mut depth, mut oldest) = (0i64, None::<i64>);
    for r in rows {
        *counts.entry((&r.graph_id, &r.status)).or_default() += r.runs;
        if r.status == "pending" {
            depth += r.runs;
            oldest = Some(oldest.map_or(r.oldest_ms, |o: i64| o.min(r.oldest_ms)));
        }
    }
    gauge_head(
        out,
        "palgraph_runs",
        "Runs pending or running in the database, by graph and status (the same on every replica)",
    );
    for ((graph, status), n) in &counts {
        let _ = writeln!(
            out,
            "palgraph_runs{{graph=\"{}\",status=\"{}\"}} {n}",
            escape(graph),
            escape(status)
        );
    }
    gauge_head(
        out,
        "palgraph_run_queue_depth",
        "Runs waiting for a worker (pending), from the database",
    );
    let _ = writeln!(out, "palgraph_run_queue_depth {depth}");
    gauge_head(
        out,
        "palgraph_run_queue_oldest_age_seconds",
        "Age of the oldest pending run in seconds (0 when none waits)",
    );
    let age = oldest.map_or(0.0, |o| (now_ms - o).max(0) as f64 / 1000.0);
    let _ = writeln!(out, "palgraph_run_queue_oldest_age_seconds {age}");
    gauge_head(
        out,
        "palgraph_database_up",
        "1 when the scrape's database read succeeded",
    );
    out.push_str("palgraph_database_up 1\n");
}

fn gauge_head(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
}

/// A label value as the exposition format writes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(graph: &str, status: &str, runs: i64, oldest_ms: i64) -> LiveRuns {
        LiveRuns {
            graph_id: graph.into(),
            status: status.into(),
            runs,
            oldest_ms,
        }
    }

    #[test]
    fn every_served_graph_has_a_line_and_the_queue_is_the_pending_runs() {
        let mut out = String::new();
        let rows = [
            row("chat", "pending", 3, 10_000),
            row("chat", "running", 2, 1_000),
            row("gone\"graph", "pending", 1, 4_000),
        ];
        render_rows(&rows, &["chat".into(), "idle".into()], 12_500, &mut out);
        for line in [
            "palgraph_runs{graph=\"chat\",status=\"pending\"} 3",
            "palgraph_runs{graph=\"chat\",status=\"running\"} 2",
            "palgraph_runs{graph=\"idle\",status=\"pending\"} 0",
            "palgraph_runs{graph=\"idle\",status=\"running\"} 0",
            "palgraph_runs{graph=\"gone\\\"graph\",status=\"pending\"} 1",
            "palgraph_run_queue_depth 4",
            "palgraph_run_queue_oldest_age_seconds 8.5",
            "palgraph_database_up 1",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
        assert_eq!(out.matches("# TYPE palgraph_runs gauge").count(), 1);
    }

    #[test]
    fn an_empty_queue_is_zero_deep_and_zero_old() {
        let mut out = String::new();
        render_rows(&[row("chat", "running", 1, 0)], &[], 5_000, &mut out);
        assert!(out.contains("palgraph_run_queue_depth 0\n"));
        assert!(out.contains("palgraph_run_queue_oldest_age_seconds 0\n"));
    }
}
