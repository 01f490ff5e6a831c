//! Cooperative cancellation of a run.
//!
//! A [`Cancellation`] is shared by whoever may cancel a run (a server's cancel endpoint, a
//! superseding message, a disconnect) and the run itself. The engine checks it between steps;
//! nodes see it through their context (`ctx.is_cancelled()`, `ctx.cancelled().await`) and may
//! return early (a streaming action keeps its partial text, marked interrupted). Tasks that
//! have not returned within the run's grace period are dropped. A cancelled run ends with
//! [`Event::Cancelled`](crate::Event::Cancelled), not as a failure.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// Why a run was cancelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CancelReason {
    /// The user pressed stop (or called a cancel endpoint).
    UserCancelled,
    /// A newer message on the same thread replaced this run.
    Superseded,
    /// The client disconnected and asked for cancel-on-disconnect.
    Disconnect,
    /// The process is shutting down.
    Shutdown,
}

impl CancelReason {
    /// The reason's wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            CancelReason::UserCancelled => "user_cancelled",
            CancelReason::Superseded => "superseded",
            CancelReason::Disconnect => "disconnect",
            CancelReason::Shutdown => "shutdown",
        }
    }
}

/// A cancellation handle: clone it to share it.
#[derive(Clone, Debug, Default)]
pub struct Cancellation {
    token: CancellationToken,
    reason: Arc<Mutex<Option<CancelReason>>>,
}

impl Cancellation {
    /// A handle that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels (the first reason given wins).
    pub fn cancel(&self, reason: CancelReason) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.token.cancel();
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Why it was cancelled.
    pub fn reason(&self) -> Option<CancelReason> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    /// Resolves when cancelled.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }
}
