//! One turn of a 5-node linear graph of no-op nodes on the in-memory checkpointer:
//! median time per turn and per node. Run with `cargo bench -p palgraph --bench turn`.

use std::sync::Arc;
use std::time::Instant;

use palgraph::testkit::fixtures::{say, TestState};
use palgraph::{MemoryCheckpointer, NodeContext, NodeError, RunConfig, StateGraph, END, START};

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = StateGraph::<TestState>::new();
    let names = ["n1", "n2", "n3", "n4", "n5"];
    for n in names {
        g.add_node(n, |_s: Arc<TestState>, _c: NodeContext| async {
            Ok::<_, NodeError>(palgraph::testkit::fixtures::Upd::default())
        });
    }
    g.add_edge(START, "n1");
    g.add_sequence(names);
    g.add_edge("n5", END);
    let graph = g
        .compile()
        .expect("valid graph")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));

    let turns = 20_000;
    let mut samples = Vec::with_capacity(turns);
    rt.block_on(async {
        for i in 0..turns + 2_000 {
            let cfg = RunConfig::new(format!("bench-{i}"));
            let t0 = Instant::now();
            graph.invoke(cfg, say("hello")).await.expect("turn");
            if i >= 2_000 {
                samples.push(t0.elapsed().as_nanos() as f64 / 1000.0);
            }
        }
    });
    samples.sort_by(|a, b| a.total_cmp(b));
    let pct = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "5-node linear no-op turn, in-memory checkpointer, fresh thread per turn ({} turns)",
        samples.len()
    );
    println!(
        "  median per turn: {:8.2} us   p10 {:.2}  p90 {:.2}",
        pct(0.5),
        pct(0.1),
        pct(0.9)
    );
    let rss_kb = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4)
        .unwrap_or(0);
    println!(
        "  resident memory after {} turns: {} MB",
        turns + 2_000,
        rss_kb / 1024
    );
    println!(
        "  median per node: {:8.2} us   (turn / 5, includes 6 checkpoints)",
        pct(0.5) / 5.0
    );
}
