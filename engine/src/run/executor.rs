//! The run loop: turn the input into the first cursor ([`super::input`]), then run steps
//! ([`super::step`]) until END, an interrupt, a failure or a cancel, writing a checkpoint
//! after every step.

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::Instrument;

use crate::cancel::CancelReason;
use futures_util::FutureExt;

use crate::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, FenceClaim, Flush, PutCheckpoint,
};
use crate::context::RunScope;
use crate::graph::CompiledGraph;
use crate::node::NodeError;
use crate::state::State;
use crate::stream::{Emitter, Event, EventSink, StreamMode};

use super::breakpoint::{self, Breakpoint, BreakpointWhen, NodeSet};
use super::cache::{CleanHead, Entry, WaitingHead};
use super::cursor::{Cursor, NextCheckpoint, StepWrites};
use super::landing::InFlight;
use super::plan::{Plan, TaskPlan};
use super::step::Ran;
use super::task::TaskOutcome;
use super::{RunConfig, RunError, RunInput, RunOutcome, RunStatus};

pub(crate) async fn run<S: State>(
    g: &CompiledGraph<S>,
    cfg: RunConfig,
    input: RunInput<S>,
    sink: Arc<dyn EventSink>,
) -> Result<RunOutcome<S>, RunError> {
    let span = tracing::info_span!(
        "run",
        thread_id = %cfg.thread_id,
        run_id = %cfg.run_id,
        input = input.kind()
    );
    let mut ex = Executor::new(g, cfg, sink);
    let emitter = ex.emitter().clone();
    emitter.emit_with(|| Event::RunStarted {
        run_id: ex.cfg.run_id.clone(),
        thread_id: ex.cfg.thread_id.clone(),
        input: input.kind().to_string(),
    });
    let result = ex.execute(input).instrument(span).await;
    if let Ok(o) = &result {
        if let Some(id) = &o.checkpoint_id {
            g.cache.put(
                &o.thread_id,
                id,
                o.state.clone(),
                ex.clean_head.take(),
                ex.waiting_head.take(),
            );
        }
    }
    match &result {
        Ok(o) => emitter.emit_with(|| match &o.status {
            RunStatus::Completed => Event::Completed {
                checkpoint_id: o.checkpoint_id.clone(),
            },
            RunStatus::Interrupted(i) => Event::Interrupted {
                interrupts: i.clone(),
            },
            RunStatus::Cancelled(r) => Event::Cancelled { reason: r.clone() },
        }),
        Err(e) => emitter.emit_with(|| Event::Failed {
            node: match e {
                RunError::Node { node, .. } => Some(node.clone()),
                RunError::Panic { node, .. } => node.clone(),
                _ => None,
            },
            error: e.to_string(),
        }),
    }
    result
}

/// One run (or one `update_state`) of a graph on a thread.
pub(super) struct Executor<'a, S: State> {
    pub(super) g: &'a CompiledGraph<S>,
    pub(super) cfg: RunConfig,
    /// What the run's tasks share (thread, run, storage, events, cancellation, fence).
    pub(super) scope: Arc<RunScope>,
    /// Steps this run may take.
    pub(super) limit: usize,
    /// The thread's head as this run last saw it (id, seq).
    pub(super) head: Option<(String, i64)>,
    /// The last checkpoint, when the run completed (for the state cache).
    clean_head: Option<CleanHead>,
    /// The last checkpoint and its writes, when the run stopped on interrupts (for the
    /// state cache).
    waiting_head: Option<WaitingHead>,
    /// The last step's checkpoint, while it is stored in the background.
    pub(super) in_flight: Option<InFlight>,
}

impl<'a, S: State> Executor<'a, S> {
    /// An executor for `cfg` on `g`, sending its events to `sink` (filtered by the config's
    /// stream modes).
    pub(super) fn new(g: &'a CompiledGraph<S>, cfg: RunConfig, sink: Arc<dyn EventSink>) -> Self {
        let scope = Arc::new(RunScope {
            thread_id: cfg.thread_id.clone(),
            run_id: cfg.run_id.clone(),
            checkpointer: g.checkpointer.clone(),
            emitter: Arc::new(Emitter::new(sink, cfg.stream_modes)),
            cancel: cfg.cancel.clone(),
            context: cfg.context.clone(),
            fence: cfg.fence.clone(),
            claim: cfg.claim.clone(),
            store: cfg.store.clone().or_else(|| g.store.clone()),
            known_writes: std::sync::Mutex::new(None),
            unflushed: Default::default(),
            landing: Default::default(),
            durability: cfg.durability,
            write_batch: Default::default(),
        });
        Executor {
            limit: cfg.recursion_limit.unwrap_or(g.recursion_limit),
            g,
            cfg,
            scope,
            head: None,
            clean_head: None,
            waiting_head: None,
            in_flight: None,
        }
    }
}

impl<S: State> Executor<'_, S> {
    /// How many tasks of a step run at once.
    pub(super) fn max_concurrency(&self) -> usize {
        self.cfg
            .max_concurrency
            .unwrap_or(self.g.max_concurrency)
            .max(1)
    }

    /// How many tasks a step may plan.
    pub(super) fn max_tasks_per_step(&self) -> usize {
        self.cfg
            .max_sends_per_step
            .unwrap_or(self.g.max_sends_per_step)
            .max(1)
    }

    pub(super) fn cp(&self) -> &Arc<dyn Checkpointer> {
        &self.g.checkpointer
    }

    pub(super) fn thread(&self) -> &str {
        &self.cfg.thread_id
    }

    pub(super) fn emitter(&self) -> &Arc<Emitter> {
        &self.scope.emitter
    }

    /// A checkpoint of the thread (the latest when `id` is `None`), read from storage.
    pub(super) async fn load(&self, id: Option<&str>) -> Result<Option<Cursor<S>>, RunError> {
        match self.cp().get(self.thread(), id).await? {
            Some(l) => Ok(Some(Cursor::load(l)?)),
            None => Ok(None),
        }
    }

    /// The thread's latest checkpoint, taking its state from the cache when it is current.
    pub(super) async fn load_head(&self) -> Result<Option<Cursor<S>>, RunError> {
        let cached = self.g.cache.take(self.thread());
        load_head(self.g, self.thread(), cached).await
    }

    /// Remembers `cur` as the thread's head (the expected head of the next save).
    pub(super) fn set_head(&mut self, cur: &Cursor<S>) {
        self.head = cur
            .record
            .as_ref()
            .map(|r| (r.checkpoint_id.clone(), r.seq));
    }

    /// Metadata for a checkpoint of a new turn, or (with `cur`'s turn and `turn_base`) of
    /// the turn `cur` belongs to.
    pub(super) fn metadata(
        &self,
        source: &str,
        step: i64,
        turn: u64,
        turn_base: Option<&str>,
    ) -> Map<String, Value> {
        let mut m = self.cfg.metadata.clone();
        m.insert("source".into(), source.into());
        m.insert("step".into(), step.into());
        m.insert("run_id".into(), self.cfg.run_id.clone().into());
        m.insert("turn".into(), turn.into());
        if let Some(b) = turn_base {
            m.insert("turn_base".into(), b.into());
        }
        m
    }

    /// Metadata for the next checkpoint of the turn `cur` belongs to.
    pub(super) fn metadata_after(
        &self,
        source: &str,
        step: i64,
        cur: &Cursor<S>,
    ) -> Map<String, Value> {
        self.metadata(source, step, cur.turn(), cur.turn_base())
    }

    /// Saves the next checkpoint after `cur` and moves the cursor to it.
    pub(super) async fn save(
        &mut self,
        cur: &mut Cursor<S>,
        writes: &StepWrites,
        plan: Plan,
        metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        self.save_with(cur, writes, plan, metadata, Flush::Now)
            .await
    }

    /// [`Executor::save`] with the commit on disk when `flush` says.
    pub(super) async fn save_with(
        &mut self,
        cur: &mut Cursor<S>,
        writes: &StepWrites,
        plan: Plan,
        metadata: Map<String, Value>,
        flush: Flush,
    ) -> Result<(), RunError> {
        let (put, done) = self.next_put(cur, writes, plan, metadata, flush)?;
        let stored = self.put_future(&put);
        // What the cursor held of its checkpoint is freed while the put is in flight rather
        // than before or after it. The put is polled first, so its statement is sent before.
        let (stored, ()) = futures_util::future::join(stored, async move { drop(done) }).await;
        stored?;
        match flush {
            Flush::Now => self.scope.flushed(),
            Flush::WithNext => self.scope.deferred(),
        }
        self.moved_to(cur, put.record);
        Ok(())
    }

    /// Saves the next checkpoint after `cur` in the background ([`Durability::Async`]):
    /// sends its statement, moves the cursor to it and returns; `events` (the step's) follow
    /// the checkpoint's own once it lands (see [`InFlight`]).
    pub(super) async fn launch(
        &mut self,
        cur: &mut Cursor<S>,
        writes: &StepWrites,
        plan: Plan,
        metadata: Map<String, Value>,
        mut events: Vec<Event>,
    ) -> Result<(), RunError> {
        let (put, done) = self.next_put(cur, writes, plan, metadata, Flush::Now)?;
        // The previous step's checkpoint, if it is still on its way, lands first.
        self.land().await?;
        let put = Arc::new(put);
        let stored = {
            let (cp, claim, put) = (self.cp().clone(), self.cfg.claim.clone(), put.clone());
            let span = put_span(&self.cfg.thread_id, &put);
            async move { store(&*cp, claim.as_ref(), &put).await }
                .instrument(span)
                .boxed()
        };
        let mut flight = InFlight::launch(&self.scope, stored).await;
        drop(done);
        self.moved_to(cur, put.record.clone());
        if self.emitter().is_active() {
            events.extend(self.checkpoint_events(cur));
            flight.events = events;
        }
        self.in_flight = Some(flight);
        Ok(())
    }

    /// Waits for the checkpoint saved in the background, if any, to land (see [`InFlight`]).
    pub(super) async fn land(&mut self) -> Result<(), RunError> {
        match self.in_flight.take() {
            Some(flight) => Ok(flight.land(&self.scope).await?),
            None => Ok(()),
        }
    }

    /// The next checkpoint after `cur`, with the cursor's plan moved to it; and what the
    /// cursor held of its checkpoint, to free while the put is in flight (the cursor is not
    /// used again if the put fails).
    fn next_put(
        &self,
        cur: &mut Cursor<S>,
        writes: &StepWrites,
        plan: Plan,
        metadata: Map<String, Value>,
        flush: Flush,
    ) -> Result<(PutCheckpoint, impl Send + 'static), RunError> {
        let mut parent = cur.record.take();
        let (put, plan) = NextCheckpoint {
            thread_id: &self.cfg.thread_id,
            parent: parent.as_mut(),
            parent_plan: &cur.plan,
            expected_head: self.head.clone(),
            plan,
            metadata,
            fence: self.cfg.fence.clone(),
            flush,
        }
        .build(&*cur.state, writes)?;
        let done = (
            parent,
            std::mem::replace(&mut cur.plan, plan),
            std::mem::take(&mut cur.writes),
        );
        Ok((put, done))
    }

    /// Stores `put` (through the run's claim, if it has one).
    fn put_future<'p>(
        &'p self,
        put: &'p PutCheckpoint,
    ) -> impl std::future::Future<Output = Result<(), CheckpointError>> + 'p {
        store(&**self.cp(), self.cfg.claim.as_ref(), put)
            .instrument(put_span(&self.cfg.thread_id, put))
    }

    /// Moves the cursor to the checkpoint `record` (just stored, or on its way).
    fn moved_to(&mut self, cur: &mut Cursor<S>, record: CheckpointRecord) {
        // A new checkpoint: no pending writes but this run's.
        self.scope
            .know_writes(Some((&record.checkpoint_id, Vec::new())));
        self.head = Some((record.checkpoint_id.clone(), record.seq));
        cur.record = Some(record);
    }

    pub(super) fn emit_checkpoint(&self, cur: &Cursor<S>) {
        if self.emitter().is_active() {
            for event in self.checkpoint_events(cur) {
                self.emitter().emit_with(|| event);
            }
        }
    }

    /// The events that tell `cur`'s checkpoint: its values (in `values` mode) and itself.
    fn checkpoint_events(&self, cur: &Cursor<S>) -> Vec<Event> {
        let step = cur.step();
        let mut events = Vec::with_capacity(2);
        if self.emitter().modes.contains(StreamMode::Values)
            && self.emitter().wants(StreamMode::Values)
        {
            events.push(Event::Values {
                step,
                values: serde_json::to_value(&*cur.state).unwrap_or(Value::Null),
            });
        }
        events.push(Event::Checkpoint {
            checkpoint_id: cur.id().unwrap_or_default().to_string(),
            step,
            source: cur
                .metadata()
                .and_then(|m| m.get("source"))
                .and_then(Value::as_str)
                .unwrap_or("loop")
                .to_string(),
            next: cur.plan.next_nodes(),
        });
        events
    }

    /// The nodes this run stops before (its config's list, else the graph's).
    pub(super) fn interrupt_before(&self) -> Option<&NodeSet> {
        self.cfg
            .interrupt_before
            .as_ref()
            .or(self.g.graph.interrupt_before.as_ref())
    }

    /// The nodes this run stops after (its config's list, else the graph's).
    pub(super) fn interrupt_after(&self) -> Option<&NodeSet> {
        self.cfg
            .interrupt_after
            .as_ref()
            .or(self.g.graph.interrupt_after.as_ref())
    }

    /// The breakpoint that fires at a checkpoint this run plans: after `ran` (the tasks of
    /// the step just applied), or else before `next` (the tasks planned).
    pub(super) fn breakpoint(&self, ran: &[TaskPlan], next: &[TaskPlan]) -> Option<Breakpoint> {
        let run_id = &self.cfg.run_id;
        breakpoint::fire(self.interrupt_after(), BreakpointWhen::After, ran, run_id).or_else(|| {
            breakpoint::fire(
                self.interrupt_before(),
                BreakpointWhen::Before,
                next,
                run_id,
            )
        })
    }

    async fn execute(&mut self, input: RunInput<S>) -> Result<RunOutcome<S>, RunError> {
        breakpoint::check(&self.g.graph, self.cfg.interrupt_before.as_ref())?;
        breakpoint::check(&self.g.graph, self.cfg.interrupt_after.as_ref())?;
        let cur = self.first_cursor(input).await?;
        let result = self.steps(cur).await;
        // A run's request may have been stored unflushed (see `Flush`): nothing the run
        // reports may be lost with it.
        match (result, self.scope.flush().await) {
            (Ok(outcome), Ok(())) => Ok(outcome),
            (Ok(_), Err(e)) => Err(RunError::Checkpoint(e)),
            (Err(e), _) => Err(e),
        }
    }

    /// The run's outcome at `cur`, where it ends; keeps the head it leaves for the cache.
    fn outcome(&mut self, cur: Cursor<S>, status: RunStatus) -> RunOutcome<S> {
        let checkpoint_id = cur.id().map(str::to_string);
        let Cursor {
            record,
            plan,
            writes,
            state,
            ..
        } = cur;
        self.clean_head = None;
        self.waiting_head = None;
        match (&status, record) {
            (RunStatus::Completed, Some(record)) if writes.is_empty() => {
                self.clean_head = Some(CleanHead { record, plan });
            }
            (RunStatus::Interrupted(waiting), Some(record)) if !waiting.is_empty() => {
                self.waiting_head = self
                    .scope
                    .writes_at(&record.checkpoint_id)
                    .map(|writes| WaitingHead { record, writes });
            }
            _ => {}
        }
        RunOutcome {
            run_id: self.cfg.run_id.clone(),
            thread_id: self.cfg.thread_id.clone(),
            status,
            state,
            checkpoint_id,
        }
    }

    fn cancel_reason(&self) -> CancelReason {
        self.cfg
            .cancel
            .reason()
            .unwrap_or(CancelReason::UserCancelled)
    }

    /// Runs steps from `cur` until the graph ends, waits, fails or is cancelled; returns
    /// once the last checkpoint it saved is stored.
    async fn steps(&mut self, cur: Cursor<S>) -> Result<RunOutcome<S>, RunError> {
        let result = self.steps_from(cur).await;
        // A checkpoint still on its way when the run stopped. When it failed, what the run
        // did after it does not count: its error is the run's.
        let result = self.land().await.and(result);
        if result.is_err() {
            // Events held back for a step whose checkpoint failed are never sent (its tasks
            // have stopped); the run's terminal event is not held.
            self.emitter().release(false);
        }
        result
    }

    async fn steps_from(&mut self, mut cur: Cursor<S>) -> Result<RunOutcome<S>, RunError> {
        let mut steps_run = 0usize;
        loop {
            // A breakpoint this run stopped at (just now, or in an earlier try of the same
            // run); another run continues past it.
            if cur
                .plan
                .paused
                .as_ref()
                .is_some_and(|b| b.run_id == self.cfg.run_id)
            {
                return Ok(self.outcome(cur, RunStatus::Interrupted(Vec::new())));
            }
            if cur.plan.tasks.is_empty() {
                return Ok(self.outcome(cur, RunStatus::Completed));
            }
            // The positions in the plan of the tasks that run now.
            let runnable: Vec<usize> = cur
                .plan
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    cur.writes
                        .get(&t.id)
                        .is_none_or(|w| w.result.is_none() && w.unanswered().next().is_none())
                })
                .map(|(i, _)| i)
                .collect();
            let waiting = cur.pending_interrupts();
            if runnable.is_empty() && !waiting.is_empty() {
                return Ok(self.outcome(cur, RunStatus::Interrupted(waiting)));
            }
            if self.cfg.cancel.is_cancelled() {
                return Ok(self.outcome(cur, RunStatus::Cancelled(self.cancel_reason())));
            }
            if !runnable.is_empty() {
                if steps_run >= self.limit {
                    return Err(RunError::RecursionLimit { limit: self.limit });
                }
                steps_run += 1;
            }
            let step = cur.step() + 1;
            let mut done: Vec<Option<Ran<S>>> = Vec::new();
            done.resize_with(cur.plan.tasks.len(), || None);
            let mut failure: Option<RunError> = None;
            let mut unavailable: Option<(String, NodeError)> = None;
            let mut storage: Option<CheckpointError> = None;
            let mut stopped = false;
            // No node runs before the thread is this run's.
            self.scope.hold_fence().await?;
            let landing = self.in_flight.take();
            let (outcomes, landing) = self.run_step(&cur, &runnable, step, landing).await;
            // Failed: the step ran on a checkpoint that could not be stored, and nothing it
            // did counts. Still on its way: it lands before the step's own checkpoint is put,
            // or before the run ends.
            self.in_flight = landing?;
            for (&at, (outcome, record)) in runnable.iter().zip(outcomes) {
                let task = &cur.plan.tasks[at];
                let cached = matches!(outcome, TaskOutcome::Cached(_));
                match outcome {
                    TaskOutcome::Done(cmd) | TaskOutcome::Cached(cmd) => {
                        done[at] = Some(Ran {
                            cmd,
                            cached,
                            record,
                        });
                    }
                    TaskOutcome::Interrupted(r) => {
                        let tw = cur.writes.entry(task.id.clone()).or_default();
                        tw.interrupts.insert(
                            r.index,
                            super::cursor::StoredInterruptOwned {
                                id: r.id,
                                value: r.value,
                                response_schema: r.response_schema,
                            },
                        );
                    }
                    TaskOutcome::Failed(error) => {
                        failure.get_or_insert(RunError::Node {
                            node: task.node.clone(),
                            error,
                        });
                    }
                    TaskOutcome::Panicked(message) => {
                        failure.get_or_insert(RunError::Panic {
                            node: Some(task.node.clone()),
                            message,
                        });
                    }
                    TaskOutcome::Unavailable(e) => {
                        unavailable.get_or_insert((task.node.clone(), e));
                    }
                    TaskOutcome::Storage(e) => {
                        storage.get_or_insert(e);
                    }
                    TaskOutcome::Cancelled => stopped = true,
                }
            }
            // Storage first: what the step recorded is uncertain, so nothing else is.
            if let Some(e) = storage {
                return Err(RunError::Checkpoint(e));
            }
            if let Some(e) = failure {
                return Err(e);
            }
            if let Some((node, error)) = unavailable {
                return Err(RunError::Unavailable { node, error });
            }
            let waiting = cur.pending_interrupts();
            if !waiting.is_empty() {
                return Ok(self.outcome(cur, RunStatus::Interrupted(waiting)));
            }
            if stopped {
                return Ok(self.outcome(cur, RunStatus::Cancelled(self.cancel_reason())));
            }
            self.finish_step(&mut cur, done, step).await?;
            if self.cfg.cancel.is_cancelled() {
                return Ok(self.outcome(cur, RunStatus::Cancelled(self.cancel_reason())));
            }
        }
    }
}

/// Loads a thread's head, reusing the cached state (`cached`, taken from the cache) when its
/// checkpoint is still the head.
pub(super) async fn load_head<S: State>(
    g: &CompiledGraph<S>,
    thread_id: &str,
    cached: Option<Entry<S>>,
) -> Result<Option<Cursor<S>>, RunError> {
    let Some(entry) = cached else {
        return match g.checkpointer.get(thread_id, None).await? {
            Some(l) => Ok(Some(Cursor::load(l)?)),
            None => Ok(None),
        };
    };
    let Some(meta) = g.checkpointer.get_without_values(thread_id, None).await? else {
        return Ok(None);
    };
    if entry.checkpoint_id == meta.record.checkpoint_id {
        return Ok(Some(Cursor::with_state(meta, entry.state)?));
    }
    match g
        .checkpointer
        .get(thread_id, Some(&meta.record.checkpoint_id))
        .await?
    {
        Some(l) => Ok(Some(Cursor::load(l)?)),
        None => Ok(None),
    }
}

/// Stores `put` on `cp`, through the run's `claim` when it has one.
async fn store(
    cp: &dyn Checkpointer,
    claim: Option<&FenceClaim>,
    put: &PutCheckpoint,
) -> Result<(), CheckpointError> {
    match claim {
        Some(claim) => claim.put(cp, put).await,
        None => cp.put(put).await,
    }
}

/// The span of a checkpoint's put.
fn put_span(thread_id: &str, put: &PutCheckpoint) -> tracing::Span {
    tracing::info_span!(
        "checkpoint.put",
        thread_id = %thread_id,
        checkpoint_id = %put.record.checkpoint_id,
        seq = put.record.seq,
    )
}
