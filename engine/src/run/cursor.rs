//! The cursor: a checkpoint loaded into a typed state, its plan and its pending writes; and
//! the other way round, a step's writes turned into the next checkpoint.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::to_raw_value;
use serde_json::{Map, Value};

use crate::checkpoint::{
    now_ms, CheckpointRecord, FieldBlob, Json, LoadedCheckpoint, PendingWrite, PutCheckpoint,
};
use crate::context::STEP_CHANNEL_PREFIX;
use crate::interrupt::InterruptInfo;
use crate::state::{FieldSet, State, StateError};

use super::plan::{DeltaCounter, Plan};
use super::RunError;

pub(crate) const RESULT: &str = "__result__";
pub(crate) const INTERRUPT: &str = "__interrupt__";
pub(crate) const RESUME: &str = "__resume__";
pub(crate) const ERROR: &str = "__error__";

/// A delta chain longer than this many bytes since the last full value gets a snapshot,
/// unless the last snapshot is bigger (so the bytes written per turn stay proportional to
/// what changed, and reading a field costs at most twice its size).
pub(crate) const MIN_SNAPSHOT_BYTES: u64 = 16 * 1024;

/// A finished task's result as stored in its pending write.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredResult<U> {
    pub(crate) update: Option<U>,
    #[serde(default)]
    pub(crate) goto: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sends: Vec<crate::send::Send>,
    /// What the task did (timing, attempts, LLM calls), for the step's checkpoint metadata
    /// (absent in the node cache, and in results stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ran: Option<crate::observe::TaskRecord>,
}

/// A raised interrupt as stored in its pending write.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredInterrupt {
    pub(crate) id: String,
    pub(crate) value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) response_schema: Option<Value>,
}

/// A failure as stored in its pending write.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredError {
    pub(crate) node: String,
    pub(crate) message: String,
}

/// One task's pending writes, decoded.
#[derive(Default, Debug)]
pub(crate) struct TaskWrites {
    pub(crate) result: Option<Json>,
    pub(crate) interrupts: BTreeMap<i64, StoredInterruptOwned>,
    pub(crate) resumes: BTreeMap<i64, Value>,
    pub(crate) steps: HashMap<(String, i64), Json>,
    pub(crate) error: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct StoredInterruptOwned {
    pub(crate) id: String,
    pub(crate) value: Value,
    pub(crate) response_schema: Option<Value>,
}

impl TaskWrites {
    /// Interrupt indexes raised and not yet answered.
    pub(crate) fn unanswered(&self) -> impl Iterator<Item = (&i64, &StoredInterruptOwned)> {
        self.interrupts
            .iter()
            .filter(|(i, _)| !self.resumes.contains_key(i))
    }
}

/// A loaded checkpoint (or an empty thread).
pub(crate) struct Cursor<S: State> {
    pub(crate) record: Option<CheckpointRecord>,
    pub(crate) state: Arc<S>,
    pub(crate) plan: Plan,
    pub(crate) writes: HashMap<String, TaskWrites>,
}

fn decode<T: for<'de> Deserialize<'de>>(raw: &str, what: &str) -> Result<T, RunError> {
    serde_json::from_str(raw).map_err(|e| {
        RunError::Checkpoint(crate::checkpoint::CheckpointError::Decode(format!(
            "{what}: {e}"
        )))
    })
}

impl<S: State> Cursor<S> {
    /// A thread with no checkpoint yet.
    pub(crate) fn empty() -> Self {
        Cursor {
            record: None,
            state: Arc::new(S::default()),
            plan: Plan::default(),
            writes: HashMap::new(),
        }
    }

    /// A checkpoint read without field values, with its state known already.
    pub(crate) fn with_state(loaded: LoadedCheckpoint, state: Arc<S>) -> Result<Self, RunError> {
        let mut c = Self::decode(loaded)?;
        c.state = state;
        Ok(c)
    }

    /// Folds the field chains into a state and decodes plan and writes.
    pub(crate) fn load(mut loaded: LoadedCheckpoint) -> Result<Self, RunError> {
        let fields = std::mem::take(&mut loaded.fields);
        let mut c = Self::decode(loaded)?;
        c.state = Arc::new(Self::fold(&fields)?);
        Ok(c)
    }

    fn fold(fields: &[crate::checkpoint::FieldChain]) -> Result<S, RunError> {
        let mut state = S::default();
        for chain in fields {
            let Some(idx) = S::field_index(&chain.field) else {
                tracing::warn!(field = %chain.field, "stored field not in the state type; ignored");
                continue;
            };
            if let Some(base) = &chain.base {
                state.set_field_json(idx, base.get())?;
            }
            let mut parts: Vec<&str> = Vec::new();
            for delta in &chain.deltas {
                let list: Vec<&serde_json::value::RawValue> =
                    serde_json::from_str(delta.get()).map_err(StateError::Decode)?;
                parts.extend(list.into_iter().map(|p| p.get()));
            }
            if !parts.is_empty() {
                state.apply_deltas_json(idx, &parts)?;
            }
        }
        Ok(state)
    }

    /// Decodes plan and pending writes (the state is left at its default).
    fn decode(loaded: LoadedCheckpoint) -> Result<Self, RunError> {
        let plan: Plan = serde_json::from_str(loaded.record.plan.get()).map_err(|e| {
            RunError::Checkpoint(crate::checkpoint::CheckpointError::Decode(format!(
                "plan of checkpoint {}: {e}",
                loaded.record.checkpoint_id
            )))
        })?;
        let mut writes: HashMap<String, TaskWrites> = HashMap::new();
        for w in loaded.writes {
            let tw = writes.entry(w.task_id.clone()).or_default();
            match w.channel.as_str() {
                RESULT => tw.result = Some(w.value),
                INTERRUPT => {
                    let i: StoredInterrupt = decode(w.value.get(), "interrupt write")?;
                    tw.interrupts.insert(
                        w.idx,
                        StoredInterruptOwned {
                            id: i.id,
                            value: i.value,
                            response_schema: i.response_schema,
                        },
                    );
                }
                RESUME => {
                    tw.resumes
                        .insert(w.idx, decode(w.value.get(), "resume write")?);
                }
                ERROR => {
                    let e: StoredError = decode(w.value.get(), "error write")?;
                    tw.error = Some(e.message);
                }
                c if c.starts_with(STEP_CHANNEL_PREFIX) => {
                    tw.steps.insert((w.channel.clone(), w.idx), w.value);
                }
                other => tracing::warn!(channel = other, "unknown pending write channel; ignored"),
            }
        }
        Ok(Cursor {
            record: Some(loaded.record),
            state: Arc::new(S::default()),
            plan,
            writes,
        })
    }

    pub(crate) fn id(&self) -> Option<&str> {
        self.record.as_ref().map(|r| r.checkpoint_id.as_str())
    }

    pub(crate) fn metadata(&self) -> Option<&Map<String, Value>> {
        self.record.as_ref().map(|r| &r.metadata)
    }

    pub(crate) fn step(&self) -> i64 {
        self.metadata()
            .and_then(|m| m.get("step"))
            .and_then(Value::as_i64)
            .unwrap_or(-1)
    }

    /// The checkpoint the current turn started from (recorded as `turn_base` in the
    /// metadata of every checkpoint of the turn): where the next turn starts when this one
    /// failed, so its partial items are not carried forward.
    pub(crate) fn turn_base(&self) -> Option<&str> {
        self.metadata()
            .and_then(|m| m.get("turn_base"))
            .and_then(Value::as_str)
    }

    /// Whether this is a turn's input checkpoint (metadata `source: "input"`).
    pub(crate) fn is_input(&self) -> bool {
        self.metadata()
            .and_then(|m| m.get("source"))
            .and_then(Value::as_str)
            == Some("input")
    }

    pub(crate) fn turn(&self) -> u64 {
        self.metadata()
            .and_then(|m| m.get("turn"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// Interrupts raised by due tasks and not answered yet, in task order.
    pub(crate) fn pending_interrupts(&self) -> Vec<InterruptInfo> {
        let mut out = Vec::new();
        for t in &self.plan.tasks {
            let Some(w) = self.writes.get(&t.id) else {
                continue;
            };
            if w.result.is_some() {
                continue;
            }
            for (idx, i) in w.unanswered() {
                out.push(InterruptInfo {
                    id: i.id.clone(),
                    value: i.value.clone(),
                    node: t.node.clone(),
                    task_id: t.id.clone(),
                    index: *idx,
                    response_schema: i.response_schema.clone(),
                });
            }
        }
        out
    }

    /// Whether no run is under way from this checkpoint: the graph finished, or it waits
    /// for an answer or at a breakpoint, or a task failed.
    pub(crate) fn at_rest(&self) -> bool {
        self.plan.tasks.is_empty()
            || self.plan.paused.is_some()
            || self.failed()
            || !self.pending_interrupts().is_empty()
    }

    /// When the checkpoint was written (0 for a thread with none).
    pub(crate) fn created_at_ms(&self) -> i64 {
        self.record.as_ref().map_or(0, |r| r.created_at_ms)
    }

    /// Whether a due task failed (and has not finished since).
    pub(crate) fn failed(&self) -> bool {
        self.plan.tasks.iter().any(|t| {
            self.writes
                .get(&t.id)
                .is_some_and(|w| w.result.is_none() && w.error.is_some())
        })
    }
}

/// What one step (or an input) wrote, field by field.
pub(crate) struct StepWrites {
    /// Fields written.
    pub(crate) written: FieldSet,
    /// Fields that must be stored whole (reset, or written by a non-delta path).
    pub(crate) full: FieldSet,
    /// For delta fields: the JSON of each update part, in application order.
    pub(crate) parts: Vec<Vec<Json>>,
}

impl StepWrites {
    pub(crate) fn new<S: State>() -> Self {
        StepWrites {
            written: FieldSet::EMPTY,
            full: FieldSet::EMPTY,
            parts: vec![Vec::new(); S::FIELDS.len()],
        }
    }

    /// Records the parts of `update` for delta fields (call before applying it).
    pub(crate) fn record<S: State>(&mut self, update: &S::Update) -> Result<FieldSet, RunError> {
        use crate::state::StateUpdate;
        let w = update.written();
        for idx in w.iter() {
            if S::FIELDS[idx].delta && !self.full.contains(idx) {
                if let Some(part) = update.field_raw(idx) {
                    self.parts[idx].push(part.map_err(StateError::Encode)?);
                }
            }
        }
        self.written = self.written.union(w);
        Ok(w)
    }

    /// Marks a field as reset (stored whole).
    pub(crate) fn reset(&mut self, idx: usize) {
        self.written.insert(idx);
        self.full.insert(idx);
        self.parts[idx].clear();
    }
}

/// Builds the next checkpoint of a thread.
pub(crate) struct NextCheckpoint<'a> {
    pub(crate) thread_id: &'a str,
    /// The parent's record: its id and versions are taken for the new record's.
    pub(crate) parent: Option<&'a mut CheckpointRecord>,
    pub(crate) parent_plan: &'a Plan,
    pub(crate) expected_head: Option<(String, i64)>,
    pub(crate) plan: Plan,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) fence: Option<crate::checkpoint::Fence>,
    /// When the checkpoint's commit must be on disk.
    pub(crate) flush: crate::checkpoint::Flush,
}

impl NextCheckpoint<'_> {
    /// The record and blobs for `state` after `writes`, and the plan stored in it.
    pub(crate) fn build<S: State>(
        self,
        state: &S,
        writes: &StepWrites,
    ) -> Result<(PutCheckpoint, Plan), RunError> {
        let id = uuid::Uuid::now_v7().to_string();
        let (parent_id, mut versions) = match self.parent {
            Some(p) => (
                Some(std::mem::take(&mut p.checkpoint_id)),
                std::mem::take(&mut p.versions),
            ),
            None => (None, BTreeMap::new()),
        };
        let mut plan = self.plan;
        plan.counters = self.parent_plan.counters.clone();
        let mut blobs = Vec::new();
        for idx in writes.written.iter() {
            let info = &S::FIELDS[idx];
            let prev = versions.get(info.name).cloned();
            let counter = plan.counters.get(info.name).copied().unwrap_or_default();
            // Raw JSON made by serializing (the parts are each already JSON), never parsed
            // again to be checked.
            let delta_json =
                if info.delta && !writes.full.contains(idx) && !writes.parts[idx].is_empty() {
                    let s = to_raw_value(&writes.parts[idx]).map_err(StateError::Encode)?;
                    let due = counter.since + s.get().len() as u64
                        > counter.snapshot.max(MIN_SNAPSHOT_BYTES);
                    if due {
                        None
                    } else {
                        Some(s)
                    }
                } else {
                    None
                };
            let blob = match delta_json {
                Some(s) => {
                    plan.counters.insert(
                        info.name.to_string(),
                        DeltaCounter {
                            since: counter.since + s.get().len() as u64,
                            snapshot: counter.snapshot,
                        },
                    );
                    FieldBlob {
                        field: info.name.to_string(),
                        version: id.clone(),
                        prev,
                        delta: true,
                        value: s,
                    }
                }
                None => {
                    let full = state.field_raw(idx).map_err(StateError::Encode)?;
                    if info.delta {
                        plan.counters.insert(
                            info.name.to_string(),
                            DeltaCounter {
                                since: 0,
                                snapshot: full.get().len() as u64,
                            },
                        );
                    }
                    FieldBlob {
                        field: info.name.to_string(),
                        version: id.clone(),
                        prev: None,
                        delta: false,
                        value: full,
                    }
                }
            };
            versions.insert(info.name.to_string(), id.clone());
            blobs.push(blob);
        }
        let plan_json = to_raw_value(&plan).map_err(StateError::Encode)?;
        Ok((
            PutCheckpoint {
                record: CheckpointRecord {
                    thread_id: self.thread_id.to_string(),
                    checkpoint_id: id,
                    parent_id,
                    seq: self.expected_head.as_ref().map(|h| h.1 + 1).unwrap_or(1),
                    created_at_ms: now_ms(),
                    metadata: self.metadata,
                    versions,
                    plan: plan_json,
                },
                blobs,
                expected_head: self.expected_head.map(|h| h.0),
                fence: self.fence,
                flush: self.flush,
            },
            plan,
        ))
    }
}

/// A pending write of `value` for `task_id`.
pub(crate) fn write(
    task_id: &str,
    channel: &str,
    idx: i64,
    value: &impl Serialize,
) -> Result<PendingWrite, RunError> {
    Ok(PendingWrite {
        task_id: task_id.to_string(),
        channel: channel.to_string(),
        idx,
        value: to_raw_value(value).map_err(StateError::Encode)?,
    })
}
