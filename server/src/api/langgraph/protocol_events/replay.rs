//! Which ended run a protocol event stream opened without `since` replays.
//!
//! The rule: the thread's latest ended run, when a protocol command started it and either
//! no stream without `since` has carried it yet (for [`FRESH_MS`] after its start: the JS
//! SDK and the Python SDK with a server-made thread open theirs right after `run.start`,
//! when a short run may be over) or a stream that carried it is still connected (the JS
//! SDK re-opens its stream, new before old, each time it subscribes, and expects the run's
//! history from the start again). A run whose carriers have all gone is not replayed: the
//! thread's next client connection is about to start a run of its own.

use std::collections::HashMap;
use std::sync::Mutex;

/// How long a run a command started waits for its first stream.
pub(super) const FRESH_MS: i64 = 30_000;

/// What is known of one run a protocol command started.
#[derive(Debug)]
struct Started {
    /// When the command started it (ms since the epoch).
    at: i64,
    /// Whether a stream without `since` has carried it.
    carried: bool,
    /// The streams carrying it that are still connected.
    carriers: usize,
}

impl Started {
    /// Whether a stream opened at `now` replays it: carried by a connected stream, or never
    /// carried and started within the window.
    fn replayable(&self, now: i64) -> bool {
        self.carriers > 0 || (!self.carried && self.at >= now - FRESH_MS)
    }
}

/// The runs protocol commands started that a stream may still replay.
#[derive(Debug, Default)]
pub(super) struct Registry {
    runs: HashMap<String, Started>,
}

impl Registry {
    /// Notes a run a command started now; forgets runs no stream will replay any more.
    pub(super) fn started(&mut self, run_id: &str, now: i64) {
        self.runs.retain(|_, s| s.replayable(now));
        self.runs.insert(
            run_id.to_string(),
            Started {
                at: now,
                carried: false,
                carriers: 0,
            },
        );
    }

    /// Whether a stream opened now without `since` replays this ended run.
    pub(super) fn replays(&self, run_id: &str, now: i64) -> bool {
        self.runs.get(run_id).is_some_and(|s| s.replayable(now))
    }

    /// A stream without `since` carries the run; true when the run is one we track.
    fn carry(&mut self, run_id: &str) -> bool {
        self.runs.get_mut(run_id).is_some_and(|s| {
            s.carried = true;
            s.carriers += 1;
            true
        })
    }

    /// A stream that carried the run is gone.
    fn release(&mut self, run_id: &str) {
        if let Some(s) = self.runs.get_mut(run_id) {
            s.carriers = s.carriers.saturating_sub(1);
            if s.carriers == 0 {
                self.runs.remove(run_id);
            }
        }
    }
}

/// A connected stream's hold on a run it carries; dropping it releases the run.
#[derive(Debug)]
pub(super) struct Carrier<'a> {
    registry: &'a Mutex<Registry>,
    run_id: Option<String>,
}

impl<'a> Carrier<'a> {
    /// Marks a stream as carrying `run_id` (a no-op for runs no command started).
    pub(super) fn new(registry: &'a Mutex<Registry>, run_id: &str) -> Self {
        let tracked = registry.lock().is_ok_and(|mut r| r.carry(run_id));
        Self {
            registry,
            run_id: tracked.then(|| run_id.to_string()),
        }
    }

    /// The run held (none for a run no command started).
    pub(super) fn run(&self) -> Option<&str> {
        self.run_id.as_deref()
    }
}

impl Drop for Carrier<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.run_id {
            if let Ok(mut r) = self.registry.lock() {
                r.release(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_run_is_replayed_to_its_first_stream_within_the_window() {
        let mut r = Registry::default();
        r.started("a", 1_000);
        assert!(r.replays("a", 1_000 + FRESH_MS));
        assert!(!r.replays("a", 1_001 + FRESH_MS));
        assert!(!r.replays("other", 1_000));
    }

    #[test]
    fn a_run_is_replayed_while_a_stream_that_carried_it_is_connected() {
        let reg = Mutex::new(Registry::default());
        reg.lock().unwrap().started("a", 0);
        let first = Carrier::new(&reg, "a");
        // Long after the window, a second stream opened beside the first replays it.
        assert!(reg.lock().unwrap().replays("a", 10 * FRESH_MS));
        let second = Carrier::new(&reg, "a");
        drop(first);
        assert!(reg.lock().unwrap().replays("a", 10 * FRESH_MS));
        drop(second);
        // Every carrier has gone: the thread's next client connection does not replay it, even at once.
        assert!(!reg.lock().unwrap().replays("a", 1));
        assert!(reg.lock().unwrap().runs.is_empty());
    }

    #[test]
    fn a_stream_that_moves_on_lets_go_of_the_run_before() {
        let reg = Mutex::new(Registry::default());
        reg.lock().unwrap().started("a", 0);
        let mut held = Carrier::new(&reg, "a");
        assert_eq!(held.run(), Some("a"));
        reg.lock().unwrap().started("b", 1);
        held = Carrier::new(&reg, "b");
        assert_eq!(held.run(), Some("b"));
        assert!(!reg.lock().unwrap().replays("a", 10 * FRESH_MS));
        assert!(reg.lock().unwrap().replays("b", 10 * FRESH_MS));
    }

    #[test]
    fn runs_no_command_started_are_not_tracked() {
        let reg = Mutex::new(Registry::default());
        let c = Carrier::new(&reg, "rest-run");
        assert!(c.run_id.is_none());
        assert!(!reg.lock().unwrap().replays("rest-run", 0));
    }

    #[test]
    fn runs_past_their_window_and_never_carried_are_forgotten() {
        let mut r = Registry::default();
        r.started("old", 0);
        r.started("new", FRESH_MS + 1);
        assert!(!r.runs.contains_key("old"));
        assert!(r.replays("new", FRESH_MS + 1));
    }
}
