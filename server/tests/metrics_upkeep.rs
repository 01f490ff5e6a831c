//! A server nobody scrapes must not keep every histogram sample it records: the recorder's
//! upkeep thread folds them into their buckets. This test has a binary of its own, since it
//! counts the process's live heap bytes with a global allocator of its own.

use std::alloc::System;
use std::time::{Duration, Instant};

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes held now.
fn live() -> isize {
    let s = ALLOCATOR.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated
}

/// Samples recorded: about 16 bytes each while buffered (the value and its time), so 8 MB
/// if nothing folds them.
const SAMPLES: usize = 500_000;

#[test]
fn histogram_samples_recorded_without_a_scrape_do_not_stay_in_memory() {
    let _handle = palgraph_server::prometheus::install().expect("the recorder installs");
    // The series exists before the count starts: its key and buckets are not samples.
    let histogram = metrics::histogram!("palgraph_node_duration_seconds", "node" => "upkeep");
    histogram.record(0.001);
    std::thread::sleep(palgraph_server::prometheus::UPKEEP_EVERY * 2);
    let before = live();

    for i in 0..SAMPLES {
        histogram.record(i as f64 * 1e-6);
    }

    // Without the upkeep thread the buffer holds every sample until someone renders. With
    // it, the samples are folded within a second and their buffer is freed once the
    // collector's epoch has moved on, which later upkeeps do as a server goes on recording.
    let deadline = Instant::now() + palgraph_server::prometheus::UPKEEP_EVERY * 10;
    let mut held = live() - before;
    while held > 256 * 1024 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        histogram.record(0.001);
        held = live() - before;
    }
    assert!(
        held <= 256 * 1024,
        "{held} bytes still held {:?} after recording {SAMPLES} samples",
        palgraph_server::prometheus::UPKEEP_EVERY * 10
    );
}
