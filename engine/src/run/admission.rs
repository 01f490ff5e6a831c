//! The rules that refuse an input before it changes anything: a resume must answer pending
//! interrupts of the thread's latest checkpoint, unambiguously; a `goto` must name nodes of
//! the graph. The executor applies them as it takes an input.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::graph::{GraphInner, Target};
use crate::interrupt::{InterruptInfo, Resume};
use crate::state::State;

use super::RunError;

/// A resume answers the thread's latest checkpoint: refused when it names another one.
pub(super) fn at_head(
    thread_id: &str,
    checkpoint_id: Option<&str>,
    head: Option<&str>,
) -> Result<(), RunError> {
    match checkpoint_id {
        Some(id) if head != Some(id) => Err(RunError::ResumeNotAtHead {
            thread_id: thread_id.to_string(),
            checkpoint_id: id.to_string(),
        }),
        _ => Ok(()),
    }
}

/// What `resume` answers: for each answered interrupt, its position in `pending` and the
/// value. Refused when nothing is pending, when a single value meets several pending
/// interrupts, or when an id is not pending.
pub(super) fn answers(
    thread_id: &str,
    pending: &[InterruptInfo],
    resume: Resume,
) -> Result<Vec<(usize, Value)>, RunError> {
    if pending.is_empty() {
        return Err(RunError::NothingToResume {
            thread_id: thread_id.to_string(),
        });
    }
    match resume {
        Resume::Value(v) => {
            if pending.len() > 1 {
                return Err(RunError::AmbiguousResume {
                    pending: pending.iter().map(|p| p.id.clone()).collect(),
                });
            }
            Ok(vec![(0, v)])
        }
        Resume::ById(map) => map
            .into_iter()
            .map(|(id, v)| {
                pending
                    .iter()
                    .position(|p| p.id == id)
                    .map(|pos| (pos, v))
                    .ok_or(RunError::UnknownInterrupt { id })
            })
            .collect(),
    }
}

/// The targets of a command's `goto` (END included); refused when one is not a node.
pub(super) fn goto_targets<S: State>(
    graph: &GraphInner<S>,
    goto: &[String],
) -> Result<BTreeSet<Target>, RunError> {
    goto.iter()
        .map(|name| {
            graph
                .target(name)
                .ok_or_else(|| RunError::UnknownNode(name.clone()))
        })
        .collect()
}
