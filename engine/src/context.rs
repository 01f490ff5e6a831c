//! [`NodeContext`]: what a running node can do besides reading the state: suspend with
//! `interrupt`, run side effects exactly once with `step`, emit events, watch for
//! cancellation.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use crate::cancel::{CancelReason, Cancellation};
use crate::checkpoint::{CheckpointError, Checkpointer, Fence, Json, PendingWrite};
use crate::db::batch::Batcher;
use crate::node::NodeError;
use crate::stream::{Emitter, Event};

pub(crate) const STEP_CHANNEL_PREFIX: &str = "__step__:";

/// An interrupt a node raised in this attempt.
#[derive(Clone, Debug)]
pub(crate) struct Raised {
    pub(crate) index: i64,
    pub(crate) id: String,
    pub(crate) value: Value,
    pub(crate) response_schema: Option<Value>,
}

#[derive(Default)]
struct Attempt {
    interrupt_counter: i64,
    step_counters: HashMap<String, i64>,
    raised: Option<Raised>,
    /// The messages this attempt streamed deltas of, in order.
    streamed: Vec<String>,
}

/// What every task of one run shares: whose run it is, where it writes, where its events
/// go, how it is cancelled.
pub(crate) struct RunScope {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
    pub(crate) emitter: Arc<Emitter>,
    pub(crate) cancel: Cancellation,
    pub(crate) context: Arc<serde_json::Map<String, Value>>,
    /// The run's fence, carried by every write its tasks make.
    pub(crate) fence: Option<Fence>,
    /// The fence's claim, when the run's first write advances it.
    pub(crate) claim: Option<crate::checkpoint::FenceClaim>,
    /// The long-term store the run was given.
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    /// Every pending write stored at a checkpoint, while this run knows them all (it saved
    /// the checkpoint, or resumed from its own complete copy of it): what an interrupted
    /// run leaves in the state cache for its resume.
    pub(crate) known_writes: Mutex<Option<(String, Vec<PendingWrite>)>>,
    /// Whether the run's last write was stored with [`crate::checkpoint::Flush::WithNext`]
    /// and nothing flushed it since: the run flushes before it ends.
    pub(crate) unflushed: std::sync::atomic::AtomicBool,
    /// Whether the run's last checkpoint is stored (see `run::landing`): its tasks' pending
    /// writes wait for it.
    pub(crate) landing: crate::run::landing::Gate,
    /// When the run's checkpoints are stored: a subgraph node's own run stores its
    /// checkpoints the same way.
    pub(crate) durability: crate::run::Durability,
    /// Gathers the pending writes the run's tasks store at the same moment into one
    /// checkpointer call (made on the run's first write; see [`RunScope::put_writes`]).
    pub(crate) write_batch: std::sync::OnceLock<WriteBatch>,
}

/// A run's pending writes on their way: (checkpoint id, writes) per caller.
pub(crate) type WriteBatch = Batcher<(String, Vec<PendingWrite>), ()>;

/// The most pending writes a run keeps in memory as known to be stored at its checkpoint.
const MAX_KNOWN_WRITES: usize = 1024;

/// The most callers one gathered write carries.
const MAX_WRITE_BATCH: usize = 64;

impl RunScope {
    fn known(&self) -> MutexGuard<'_, Option<(String, Vec<PendingWrite>)>> {
        self.known_writes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on the writes at `checkpoint_id` are `writes` and what this run adds
    /// (`None`: not known).
    pub(crate) fn know_writes(&self, checkpoint_id: Option<(&str, Vec<PendingWrite>)>) {
        *self.known() = checkpoint_id.map(|(id, w)| (id.to_string(), w));
    }

    /// The writes known to be stored at `checkpoint_id`, if they are.
    pub(crate) fn writes_at(&self, checkpoint_id: &str) -> Option<Vec<PendingWrite>> {
        self.known()
            .as_ref()
            .filter(|(id, _)| id == checkpoint_id)
            .map(|(_, w)| w.clone())
    }

    /// Stores pending writes of this run's tasks at `checkpoint_id` (with the run's fence),
    /// keeping count of them (see `known_writes`).
    pub(crate) async fn put_writes(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        self.hold_fence().await?;
        self.landing.stored().await?;
        let kept = writes.clone();
        let stored = match self
            .write_batch()
            .submit((checkpoint_id.to_string(), writes))
            .await
        {
            Some(()) => Ok(()),
            // Its batch failed as a whole: stored alone, for this call's own answer.
            None => {
                self.checkpointer
                    .put_writes(
                        &self.thread_id,
                        checkpoint_id,
                        kept.clone(),
                        self.fence.as_ref(),
                    )
                    .await
            }
        };
        self.remember(checkpoint_id, kept, stored.is_ok());
        if stored.is_ok() {
            self.flushed();
        }
        stored
    }

    /// The run's write gatherer. A fan-out's tasks finish together and each stores its
    /// result: gathered, they take one storage call (one transaction, one sync) at a time
    /// instead of one each, so a run of thousands of tasks holds at most one of the pool's
    /// connections for its writes and leaves the others to other runs. Writes are
    /// idempotent (a key written again keeps its first value), so a failed batch is
    /// written again call by call.
    fn write_batch(&self) -> &WriteBatch {
        self.write_batch.get_or_init(|| {
            let checkpointer = self.checkpointer.clone();
            let thread_id = self.thread_id.clone();
            let fence = self.fence.clone();
            Batcher::spawn(
                MAX_WRITE_BATCH,
                1,
                move |calls: Vec<(String, Vec<PendingWrite>)>| {
                    let (checkpointer, thread_id, fence) =
                        (checkpointer.clone(), thread_id.clone(), fence.clone());
                    async move {
                        let n = calls.len();
                        // One call per checkpoint, in the order the calls came.
                        let mut at: Vec<(String, Vec<PendingWrite>)> = Vec::new();
                        for (id, writes) in calls {
                            match at.iter_mut().find(|(c, _)| *c == id) {
                                Some((_, w)) => w.extend(writes),
                                None => at.push((id, writes)),
                            }
                        }
                        for (id, writes) in at {
                            checkpointer
                                .put_writes(&thread_id, &id, writes, fence.as_ref())
                                .await?;
                        }
                        Ok::<_, CheckpointError>(vec![(); n])
                    }
                },
            )
        })
    }

    /// Notes that a write of this run was stored unflushed.
    pub(crate) fn deferred(&self) {
        self.unflushed
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Notes that a flushed write of this run was stored (which flushed the earlier ones).
    pub(crate) fn flushed(&self) {
        self.unflushed
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Puts the run's unflushed writes on disk, if any.
    pub(crate) async fn flush(&self) -> Result<(), CheckpointError> {
        if self.unflushed.load(std::sync::atomic::Ordering::Acquire) {
            self.checkpointer.flush(&self.thread_id).await?;
            self.flushed();
        }
        Ok(())
    }

    /// Hands the thread to this run, unless it holds it already (see
    /// [`crate::checkpoint::FenceClaim`]): before any write but a checkpoint, and before
    /// any node runs.
    pub(crate) async fn hold_fence(&self) -> Result<(), CheckpointError> {
        match &self.claim {
            Some(claim) => claim.hold(&*self.checkpointer).await,
            None => Ok(()),
        }
    }

    /// Adds writes just stored (`stored`; otherwise what is stored is uncertain, and the
    /// writes are no longer known) to the known writes of `checkpoint_id`.
    pub(crate) fn remember(&self, checkpoint_id: &str, writes: Vec<PendingWrite>, stored: bool) {
        let mut known = self.known();
        let Some((id, all)) = known.as_mut() else {
            return;
        };
        // Past a bound the writes are not kept: a fan-out's thousands of results are read
        // back from storage by the rare resume that needs them, rather than searched here
        // at every write.
        if id != checkpoint_id || !stored || all.len() + writes.len() > MAX_KNOWN_WRITES {
            *known = None;
            return;
        }
        for w in writes {
            // A write already stored is ignored (or, for an error, replaced).
            match all
                .iter_mut()
                .find(|o| o.task_id == w.task_id && o.channel == w.channel && o.idx == w.idx)
            {
                Some(old) if w.channel == crate::checkpoint::REPLACING_CHANNEL => *old = w,
                Some(_) => {}
                None => all.push(w),
            }
        }
    }
}

/// One task's place in its run: the checkpoint it runs from, and what was recorded for it
/// there before (resume values, durable step results).
pub(crate) struct TaskSpec {
    pub(crate) checkpoint_id: String,
    pub(crate) node: String,
    pub(crate) task_id: String,
    pub(crate) step: i64,
    /// Resume values by interrupt index.
    pub(crate) resumes: BTreeMap<i64, Value>,
    /// Durable step results recorded so far: (channel, idx) -> JSON.
    pub(crate) recorded: HashMap<(String, i64), Json>,
    /// The task's own input, when a send started it.
    pub(crate) arg: Option<Value>,
}

/// A memo step's result, kept as a value until the task suspends (see
/// [`NodeContext::memo`](crate::NodeContext::memo)).
pub(crate) struct MemoRecord {
    pub(crate) channel: String,
    pub(crate) idx: i64,
    pub(crate) value: Arc<dyn MemoValue>,
}

/// A memo step's result: serialized only when the task suspends, and given back to an
/// attempt of the same task as the value itself.
pub(crate) trait MemoValue: Send + Sync {
    /// The value as JSON, to store with an interrupt.
    fn raw(&self) -> Result<Json, serde_json::Error>;
    /// The value, to downcast to its type.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: serde::Serialize + Send + Sync + 'static> MemoValue for T {
    fn raw(&self) -> Result<Json, serde_json::Error> {
        serde_json::value::to_raw_value(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A running task's state, shared by its [`NodeContext`]s (one per attempt).
pub(crate) struct TaskShared {
    pub(crate) run: Arc<RunScope>,
    pub(crate) checkpoint_id: String,
    pub(crate) node: String,
    pub(crate) task_id: String,
    pub(crate) step: i64,
    /// Resume values by interrupt index.
    pub(crate) resumes: BTreeMap<i64, Value>,
    /// The task's own input, when a send started it.
    pub(crate) arg: Option<Value>,
    /// Durable step results recorded so far: (channel, idx) -> JSON.
    pub(crate) recorded: Mutex<HashMap<(String, i64), Json>>,
    /// Results of [`NodeContext::memo`] steps not stored yet, kept as values: they are
    /// serialized and stored with the task's interrupt, if it raises one.
    pub(crate) deferred: Mutex<Vec<MemoRecord>>,
    attempt: Mutex<Attempt>,
    /// The status lines the task reported (line and details), so that an attempt after a
    /// retry does not report one again.
    reported: Mutex<Vec<(String, Value)>>,
    /// A storage error that stopped the task (a durable step could not be recorded): the
    /// run stops with it rather than the node failing.
    pub(crate) storage_failure: Mutex<Option<CheckpointError>>,
}

impl TaskShared {
    pub(crate) fn new(run: Arc<RunScope>, task: TaskSpec) -> Self {
        TaskShared {
            run,
            checkpoint_id: task.checkpoint_id,
            node: task.node,
            task_id: task.task_id,
            step: task.step,
            resumes: task.resumes,
            arg: task.arg,
            recorded: Mutex::new(task.recorded),
            deferred: Mutex::new(Vec::new()),
            attempt: Mutex::new(Attempt::default()),
            reported: Mutex::new(Vec::new()),
            storage_failure: Mutex::new(None),
        }
    }

    /// Whether a storage error stopped the task.
    pub(crate) fn has_storage_failure(&self) -> bool {
        self.storage_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The storage error that stopped the task, if one did.
    pub(crate) fn take_storage_failure(&self) -> Option<CheckpointError> {
        self.storage_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The [`NodeContext::memo`] results not stored yet, taken and serialized (to store
    /// with an interrupt). A result that does not serialize is left out: the node re-entered
    /// after the interrupt runs that step's body again, as after a crash.
    pub(crate) fn take_deferred(&self) -> Vec<PendingWrite> {
        let records = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()));
        records
            .into_iter()
            .filter_map(|r| match r.value.raw() {
                Ok(value) => Some(PendingWrite {
                    task_id: self.task_id.clone(),
                    channel: r.channel,
                    idx: r.idx,
                    value,
                }),
                Err(e) => {
                    tracing::error!(channel = %r.channel, error = %e, "a memo step's result does not serialize; it is not stored with the interrupt");
                    None
                }
            })
            .collect()
    }

    /// The value memo step `(channel, idx)` kept in this task, if it ran.
    pub(crate) fn kept_memo(&self, channel: &str, idx: i64) -> Option<Arc<dyn MemoValue>> {
        self.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|r| r.channel == channel && r.idx == idx)
            .map(|r| Arc::clone(&r.value))
    }

    /// The number of the next step named `name` in this attempt (from 0).
    pub(crate) fn next_step_index(&self, name: &str) -> i64 {
        let mut a = self.attempt();
        let c = a.step_counters.entry(name.to_string()).or_insert(0);
        let i = *c;
        *c += 1;
        i
    }

    fn attempt(&self) -> MutexGuard<'_, Attempt> {
        self.attempt.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new attempt: interrupt and step counters start again from zero, and the
    /// messages the previous attempt streamed are void: a [`Event::MessageReset`] for each
    /// tells consumers to replace their partial text with what this attempt streams.
    pub(crate) fn begin_attempt(&self) {
        let previous = std::mem::take(&mut *self.attempt());
        for message_id in previous.streamed {
            self.run.emitter.emit_with(|| Event::MessageReset {
                node: self.node.clone(),
                message_id,
            });
        }
    }

    /// The interrupt raised in the last attempt, if any.
    pub(crate) fn take_raised(&self) -> Option<Raised> {
        self.attempt().raised.take()
    }
}

/// The context a node runs with. Cheap to clone.
#[derive(Clone)]
pub struct NodeContext {
    pub(crate) inner: Arc<TaskShared>,
}

impl NodeContext {
    /// The thread this run belongs to.
    pub fn thread_id(&self) -> &str {
        &self.inner.run.thread_id
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.inner.run.run_id
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// This task's id.
    pub fn task_id(&self) -> &str {
        &self.inner.task_id
    }

    /// The run's context (see `RunConfig::context`), e.g. `ctx.context()["user_id"]`.
    pub fn context(&self) -> &serde_json::Map<String, Value> {
        &self.inner.run.context
    }

    /// The task's own input, given by the [`Send`](crate::send::Send) that started it.
    ///
    /// # Errors
    /// A fatal error when the task was not started by a send, or when its input does not
    /// deserialize into `T`.
    pub fn arg<T: DeserializeOwned>(&self) -> Result<T, NodeError> {
        let Some(v) = &self.inner.arg else {
            return Err(NodeError::fatal(format!(
                "node `{}` was not started by a Send: it has no input of its own",
                self.inner.node
            )));
        };
        T::deserialize(v).map_err(|e| {
            NodeError::fatal(format!(
                "the input sent to `{}` does not fit: {e}",
                self.inner.node
            ))
        })
    }

    /// The long-term store the run was given ([`RunConfig::store`](crate::RunConfig::store),
    /// else the graph's [`CompiledGraph::with_store`](crate::CompiledGraph::with_store)):
    /// memory shared across threads. `None` when the run has none.
    ///
    /// Writes to it are side effects like any other: a node that runs again (after a resume
    /// or a crash) writes again, which a put under the same key makes harmless; wrap
    /// anything else in [`NodeContext::step`].
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.inner.run.store.as_ref()
    }

    /// The task's own input as JSON, when a send started it.
    pub fn arg_json(&self) -> Option<&Value> {
        self.inner.arg.as_ref()
    }

    /// The step this task runs in.
    pub fn step_number(&self) -> i64 {
        self.inner.step
    }

    /// Suspends the graph with `payload`, or, when the run was resumed with a value for
    /// this interrupt, returns that value.
    ///
    /// Interrupts in one node are matched with resume values by order: the first call gets
    /// the first value, and so on. Work done before an interrupt runs again on resume; put
    /// side effects in [`NodeContext::step`].
    ///
    /// # Errors
    /// The first time: an error that stops the node (propagate it with `?`). When the resume
    /// value does not deserialize into `T`: a fatal error.
    pub fn interrupt<T: DeserializeOwned>(&self, payload: impl Serialize) -> Result<T, NodeError> {
        self.raise(payload, None)
    }

    /// [`NodeContext::interrupt`], telling whoever answers what the answer must look like:
    /// `response_schema` is the JSON Schema of the resume value, reported with the pending
    /// interrupt (the Agent Server API's `Interrupt.response_schema`).
    ///
    /// # Errors
    /// As [`NodeContext::interrupt`].
    pub fn interrupt_with_schema<T: DeserializeOwned>(
        &self,
        payload: impl Serialize,
        response_schema: Value,
    ) -> Result<T, NodeError> {
        self.raise(payload, Some(response_schema))
    }

    /// [`NodeContext::interrupt`] whose answer is a `T`, with `T`'s JSON Schema as the
    /// interrupt's `response_schema`.
    ///
    /// # Errors
    /// As [`NodeContext::interrupt`].
    #[cfg(feature = "schema")]
    pub fn interrupt_expecting<T: DeserializeOwned + schemars::JsonSchema>(
        &self,
        payload: impl Serialize,
    ) -> Result<T, NodeError> {
        let schema = serde_json::to_value(schemars::schema_for!(T))
            .map_err(|e| NodeError::fatal(format!("response schema does not serialize: {e}")))?;
        self.raise(payload, Some(schema))
    }

    fn raise<T: DeserializeOwned>(
        &self,
        payload: impl Serialize,
        response_schema: Option<Value>,
    ) -> Result<T, NodeError> {
        let index = {
            let mut a = self.inner.attempt();
            let i = a.interrupt_counter;
            a.interrupt_counter += 1;
            i
        };
        if let Some(v) = self.inner.resumes.get(&index) {
            return serde_json::from_value(v.clone()).map_err(|e| {
                NodeError::fatal(format!(
                    "the resume value for interrupt {index} of `{}` does not fit: {e}",
                    self.inner.node
                ))
            });
        }
        let value = serde_json::to_value(payload)
            .map_err(|e| NodeError::fatal(format!("interrupt payload does not serialize: {e}")))?;
        self.inner.attempt().raised.get_or_insert(Raised {
            index,
            id: uuid::Uuid::new_v4().simple().to_string(),
            value,
            response_schema,
        });
        Err(NodeError::interrupt())
    }

    /// Emits a custom event (stream mode `custom`).
    pub fn emit(&self, value: impl Serialize) {
        self.inner.run.emitter.emit_with(|| Event::Custom {
            node: self.inner.node.clone(),
            value: serde_json::to_value(value).unwrap_or(Value::Null),
        });
    }

    /// Reports a status line with details (e.g. `{"docs_found": [...]}`). A line the task
    /// already reported with the same details (an attempt after a retry reporting it again)
    /// is not streamed twice.
    pub fn status(&self, message: impl Into<String>, details: impl Serialize) {
        let message = message.into();
        let details = serde_json::to_value(details).unwrap_or(Value::Null);
        {
            let mut reported = self
                .inner
                .reported
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if reported.iter().any(|(m, d)| *m == message && *d == details) {
                return;
            }
            reported.push((message.clone(), details.clone()));
        }
        self.inner.run.emitter.emit_with(|| Event::Status {
            node: self.inner.node.clone(),
            message,
            details,
        });
    }

    /// Streams a piece of a message being written (stream mode `messages`). When the node
    /// fails and its retry policy runs it again, the engine emits [`Event::MessageReset`]
    /// for every message the failed attempt streamed, before the new attempt starts.
    pub fn message_delta(&self, message_id: &str, delta: impl Into<String>) {
        {
            let mut a = self.inner.attempt();
            if !a.streamed.iter().any(|m| m == message_id) {
                a.streamed.push(message_id.to_string());
            }
        }
        self.inner.run.emitter.emit_with(|| Event::MessageDelta {
            node: self.inner.node.clone(),
            message_id: message_id.to_string(),
            delta: delta.into(),
        });
    }

    /// Whether the run was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.inner.run.cancel.is_cancelled()
    }

    /// Resolves when the run is asked to stop.
    pub async fn cancelled(&self) {
        self.inner.run.cancel.cancelled().await
    }

    /// Why the run was asked to stop.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.inner.run.cancel.reason()
    }
}
