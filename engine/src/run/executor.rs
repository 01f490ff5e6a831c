//! The run loop: load the thread, apply the input, then step until END, an interrupt, a
//! failure or a cancel, writing a checkpoint after every step.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::cancel::CancelReason;
use crate::checkpoint::{CheckpointError, Checkpointer, PendingWrite};
use crate::context::TaskShared;
use crate::graph::CompiledGraph;
use crate::interrupt::Resume;
use crate::node::{Command, NodeError};
use crate::state::{Lifetime, State, StateUpdate};
use crate::stream::{Emitter, Event, EventSink, StreamMode};

use super::cache::{CleanHead, Entry};
use super::cursor::{
    write, Cursor, NextCheckpoint, StepWrites, StoredError, StoredInterrupt, StoredResult, ERROR,
    INTERRUPT, RESULT, RESUME,
};
use super::plan::{self, Plan, TaskPlan};
use super::task::{run_task, TaskOutcome};
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
    let emitter = Arc::new(Emitter::new(sink, cfg.stream_modes));
    emitter.emit_with(|| Event::RunStarted {
        run_id: cfg.run_id.clone(),
        thread_id: cfg.thread_id.clone(),
        input: input.kind().to_string(),
    });
    let mut ex = Executor {
        limit: cfg.recursion_limit.unwrap_or(g.recursion_limit),
        g,
        cfg,
        emitter: emitter.clone(),
        head: None,
        failed_node: None,
        clean_head: None,
    };
    let result = ex.execute(input).instrument(span).await;
    if let Ok(o) = &result {
        if let Some(id) = &o.checkpoint_id {
            g.cache
                .put(&o.thread_id, id, o.state.clone(), ex.clean_head.take());
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
                _ => ex.failed_node.clone(),
            },
            error: e.to_string(),
        }),
    }
    result
}

struct Executor<'a, S: State> {
    g: &'a CompiledGraph<S>,
    cfg: RunConfig,
    emitter: Arc<Emitter>,
    limit: usize,
    /// The thread's head as this run last saw it (id, seq).
    head: Option<(String, i64)>,
    failed_node: Option<String>,
    /// The last checkpoint, when the run completed (for the state cache).
    clean_head: Option<CleanHead>,
}

impl<S: State> Executor<'_, S> {
    fn cp(&self) -> &Arc<dyn Checkpointer> {
        &self.g.checkpointer
    }

    fn thread(&self) -> &str {
        &self.cfg.thread_id
    }

    async fn load(&self, id: Option<&str>) -> Result<Option<Cursor<S>>, RunError> {
        match self.cp().get(self.thread(), id).await? {
            Some(l) => Ok(Some(Cursor::load(l)?)),
            None => Ok(None),
        }
    }

    /// The thread's latest checkpoint, taking its state from the cache when it is current.
    async fn load_head(&self) -> Result<Option<Cursor<S>>, RunError> {
        let cached = self.g.cache.take(self.thread());
        load_head(self.g, self.thread(), cached).await
    }

    /// Loads the head and applies a new turn's input to it, saving the input checkpoint.
    ///
    /// Storage is not read first when the cache holds the thread's clean head, nor when it
    /// holds nothing for the thread (then the bet is that the thread is new, as it is on a
    /// conversation's first turn): the input checkpoint is saved with that head as the
    /// expected one, and a conflict means the bet was wrong, so the turn starts again from
    /// the head read from storage. Nothing ran and nothing was saved in between. When that
    /// head belongs to a run still under way that saved it after this turn began, the
    /// conflict stands: the two raced, and a turn that had read first would have lost too.
    async fn start_turn_at_head(&mut self, update: S::Update) -> Result<Cursor<S>, RunError> {
        let started_ms = crate::checkpoint::now_ms();
        let mut guess = match self.g.cache.take(self.thread()) {
            None => Cursor::empty(),
            Some(Entry {
                state,
                clean: Some(head),
                ..
            }) => Cursor {
                record: Some(head.record),
                state,
                plan: head.plan,
                writes: HashMap::new(),
            },
            Some(entry) => {
                let cur = load_head(self.g, self.thread(), Some(entry))
                    .await?
                    .unwrap_or_else(Cursor::empty);
                return self.start_turn_on(cur, update).await;
            }
        };
        self.head = guess
            .record
            .as_ref()
            .map(|r| (r.checkpoint_id.clone(), r.seq));
        match self.start_turn(&mut guess, update.clone()).await {
            Ok(()) => Ok(guess),
            Err(RunError::Checkpoint(e @ CheckpointError::Conflict { .. })) => {
                tracing::debug!(thread_id = %self.thread(), "head moved since it was cached; reading it");
                let cur = load_head(self.g, self.thread(), None)
                    .await?
                    .unwrap_or_else(Cursor::empty);
                if !cur.at_rest() && cur.created_at_ms() >= started_ms {
                    // A run is under way on this thread: it won the race, as it would have
                    // against a turn that read the head before saving.
                    return Err(RunError::Checkpoint(e));
                }
                self.start_turn_on(cur, update).await
            }
            Err(e) => Err(e),
        }
    }

    /// Starts the turn on a head read from storage.
    async fn start_turn_on(
        &mut self,
        mut cur: Cursor<S>,
        update: S::Update,
    ) -> Result<Cursor<S>, RunError> {
        self.head = cur
            .record
            .as_ref()
            .map(|r| (r.checkpoint_id.clone(), r.seq));
        self.start_turn(&mut cur, update).await?;
        Ok(cur)
    }

    fn metadata(
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

    /// Saves the next checkpoint after `cur` and moves the cursor to it.
    async fn save(
        &mut self,
        cur: &mut Cursor<S>,
        writes: &StepWrites,
        plan: Plan,
        metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        let (put, plan) = NextCheckpoint {
            thread_id: &self.cfg.thread_id,
            parent: cur.record.as_ref(),
            parent_plan: &cur.plan,
            expected_head: self.head.clone(),
            plan,
            metadata,
            fence: self.cfg.fence.clone(),
        }
        .build(&*cur.state, writes)?;
        let record = put.record.clone();
        self.cp().put(put).await?;
        self.head = Some((record.checkpoint_id.clone(), record.seq));
        cur.plan = plan;
        cur.record = Some(record);
        cur.writes = HashMap::new();
        Ok(())
    }

    fn emit_checkpoint(&self, cur: &Cursor<S>) {
        let step = cur.step();
        if self.emitter.modes.contains(StreamMode::Values) {
            self.emitter.emit_with(|| Event::Values {
                step,
                values: serde_json::to_value(&*cur.state).unwrap_or(Value::Null),
            });
        }
        self.emitter.emit_with(|| Event::Checkpoint {
            checkpoint_id: cur.id().unwrap_or_default().to_string(),
            step,
            next: cur.plan.next_nodes(),
        });
    }

    async fn execute(&mut self, input: RunInput<S>) -> Result<RunOutcome<S>, RunError> {
        let input = match input {
            RunInput::Turn(update) if self.cfg.checkpoint_id.is_none() => {
                let cur = self.start_turn_at_head(update).await?;
                return self.steps(cur).await;
            }
            other => other,
        };
        let mut cur = match self.cfg.checkpoint_id.clone() {
            Some(id) => {
                self.head = self
                    .cp()
                    .get_without_values(self.thread(), None)
                    .await?
                    .map(|l| (l.record.checkpoint_id, l.record.seq));
                self.load(Some(&id))
                    .await?
                    .ok_or_else(|| RunError::UnknownCheckpoint {
                        thread_id: self.cfg.thread_id.clone(),
                        checkpoint_id: id.clone(),
                    })?
            }
            None => {
                let c = self.load_head().await?.unwrap_or_else(Cursor::empty);
                self.head = c.record.as_ref().map(|r| (r.checkpoint_id.clone(), r.seq));
                c
            }
        };

        match input {
            RunInput::Turn(update) => self.start_turn(&mut cur, update).await?,
            RunInput::Resume(resume) => self.resume(&mut cur, resume).await?,
            RunInput::Continue => self.fork_if_old(&mut cur).await?,
            RunInput::Command(cmd) => self.command(&mut cur, cmd).await?,
        }
        self.steps(cur).await
    }

    async fn start_turn(
        &mut self,
        cur: &mut Cursor<S>,
        mut update: S::Update,
    ) -> Result<(), RunError> {
        if self.cfg.checkpoint_id.is_none() && cur.failed() {
            // The last turn failed: start from the checkpoint before it, so its partial
            // items are not carried forward.
            let base = cur
                .metadata()
                .and_then(|m| m.get("turn_base"))
                .and_then(Value::as_str)
                .map(str::to_string);
            *cur = match base {
                Some(b) => self.load(Some(&b)).await?.unwrap_or_else(Cursor::empty),
                None => Cursor::empty(),
            };
        }
        let abandoned: Vec<Value> = cur
            .pending_interrupts()
            .into_iter()
            .map(|i| Value::String(i.id))
            .collect();
        let defaults = self.g.graph.default_json();
        let mut writes = StepWrites::new::<S>();
        let state = Arc::make_mut(&mut cur.state);
        for (idx, f) in S::FIELDS.iter().enumerate() {
            if f.lifetime == Lifetime::Transient {
                let current = state
                    .field_json(idx)
                    .map_err(crate::state::StateError::Decode)?;
                if current != defaults[idx] {
                    state.reset_field(idx);
                    writes.reset(idx);
                }
            }
        }
        update.normalize();
        writes.record::<S>(&update)?;
        state.apply(update)?;
        let targets = plan::entry(&self.g.graph, state)?;
        let tasks = plan::tasks_for(&self.g.graph, &targets);
        let mut meta = self.metadata("input", -1, cur.turn() + 1, cur.id());
        if !abandoned.is_empty() {
            meta.insert("abandoned_interrupts".into(), Value::Array(abandoned));
        }
        let plan = Plan {
            tasks,
            barriers: BTreeMap::new(),
            counters: BTreeMap::new(),
        };
        self.save(cur, &writes, plan, meta).await?;
        self.emit_checkpoint(cur);
        Ok(())
    }

    async fn resume(&mut self, cur: &mut Cursor<S>, resume: Resume) -> Result<(), RunError> {
        if let Some(id) = &self.cfg.checkpoint_id {
            if self.head.as_ref().map(|h| h.0.as_str()) != Some(id.as_str()) {
                return Err(RunError::ResumeNotAtHead {
                    thread_id: self.cfg.thread_id.clone(),
                    checkpoint_id: id.clone(),
                });
            }
        }
        let pending = cur.pending_interrupts();
        if pending.is_empty() {
            return Err(RunError::NothingToResume {
                thread_id: self.cfg.thread_id.clone(),
            });
        }
        let answers: Vec<(usize, Value)> = match resume {
            Resume::Value(v) => {
                if pending.len() > 1 {
                    return Err(RunError::AmbiguousResume {
                        pending: pending.iter().map(|p| p.id.clone()).collect(),
                    });
                }
                vec![(0, v)]
            }
            Resume::ById(map) => {
                let mut out = Vec::new();
                for (id, v) in map {
                    let pos = pending
                        .iter()
                        .position(|p| p.id == id)
                        .ok_or(RunError::UnknownInterrupt { id })?;
                    out.push((pos, v));
                }
                out
            }
        };
        let mut writes = Vec::new();
        for (pos, v) in &answers {
            let p = &pending[*pos];
            writes.push(write(&p.task_id, RESUME, p.index, v)?);
        }
        let cid = cur.id().unwrap_or_default().to_string();
        self.cp()
            .put_writes(self.thread(), &cid, writes, self.cfg.fence.as_ref())
            .await?;
        for (pos, v) in answers {
            let p = &pending[pos];
            cur.writes
                .entry(p.task_id.clone())
                .or_default()
                .resumes
                .insert(p.index, v);
        }
        Ok(())
    }

    /// Running from an old checkpoint re-executes its tasks on a new branch: a `fork`
    /// checkpoint copies it (with new task ids, so nothing recorded is reused).
    async fn fork_if_old(&mut self, cur: &mut Cursor<S>) -> Result<(), RunError> {
        let Some(id) = self.cfg.checkpoint_id.clone() else {
            return Ok(());
        };
        if self.head.as_ref().map(|h| h.0.as_str()) == Some(id.as_str()) {
            return Ok(());
        }
        let mut plan = cur.plan.clone();
        for t in &mut plan.tasks {
            t.id = uuid::Uuid::new_v4().to_string();
        }
        let base = cur
            .metadata()
            .and_then(|m| m.get("turn_base"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let meta = self.metadata("fork", cur.step(), cur.turn(), base.as_deref());
        self.save(cur, &StepWrites::new::<S>(), plan, meta).await?;
        Ok(())
    }

    async fn command(&mut self, cur: &mut Cursor<S>, cmd: Command<S>) -> Result<(), RunError> {
        self.fork_if_old(cur).await?;
        if cmd.update.is_none() && cmd.goto.is_empty() {
            return Ok(());
        }
        let mut writes = StepWrites::new::<S>();
        let state = Arc::make_mut(&mut cur.state);
        if let Some(mut update) = cmd.update {
            update.normalize();
            writes.record::<S>(&update)?;
            state.apply(update)?;
        }
        let mut plan = cur.plan.clone();
        if !cmd.goto.is_empty() {
            let mut targets = std::collections::BTreeSet::new();
            for name in &cmd.goto {
                targets.insert(
                    self.g
                        .graph
                        .target(name)
                        .ok_or_else(|| RunError::UnknownNode(name.clone()))?,
                );
            }
            plan.tasks = plan::tasks_for(&self.g.graph, &targets);
        } else {
            for t in &mut plan.tasks {
                t.id = uuid::Uuid::new_v4().to_string();
            }
        }
        let base = cur
            .metadata()
            .and_then(|m| m.get("turn_base"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let meta = self.metadata("update", cur.step(), cur.turn(), base.as_deref());
        self.save(cur, &writes, plan, meta).await?;
        self.emit_checkpoint(cur);
        Ok(())
    }

    fn outcome(&mut self, cur: &Cursor<S>, status: RunStatus) -> RunOutcome<S> {
        self.clean_head = match (&status, &cur.record) {
            (RunStatus::Completed, Some(record)) if cur.writes.is_empty() => Some(CleanHead {
                record: record.clone(),
                plan: cur.plan.clone(),
            }),
            _ => None,
        };
        RunOutcome {
            run_id: self.cfg.run_id.clone(),
            thread_id: self.cfg.thread_id.clone(),
            status,
            state: cur.state.clone(),
            checkpoint_id: cur.id().map(str::to_string),
        }
    }

    fn cancel_reason(&self) -> CancelReason {
        self.cfg
            .cancel
            .reason()
            .unwrap_or(CancelReason::UserCancelled)
    }

    async fn steps(&mut self, mut cur: Cursor<S>) -> Result<RunOutcome<S>, RunError> {
        let mut steps_run = 0usize;
        loop {
            if cur.plan.tasks.is_empty() {
                return Ok(self.outcome(&cur, RunStatus::Completed));
            }
            let runnable: Vec<TaskPlan> = cur
                .plan
                .tasks
                .iter()
                .filter(|t| {
                    cur.writes
                        .get(&t.id)
                        .is_none_or(|w| w.result.is_none() && w.unanswered().next().is_none())
                })
                .cloned()
                .collect();
            let waiting = cur.pending_interrupts();
            if runnable.is_empty() && !waiting.is_empty() {
                return Ok(self.outcome(&cur, RunStatus::Interrupted(waiting)));
            }
            if self.cfg.cancel.is_cancelled() {
                return Ok(self.outcome(&cur, RunStatus::Cancelled(self.cancel_reason())));
            }
            if !runnable.is_empty() {
                if steps_run >= self.limit {
                    return Err(RunError::RecursionLimit { limit: self.limit });
                }
                steps_run += 1;
            }
            let step = cur.step() + 1;
            let mut done: HashMap<String, Command<S>> = HashMap::new();
            let mut failure: Option<(String, NodeError)> = None;
            let mut unavailable: Option<(String, NodeError)> = None;
            let mut storage: Option<CheckpointError> = None;
            let mut stopped = false;
            for (task, outcome) in self.run_step(&cur, &runnable, step).await {
                match outcome {
                    TaskOutcome::Done(cmd) => {
                        done.insert(task.id.clone(), cmd);
                    }
                    TaskOutcome::Interrupted(r) => {
                        let tw = cur.writes.entry(task.id.clone()).or_default();
                        tw.interrupts.insert(
                            r.index,
                            super::cursor::StoredInterruptOwned {
                                id: r.id,
                                value: r.value,
                            },
                        );
                    }
                    TaskOutcome::Failed(e) => {
                        if failure.is_none() {
                            failure = Some((task.node.clone(), e));
                        }
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
            if let Some((node, error)) = failure {
                return Err(RunError::Node { node, error });
            }
            if let Some((node, error)) = unavailable {
                return Err(RunError::Unavailable { node, error });
            }
            let waiting = cur.pending_interrupts();
            if !waiting.is_empty() {
                return Ok(self.outcome(&cur, RunStatus::Interrupted(waiting)));
            }
            if stopped {
                return Ok(self.outcome(&cur, RunStatus::Cancelled(self.cancel_reason())));
            }
            self.finish_step(&mut cur, done, step).await?;
            if self.cfg.cancel.is_cancelled() {
                return Ok(self.outcome(&cur, RunStatus::Cancelled(self.cancel_reason())));
            }
        }
    }

    /// Applies the step's results in task order, plans the next step and checkpoints.
    async fn finish_step(
        &mut self,
        cur: &mut Cursor<S>,
        mut done: HashMap<String, Command<S>>,
        step: i64,
    ) -> Result<(), RunError> {
        let tasks = cur.plan.tasks.clone();
        let mut writes = StepWrites::new::<S>();
        let mut writers: Vec<Option<String>> = vec![None; S::FIELDS.len()];
        let mut finished = Vec::with_capacity(tasks.len());
        let mut updates = Vec::with_capacity(tasks.len());
        {
            let state = Arc::make_mut(&mut cur.state);
            for t in &tasks {
                let cmd = match done.remove(&t.id) {
                    Some(c) => c,
                    None => {
                        let raw = cur
                            .writes
                            .get(&t.id)
                            .and_then(|w| w.result.as_ref())
                            .ok_or_else(|| RunError::Node {
                                node: t.node.clone(),
                                error: NodeError::fatal("task has no result"),
                            })?;
                        let stored: StoredResult<S::Update> = serde_json::from_str(raw.get())
                            .map_err(crate::state::StateError::Decode)?;
                        Command {
                            update: stored.update,
                            goto: stored.goto,
                        }
                    }
                };
                let update_json = match &cmd.update {
                    Some(u) if self.emitter.is_active() => {
                        serde_json::to_value(u).unwrap_or(Value::Null)
                    }
                    _ => Value::Null,
                };
                if let Some(mut u) = cmd.update {
                    u.normalize();
                    let w = writes.record::<S>(&u)?;
                    for idx in w.iter() {
                        if let Some(prev) = &writers[idx] {
                            if !S::FIELDS[idx].accumulates {
                                return Err(RunError::ConflictingWrites {
                                    field: S::FIELDS[idx].name.to_string(),
                                    nodes: vec![prev.clone(), t.node.clone()],
                                });
                            }
                        }
                        writers[idx] = Some(t.node.clone());
                    }
                    state.apply(u)?;
                }
                finished.push((t.node.clone(), cmd.goto));
                updates.push(update_json);
            }
        }
        let mut barriers = cur.plan.barriers.clone();
        let targets = plan::successors(&self.g.graph, &*cur.state, &finished, &mut barriers)?;
        let next = Plan {
            tasks: plan::tasks_for(&self.g.graph, &targets),
            barriers,
            counters: BTreeMap::new(),
        };
        let base = cur
            .metadata()
            .and_then(|m| m.get("turn_base"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let meta = self.metadata("loop", step, cur.turn(), base.as_deref());
        self.save(cur, &writes, next, meta).await?;
        for (t, update) in tasks.iter().zip(updates) {
            self.emitter.emit_with(|| Event::NodeFinished {
                node: t.node.clone(),
                task_id: t.id.clone(),
                step,
                update,
                status: self.g.node_status(&t.node).map(str::to_string),
            });
        }
        self.emit_checkpoint(cur);
        Ok(())
    }

    /// Runs the step's tasks concurrently; on cancel, waits the grace period, then drops
    /// what is still running (reported as cancelled).
    async fn run_step(
        &mut self,
        cur: &Cursor<S>,
        runnable: &[TaskPlan],
        step: i64,
    ) -> Vec<(TaskPlan, TaskOutcome<S>)> {
        let record_results = cur.plan.tasks.len() > 1;
        let checkpoint_id = cur.id().unwrap_or_default().to_string();
        let mut futs = FuturesUnordered::new();
        let mut handles = Vec::new();
        for (i, t) in runnable.iter().enumerate() {
            let Some(&idx) = self.g.graph.index.get(&t.node) else {
                continue;
            };
            let tw = cur.writes.get(&t.id);
            let shared = Arc::new(TaskShared::new(
                self.cfg.thread_id.clone(),
                self.cfg.run_id.clone(),
                checkpoint_id.clone(),
                t.node.clone(),
                t.id.clone(),
                step,
                self.g.checkpointer.clone(),
                self.emitter.clone(),
                self.cfg.cancel.clone(),
                tw.map(|w| w.resumes.clone()).unwrap_or_default(),
                tw.map(|w| w.steps.clone()).unwrap_or_default(),
                self.cfg.context.clone(),
                self.cfg.fence.clone(),
            ));
            self.emitter.emit_with(|| Event::NodeStarted {
                node: t.node.clone(),
                task_id: t.id.clone(),
                step,
                status: self.g.graph.nodes[idx].status.clone(),
            });
            let span = tracing::info_span!("node", node = %t.node, step, task_id = %t.id);
            let fut = run_and_record(
                self.g.graph.clone(),
                idx,
                shared,
                cur.state.clone(),
                self.g.checkpointer.clone(),
                record_results,
            )
            .instrument(span);
            if runnable.len() == 1 {
                futs.push(async move { (i, fut.await) }.boxed());
            } else {
                let handle = tokio::spawn(fut);
                handles.push(handle.abort_handle());
                futs.push(
                    async move {
                        let out = match handle.await {
                            Ok(o) => o,
                            Err(e) if e.is_cancelled() => TaskOutcome::Cancelled,
                            Err(e) => TaskOutcome::Failed(NodeError::fatal(format!(
                                "node task failed: {e}"
                            ))),
                        };
                        (i, out)
                    }
                    .boxed(),
                );
            }
        }
        let mut results: Vec<Option<TaskOutcome<S>>> = runnable.iter().map(|_| None).collect();
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                next = futs.next() => match next {
                    Some((i, out)) => results[i] = Some(out),
                    None => break,
                },
                _ = self.cfg.cancel.cancelled(), if deadline.is_none() => {
                    deadline = Some(tokio::time::Instant::now() + self.g.cancel_grace);
                }
                _ = sleep => {
                    drop(futs);
                    for h in &handles {
                        h.abort();
                    }
                    break;
                }
            }
        }
        runnable
            .iter()
            .cloned()
            .zip(results)
            .map(|(t, r)| (t, r.unwrap_or(TaskOutcome::Cancelled)))
            .collect()
    }
}

/// Runs a task and records what must survive it at once: its result (when other tasks
/// share its step), its interrupt, its failure.
async fn run_and_record<S: State>(
    graph: Arc<crate::graph::GraphInner<S>>,
    idx: usize,
    shared: Arc<TaskShared>,
    state: Arc<S>,
    cp: Arc<dyn Checkpointer>,
    record_results: bool,
) -> TaskOutcome<S> {
    let thread_id = shared.thread_id.clone();
    let checkpoint_id = shared.checkpoint_id.clone();
    let task_id = shared.task_id.clone();
    let node = shared.node.clone();
    let fence = shared.fence.clone();
    let outcome = AssertUnwindSafe(run_task(graph, idx, shared, state))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| TaskOutcome::Failed(NodeError::fatal("node panicked")));
    let write_result: Result<Option<PendingWrite>, RunError> = match &outcome {
        TaskOutcome::Done(cmd) if record_results => write(
            &task_id,
            RESULT,
            0,
            &StoredResult {
                update: cmd.update.clone(),
                goto: cmd.goto.clone(),
            },
        )
        .map(Some),
        TaskOutcome::Interrupted(r) => write(
            &task_id,
            INTERRUPT,
            r.index,
            &StoredInterrupt {
                id: r.id.clone(),
                value: r.value.clone(),
            },
        )
        .map(Some),
        TaskOutcome::Failed(e) => write(
            &task_id,
            ERROR,
            0,
            &StoredError {
                node: node.clone(),
                message: e.to_string(),
            },
        )
        .map(Some),
        _ => Ok(None),
    };
    let stored = match write_result {
        Ok(Some(w)) => cp
            .put_writes(&thread_id, &checkpoint_id, vec![w], fence.as_ref())
            .await
            .map_err(RunError::from),
        Ok(None) => Ok(()),
        Err(e) => Err(e),
    };
    match stored {
        Ok(()) => outcome,
        // What the task did could not be recorded: the run stops on the storage error (a
        // failure that could not be recorded is not a failure of the turn yet).
        Err(RunError::Checkpoint(e)) => TaskOutcome::Storage(e),
        Err(e) => match outcome {
            TaskOutcome::Failed(orig) => TaskOutcome::Failed(orig),
            _ => TaskOutcome::Failed(NodeError::fatal(format!(
                "could not encode the task's result: {e}"
            ))),
        },
    }
}

/// `update_state`: a new checkpoint with `update` applied as if `as_node` had written it
/// (next: that node's successors), or keeping the pending tasks when `as_node` is `None`.
pub(crate) async fn update_state<S: State>(
    g: &CompiledGraph<S>,
    thread_id: &str,
    checkpoint_id: Option<&str>,
    update: Option<S::Update>,
    as_node: Option<&str>,
) -> Result<String, RunError> {
    let mut cfg = RunConfig::new(thread_id);
    cfg.checkpoint_id = checkpoint_id.map(str::to_string);
    let mut ex = Executor {
        limit: g.recursion_limit,
        g,
        cfg,
        emitter: Arc::new(Emitter::new(
            Arc::new(crate::stream::NullSink),
            crate::stream::StreamModes::NONE,
        )),
        head: None,
        failed_node: None,
        clean_head: None,
    };
    let head = ex.load_head().await?;
    ex.head = head
        .as_ref()
        .and_then(|c| c.record.as_ref().map(|r| (r.checkpoint_id.clone(), r.seq)));
    let mut cur = match checkpoint_id {
        Some(id) => ex
            .load(Some(id))
            .await?
            .ok_or_else(|| RunError::UnknownCheckpoint {
                thread_id: thread_id.to_string(),
                checkpoint_id: id.to_string(),
            })?,
        None => head.unwrap_or_else(Cursor::empty),
    };
    let node_idx = match as_node {
        Some(n) => Some(
            *g.graph
                .index
                .get(n)
                .ok_or_else(|| RunError::UnknownNode(n.to_string()))?,
        ),
        None => None,
    };
    let mut writes = StepWrites::new::<S>();
    {
        let state = Arc::make_mut(&mut cur.state);
        if let Some(mut u) = update {
            u.normalize();
            writes.record::<S>(&u)?;
            state.apply(u)?;
        }
    }
    let mut plan = cur.plan.clone();
    match node_idx {
        Some(i) => {
            let mut barriers = plan.barriers.clone();
            let targets = plan::successors(
                &g.graph,
                &*cur.state,
                &[(g.graph.nodes[i].name.clone(), Vec::new())],
                &mut barriers,
            )?;
            plan.tasks = plan::tasks_for(&g.graph, &targets);
            plan.barriers = barriers;
        }
        None => {
            for t in &mut plan.tasks {
                t.id = uuid::Uuid::new_v4().to_string();
            }
        }
    }
    let base = cur
        .metadata()
        .and_then(|m| m.get("turn_base"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut meta = ex.metadata("update", cur.step() + 1, cur.turn(), base.as_deref());
    meta.remove("run_id");
    if let Some(n) = as_node {
        meta.insert("as_node".into(), n.into());
    }
    ex.save(&mut cur, &writes, plan, meta).await?;
    Ok(cur.id().unwrap_or_default().to_string())
}

/// Loads a thread's head, reusing the cached state (`cached`, taken from the cache) when its
/// checkpoint is still the head.
pub(crate) async fn load_head<S: State>(
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
