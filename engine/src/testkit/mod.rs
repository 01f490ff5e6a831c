//! What tests of palgraph and of its backends share (feature `testkit`): fresh backends on a
//! temporary SQLite file or Postgres schema ([`backends`]), the test state and its graphs
//! ([`fixtures`]), and checkpointers that count, pace or wrap another ([`counting`],
//! [`paced`], [`wrapper`]). The conformance suites that hold every checkpointer and store
//! to one contract are the `palgraph-conformance` crate.

pub mod backends;
pub mod counting;
pub mod fixtures;
pub mod paced;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod unscoped;
pub mod wrapper;
