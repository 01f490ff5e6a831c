//! Threads' time to live, as the store keeps it (the sweep that applies it is
//! `api::langgraph::thread_ttl`; its SQL is `sql::ttl`).

/// What the sweep does with a thread whose time to live has run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlStrategy {
    /// Delete the thread with its runs, events, checkpoints and crons.
    Delete,
    /// Keep the thread and its latest checkpoint; delete the checkpoints before it.
    KeepLatest,
}

/// A thread's time to live: it expires `ttl_ms` after its last change (its creation, a
/// run's start or end, a metadata or state change), never while a run is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTtl {
    /// What happens when it runs out.
    pub strategy: TtlStrategy,
    /// Milliseconds after the thread's last change.
    pub ttl_ms: i64,
}

stored_as_text!(TtlStrategy {
    Delete => "delete",
    KeepLatest => "keep_latest",
});
