//! The Rust examples of the book (`docs/src`), compiled and run as doc tests:
//! `cargo test -p palgraph-book --doc`. Each chapter with Rust code is included here;
//! a block that must not run is `rust,no_run` (compiled only) and says why.

/// `docs/src/concepts/state.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/state.md")]
pub struct State;

/// `docs/src/concepts/lifetimes.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/lifetimes.md")]
pub struct Lifetimes;

/// `docs/src/concepts/steps.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/steps.md")]
pub struct Steps;

/// `docs/src/concepts/interrupts.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/interrupts.md")]
pub struct Interrupts;

/// `docs/src/concepts/durable-steps.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/durable-steps.md")]
pub struct DurableSteps;

/// `docs/src/concepts/subgraphs.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/subgraphs.md")]
pub struct Subgraphs;

/// `docs/src/concepts/send.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/send.md")]
pub struct SendChapter;

/// `docs/src/concepts/store.md`.
#[cfg(doctest)]
#[doc = include_str!("src/concepts/store.md")]
pub struct StoreChapter;

/// `docs/src/guides/own-graph.md`.
#[cfg(doctest)]
#[doc = include_str!("src/guides/own-graph.md")]
pub struct OwnGraph;

/// `docs/src/guides/serving.md`.
#[cfg(doctest)]
#[doc = include_str!("src/guides/serving.md")]
pub struct Serving;

/// `docs/src/guides/observability.md`.
#[cfg(doctest)]
#[doc = include_str!("src/guides/observability.md")]
pub struct Observability;

/// `docs/src/guides/upgrading.md`.
#[cfg(doctest)]
#[doc = include_str!("src/guides/upgrading.md")]
pub struct Upgrading;

/// `docs/src/guides/own-backend.md`.
#[cfg(doctest)]
#[doc = include_str!("src/guides/own-backend.md")]
pub struct OwnBackend;
