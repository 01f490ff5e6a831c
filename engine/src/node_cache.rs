//! Node caching: a node built with a [`CachePolicy`] stores its result under a key made from
//! its input, and a later task of that node with the same key takes the stored result
//! instead of running (LangGraph's `cache_policy`).
//!
//! The key is, by default, a digest of the node's input: the state's JSON and, for a task a
//! [`Send`](crate::send::Send) started, its own input; [`CachePolicy::key`] replaces it. The
//! namespace is the node's name. Entries live in the graph's checkpointer (memory, SQLite or
//! Postgres), so they survive a restart and are shared by every replica; a TTL ends them. A
//! hit is reported in the node's [`Event::NodeFinished`](crate::Event::NodeFinished) as
//! `cached: true`. The cache is best effort: when storage fails to read or write an entry,
//! the node runs as if it had none.
//!
//! ```
//! # use std::sync::Arc;
//! # use std::time::Duration;
//! # use palgraph::*;
//! # #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, State)]
//! # struct S { question: String, answer: String }
//! async fn expensive(s: Arc<S>, _ctx: NodeContext) -> Result<SUpdate, NodeError> {
//!     Ok(SUpdate::default().answer(format!("answer to {}", s.question)))
//! }
//! let mut g = StateGraph::<S>::new();
//! g.add_node("expensive", expensive)
//!     .cache(CachePolicy::new().ttl(Duration::from_secs(120)).key(|s: &S, _| s.question.clone()));
//! # g.add_edge(START, "expensive");
//! # g.add_edge("expensive", END);
//! # g.compile().unwrap();
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::state::State;

type KeyFn<S> = Arc<dyn Fn(&S, Option<&Value>) -> String + Send + Sync>;

/// How a node's results are cached: for how long, under which key.
pub struct CachePolicy<S: State> {
    ttl: Option<Duration>,
    key: Option<KeyFn<S>>,
}

impl<S: State> Clone for CachePolicy<S> {
    fn clone(&self) -> Self {
        CachePolicy {
            ttl: self.ttl,
            key: self.key.clone(),
        }
    }
}

impl<S: State> fmt::Debug for CachePolicy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .field("custom_key", &self.key.is_some())
            .finish()
    }
}

impl<S: State> Default for CachePolicy<S> {
    fn default() -> Self {
        CachePolicy {
            ttl: None,
            key: None,
        }
    }
}

impl<S: State> CachePolicy<S> {
    /// Entries that never expire, keyed by the node's whole input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries expire `ttl` after they were written.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Keys entries by `key(state, send_input)` instead of the whole input.
    #[must_use]
    pub fn key(
        mut self,
        key: impl Fn(&S, Option<&Value>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.key = Some(Arc::new(key));
        self
    }

    /// When an entry written at `now_ms` expires.
    pub(crate) fn expires_at(&self, now_ms: i64) -> Option<i64> {
        self.ttl
            .map(|t| now_ms.saturating_add(i64::try_from(t.as_millis()).unwrap_or(i64::MAX)))
    }

    /// The key of a task's input (`None`: the input does not serialize; no caching).
    pub(crate) fn key_of(&self, state: &S, arg: Option<&Value>) -> Option<String> {
        if let Some(k) = &self.key {
            return Some(k(state, arg));
        }
        #[derive(Serialize)]
        struct Input<'a, S> {
            state: &'a S,
            arg: Option<&'a Value>,
        }
        match serde_json::to_vec(&Input { state, arg }) {
            Ok(bytes) => Some(
                uuid::Uuid::new_v5(&KEY_NAMESPACE, &bytes)
                    .simple()
                    .to_string(),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "node input does not serialize; not cached");
                None
            }
        }
    }
}

/// The UUIDv5 namespace of default cache keys.
const KEY_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6a1c_52f4_3c0e_4f0b_9d65_0c1e_7a44_b2d1);
