//! The rules that refuse an input before it changes anything: a checkpoint named must
//! exist; a resume must answer pending interrupts of the thread's latest checkpoint,
//! unambiguously; a `goto` must name nodes of the graph. The executor applies them as it
//! takes an input, and [`CompiledGraph::check_input`] applies the same functions without
//! running anything, so a server can refuse a bad input before it accepts a run.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::graph::{CompiledGraph, GraphInner, Target};
use crate::interrupt::{InterruptInfo, Resume};
use crate::state::State;

use super::cursor::Cursor;
use super::{RunError, RunInput};

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

/// LangGraph's resume form: a single value that is a non-empty object whose keys all look
/// like interrupt ids (32 lowercase hex digits) answers interrupts by id, so an id that is
/// not pending is refused rather than handed to a node as its answer. Anything else is left
/// as it is.
pub(super) fn normalize_resume(resume: Resume) -> Resume {
    match resume {
        Resume::Value(Value::Object(map))
            if !map.is_empty() && map.keys().all(|k| looks_like_interrupt_id(k)) =>
        {
            Resume::ById(map.into_iter().collect())
        }
        other => other,
    }
}

/// Whether `key` has the form of an interrupt id.
fn looks_like_interrupt_id(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What `resume` answers: for each answered interrupt, its position in `pending` and the
/// value. Refused when nothing is pending, when a single value meets several pending
/// interrupts, or when an id is not pending.
pub(super) fn answers<'r>(
    thread_id: &str,
    pending: &[InterruptInfo],
    resume: &'r Resume,
) -> Result<Vec<(usize, &'r Value)>, RunError> {
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
            .iter()
            .map(|(id, v)| {
                pending
                    .iter()
                    .position(|p| &p.id == id)
                    .map(|pos| (pos, v))
                    .ok_or_else(|| RunError::UnknownInterrupt { id: id.clone() })
            })
            .collect(),
    }
}

/// Refuses a command's send to something that is not a node of the graph.
pub(super) fn check_sends<S: State>(
    graph: &GraphInner<S>,
    sends: &[crate::send::Send],
) -> Result<(), RunError> {
    match sends.iter().find(|s| !graph.index.contains_key(&s.node)) {
        Some(bad) => Err(RunError::UnknownNode(bad.node.clone())),
        None => Ok(()),
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

impl<S: State> CompiledGraph<S> {
    /// Checks `input` for a run on `thread_id` (from `checkpoint_id`, else the latest
    /// checkpoint) by the rules the run applies, without running or writing anything; the
    /// state cache is not touched either.
    ///
    /// Returns the input as the run will take it: a [`Resume::Value`] that is an object
    /// keyed by interrupt ids comes back as [`Resume::ById`]. A run given the
    /// returned input (on the same thread, before anything else changed it) is not refused.
    ///
    /// # Errors
    /// The refusals a run makes before it writes anything ([`RunError::is_refusal`]):
    /// [`RunError::UnknownCheckpoint`] for a `checkpoint_id` the thread does not have; for a
    /// resume, [`RunError::ResumeNotAtHead`], [`RunError::NothingToResume`],
    /// [`RunError::AmbiguousResume`] and [`RunError::UnknownInterrupt`]; for a command,
    /// [`RunError::UnknownNode`] for a `goto` target the graph does not have. Storage
    /// errors. What only running can tell (a router's choice, a reducer refusing an update,
    /// a node failing) is not predicted, nor what depends on the run's config (a command
    /// sending more tasks than its [`RunConfig::max_sends_per_step`](crate::RunConfig)).
    pub async fn check_input(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        input: RunInput<S>,
    ) -> Result<RunInput<S>, RunError> {
        let at = match checkpoint_id {
            Some(id) => Some(
                self.checkpointer
                    .get_without_values(thread_id, Some(id))
                    .await?
                    .ok_or_else(|| RunError::UnknownCheckpoint {
                        thread_id: thread_id.to_string(),
                        checkpoint_id: id.to_string(),
                    })?,
            ),
            None => None,
        };
        match input {
            RunInput::Resume(resume) => {
                let waiting_at = match at {
                    Some(loaded) => {
                        let head = self.checkpointer.head(thread_id).await?;
                        at_head(thread_id, checkpoint_id, head.as_deref())?;
                        Some(loaded)
                    }
                    None => {
                        self.checkpointer
                            .get_without_values(thread_id, None)
                            .await?
                    }
                };
                let pending = match waiting_at {
                    Some(loaded) => {
                        Cursor::<S>::with_state(loaded, Default::default())?.pending_interrupts()
                    }
                    None => Vec::new(),
                };
                let resume = normalize_resume(resume);
                answers(thread_id, &pending, &resume)?;
                Ok(RunInput::Resume(resume))
            }
            RunInput::Command(cmd) => {
                goto_targets(&self.graph, &cmd.goto)?;
                check_sends(&self.graph, &cmd.sends)?;
                Ok(RunInput::Command(cmd))
            }
            other => Ok(other),
        }
    }
}
