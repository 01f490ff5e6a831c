//! One step: run the due tasks concurrently, record what must survive each of them at once
//! (a result that shares its step, an interrupt, a failure), then apply the results in task
//! order, plan the next step and checkpoint.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::checkpoint::{now_ms, CheckpointError, Checkpointer, PendingWrite};
use crate::context::{TaskShared, TaskSpec};
use crate::graph::GraphInner;
use crate::metric;
use crate::node::{Command, NodeError};
use crate::observe::{Recorder, TaskRecord, TASKS_KEY};
use crate::state::{State, StateUpdate};
use crate::stream::{Event, StreamMode};

use super::cursor::{
    write, Cursor, StepWrites, StoredError, StoredInterrupt, StoredResult, ERROR, INTERRUPT, RESULT,
};
use super::executor::Executor;
use super::landing::{Durability, InFlight};
use super::plan::{self, Plan};
use super::task::{run_task, TaskOutcome};
use super::{panic_message, RunError};

impl<S: State> Executor<'_, S> {
    /// Runs the step's tasks concurrently; on cancel, waits the grace period, then drops
    /// what is still running (reported as cancelled).
    ///
    /// `runnable` holds the positions of the tasks to run in the cursor's plan; the outcomes
    /// come back in the same order. `landing` is the cursor's checkpoint, when it is still
    /// being stored: the tasks run meanwhile, and are stopped (reported cancelled) if it
    /// fails, which comes back as the error; when the tasks are done before it landed, it
    /// comes back still on its way.
    pub(super) async fn run_step(
        &mut self,
        cur: &Cursor<S>,
        runnable: &[usize],
        step: i64,
        mut landing: Option<InFlight>,
    ) -> (
        Vec<(TaskOutcome<S>, Option<TaskRecord>)>,
        Result<Option<InFlight>, CheckpointError>,
    ) {
        let mut failed_landing: Option<CheckpointError> = None;
        // A checkpoint that is done already lands now: when it failed, no task starts.
        if let Some(mut flight) = landing.take() {
            match flight.poll_once().await {
                Poll::Pending => landing = Some(flight),
                Poll::Ready(stored) => {
                    if let Err(e) = flight.landed(&self.scope, stored) {
                        let outcomes = runnable
                            .iter()
                            .map(|_| (TaskOutcome::Cancelled, None))
                            .collect();
                        return (outcomes, Err(e));
                    }
                }
            }
        }
        // A result is recorded when other tasks share its step, except the last one of a step
        // whose tasks all succeed: the step's checkpoint follows and holds it.
        // (Only when the step's tasks that do not run now have results already: a task that
        // still waits for its answer holds the step back.)
        let tally = (cur.plan.tasks.len() > 1).then(|| {
            let mut running = vec![false; cur.plan.tasks.len()];
            for &i in runnable {
                running[i] = true;
            }
            let rest_done = cur.plan.tasks.iter().zip(&running).all(|(t, &runs)| {
                runs || cur.writes.get(&t.id).is_some_and(|w| w.result.is_some())
            });
            Arc::new(StepTally::new(runnable.len(), rest_done))
        });
        let checkpoint_id = cur.id().unwrap_or_default().to_string();
        // When this graph runs as a subgraph node, its tasks' LLM calls count for that node too.
        let parent = crate::observe::current();
        // A task is started when it has a place: at most `max_concurrency` run at once, the
        // rest start as places free up, in plan order.
        let start_task = |i: usize| -> Option<(TaskFuture<S>, Option<AbortHandle>)> {
            let t = &cur.plan.tasks[runnable[i]];
            let &idx = self.g.graph.index.get(&t.node)?;
            let tw = cur.writes.get(&t.id);
            let shared = Arc::new(TaskShared::new(
                self.scope.clone(),
                TaskSpec {
                    checkpoint_id: checkpoint_id.clone(),
                    node: t.node.clone(),
                    task_id: t.id.clone(),
                    step,
                    resumes: tw.map(|w| w.resumes.clone()).unwrap_or_default(),
                    recorded: tw.map(|w| w.steps.clone()).unwrap_or_default(),
                    arg: t.arg.clone(),
                },
            ));
            self.emitter().emit_with(|| Event::NodeStarted {
                node: t.node.clone(),
                task_id: t.id.clone(),
                step,
                status: Some(&self.g.graph.nodes[idx])
                    .filter(|n| !n.reports_status)
                    .and_then(|n| n.status.clone()),
            });
            let span = tracing::info_span!(
                "node",
                otel.name = tracing::field::Empty,
                node = %t.node,
                step,
                task_id = %t.id
            );
            crate::observe::name_span(&span, format_args!("node {}", t.node));
            let fut = run_and_record(
                self.g.graph.clone(),
                idx,
                shared,
                parent.clone(),
                cur.state.clone(),
                tally.clone(),
            )
            .instrument(span);
            if runnable.len() == 1 {
                return Some((async move { (i, fut.await) }.boxed(), None));
            }
            let handle = tokio::spawn(fut);
            let abort = handle.abort_handle();
            let joined = async move {
                let out = match handle.await {
                    Ok(o) => o,
                    Err(e) if e.is_panic() => {
                        (TaskOutcome::Panicked(panic_message(&*e.into_panic())), None)
                    }
                    Err(_) => (TaskOutcome::Cancelled, None),
                };
                (i, out)
            };
            Some((joined.boxed(), Some(abort)))
        };
        let places = self.max_concurrency();
        let mut futs = FuturesUnordered::new();
        let mut handles: Vec<AbortHandle> = Vec::new();
        let mut unstarted = 0..runnable.len();
        let mut fill = |futs: &mut FuturesUnordered<TaskFuture<S>>,
                        handles: &mut Vec<AbortHandle>| {
            while futs.len() < places {
                let Some(i) = unstarted.next() else { break };
                if let Some((fut, abort)) = start_task(i) {
                    futs.push(fut);
                    handles.extend(abort);
                }
            }
        };
        fill(&mut futs, &mut handles);
        let mut results: Vec<Option<(TaskOutcome<S>, Option<TaskRecord>)>> =
            runnable.iter().map(|_| None).collect();
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
                stored = async { landing.as_mut().expect("polled only while landing").put().await },
                    if landing.is_some() => {
                    let flight = landing.take().expect("a landing just polled");
                    if let Err(e) = flight.landed(&self.scope, stored) {
                        // The step ran on a checkpoint that is not stored: stopped at once,
                        // and nothing it did is kept (tasks not started are cancelled).
                        failed_landing = Some(e);
                        for h in &handles {
                            h.abort();
                        }
                        if handles.is_empty() {
                            drop(futs);
                        } else {
                            while futs.next().await.is_some() {}
                        }
                        break;
                    }
                }
                next = futs.next() => match next {
                    Some((i, out)) => {
                        results[i] = Some(out);
                        // Once cancelled, no further task starts (those left are cancelled).
                        if deadline.is_none() {
                            fill(&mut futs, &mut handles);
                        }
                        // A finished task's handle is dropped with it: keep the list to
                        // the tasks that may still run.
                        if handles.len() > 2 * places {
                            handles.retain(|h| !h.is_finished());
                        }
                    }
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
        let outcomes = results
            .into_iter()
            .map(|r| r.unwrap_or((TaskOutcome::Cancelled, None)))
            .collect();
        let landing = match failed_landing {
            Some(e) => Err(e),
            None => Ok(landing),
        };
        (outcomes, landing)
    }

    /// Applies the step's results in task order, plans the next step and checkpoints; only
    /// then reports each node finished.
    ///
    /// `done` holds what each task of the plan returned this step, by its position in the
    /// plan (`None`: its result was recorded by an earlier try of the step).
    pub(super) async fn finish_step(
        &mut self,
        cur: &mut Cursor<S>,
        done: Vec<Option<Ran<S>>>,
        step: i64,
    ) -> Result<(), RunError> {
        // The step's tasks leave the plan, which the step's checkpoint replaces (the cursor is
        // not used again if this fails).
        let tasks = std::mem::take(&mut cur.plan.tasks);
        let mut writes = StepWrites::new::<S>();
        let mut writers: Vec<Option<String>> = vec![None; S::FIELDS.len()];
        let mut finished = Vec::with_capacity(tasks.len());
        let mut updates = Vec::with_capacity(tasks.len());
        let mut records = Vec::with_capacity(tasks.len());
        // A node's update is serialized only for the `updates` stream, when someone wants it.
        let report_updates = self.emitter().wants(StreamMode::Updates);
        {
            let state = Arc::make_mut(&mut cur.state);
            for (t, done) in tasks.iter().zip(done) {
                let (cmd, cached) = match done {
                    Some(Ran {
                        cmd,
                        cached,
                        record,
                    }) => {
                        records.extend(record);
                        (cmd, cached)
                    }
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
                        records.extend(stored.ran);
                        let cmd = Command {
                            update: stored.update,
                            goto: stored.goto,
                            sends: stored.sends,
                            parent: None,
                        };
                        (cmd, false)
                    }
                };
                let update_json = match &cmd.update {
                    Some(u) if report_updates => serde_json::to_value(u).unwrap_or(Value::Null),
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
                finished.push(plan::Finished {
                    node: t.node.clone(),
                    goto: cmd.goto,
                    sends: cmd.sends,
                });
                updates.push((update_json, cached));
            }
        }
        let mut barriers = cur.plan.barriers.clone();
        let targets = plan::successors(&self.g.graph, &*cur.state, &finished, &mut barriers)?;
        plan::check_task_count(
            &plan::planners(&finished),
            targets.task_count(),
            self.max_tasks_per_step(),
        )?;
        let (next_tasks, deferred) = plan::schedule(
            &self.g.graph,
            cur.plan.deferred.clone(),
            plan::tasks_for(&self.g.graph, &targets),
        );
        let next = Plan {
            paused: self.breakpoint(&tasks, &next_tasks),
            tasks: next_tasks,
            deferred,
            barriers,
            counters: BTreeMap::new(),
        };
        let mut meta = self.metadata_after("loop", step, cur);
        if !records.is_empty() {
            meta.insert(
                TASKS_KEY.into(),
                serde_json::to_value(records).unwrap_or(Value::Null),
            );
        }
        let finished: Vec<Event> = tasks
            .iter()
            .zip(updates)
            .filter(|_| report_updates)
            .map(|(t, (update, cached))| Event::NodeFinished {
                node: t.node.clone(),
                task_id: t.id.clone(),
                step,
                update,
                status: self.g.node_status(&t.node).map(str::to_string),
                cached,
            })
            .collect();
        match self.cfg.durability {
            Durability::Sync => {
                self.save(cur, &writes, next, meta).await?;
                for event in finished {
                    self.emitter().emit_with(|| event);
                }
                self.emit_checkpoint(cur);
            }
            Durability::Async => self.launch(cur, &writes, next, meta, finished).await?,
        }
        Ok(())
    }
}

/// A running task of a step: its position among the step's runnable tasks, and its outcome.
type TaskFuture<S> =
    futures_util::future::BoxFuture<'static, (usize, (TaskOutcome<S>, Option<TaskRecord>))>;

/// What a task that finished this step returned: its command, whether it came from the
/// node's cache, and its record.
pub(super) struct Ran<S: State> {
    pub(super) cmd: Command<S>,
    pub(super) cached: bool,
    pub(super) record: Option<TaskRecord>,
}

/// How a step of several tasks is going: how many of its tasks have not finished, and
/// whether all that finished succeeded.
///
/// A task's result is stored as it finishes so that a crash before the step's checkpoint
/// does not run it again. The task that finishes last, when every other one succeeded,
/// stores nothing: the checkpoint written next holds its result (and the step's task
/// records), as it holds the result of a step's only task; a crash in between runs it
/// again, as it would run a step's only task. A step that stops short (an interrupt, a
/// failure, a cancelled task) has every result that finished stored.
struct StepTally {
    left: AtomicUsize,
    clean: AtomicBool,
}

impl StepTally {
    /// A tally of `tasks` running tasks; `clean`: whether the step's other tasks (if any)
    /// have their results already.
    fn new(tasks: usize, clean: bool) -> Self {
        StepTally {
            left: AtomicUsize::new(tasks),
            clean: AtomicBool::new(clean),
        }
    }

    /// Counts a task finished (`succeeded`: with a result to apply); whether it is the last
    /// of a step whose every task succeeded.
    fn finish(&self, succeeded: bool) -> bool {
        if !succeeded {
            // Before the count: a task that then finishes last sees it.
            self.clean.store(false, Ordering::SeqCst);
        }
        let last = self.left.fetch_sub(1, Ordering::SeqCst) == 1;
        succeeded && last && self.clean.load(Ordering::SeqCst)
    }
}

/// Runs a task and records what must survive it at once: its result (when other tasks
/// share its step and it is not the last of them to succeed: see [`StepTally`]), its
/// interrupt, its failure.
async fn run_and_record<S: State>(
    graph: Arc<GraphInner<S>>,
    idx: usize,
    shared: Arc<TaskShared>,
    parent: Option<Arc<Recorder>>,
    state: Arc<S>,
    tally: Option<Arc<StepTally>>,
) -> (TaskOutcome<S>, Option<TaskRecord>) {
    let run = shared.run.clone();
    let checkpoint_id = shared.checkpoint_id.clone();
    let task_id = shared.task_id.clone();
    let node = shared.node.clone();
    let cache = graph.nodes[idx].cache.clone().and_then(|p| {
        let key = p.key_of(&state, shared.arg.as_ref())?;
        Some((p, key))
    });
    let hit = match &cache {
        Some((_, key)) => cached::<S>(&*run.checkpointer, &node, key).await,
        None => None,
    };
    let recorder = Recorder::start(&node, !shared.resumes.is_empty(), parent);
    let outcome = match hit {
        Some(cmd) => TaskOutcome::Cached(cmd),
        None => {
            let started = std::time::Instant::now();
            let outcome = recorder
                .scope(
                    AssertUnwindSafe(run_task(graph.clone(), idx, shared.clone(), state))
                        .catch_unwind(),
                )
                .await
                .unwrap_or_else(|panic| TaskOutcome::Panicked(panic_message(&*panic)));
            metric::histogram(
                &graph.nodes[idx].seconds_key,
                started.elapsed().as_secs_f64(),
            );
            outcome
        }
    };
    let record = recorder.finish(matches!(outcome, TaskOutcome::Cached(_)));
    if let (Some((policy, key)), TaskOutcome::Done(cmd)) = (&cache, &outcome) {
        store_cached(
            &*run.checkpointer,
            &node,
            key,
            policy.expires_at(now_ms()),
            cmd,
        )
        .await;
    }
    let succeeded = matches!(outcome, TaskOutcome::Done(_) | TaskOutcome::Cached(_));
    let record_results = tally.is_some_and(|t| !t.finish(succeeded));
    let write_result: Result<Option<PendingWrite>, RunError> = match &outcome {
        TaskOutcome::Done(cmd) | TaskOutcome::Cached(cmd) if record_results => write(
            &task_id,
            RESULT,
            0,
            &StoredResult {
                update: cmd.update.clone(),
                goto: cmd.goto.clone(),
                sends: cmd.sends.clone(),
                ran: Some(record.clone()),
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
                response_schema: r.response_schema.clone(),
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
        TaskOutcome::Panicked(message) => write(
            &task_id,
            ERROR,
            0,
            &StoredError {
                node: node.clone(),
                message: format!("node panicked: {message}"),
            },
        )
        .map(Some),
        _ => Ok(None),
    };
    let stored = match write_result {
        Ok(Some(w)) => {
            // An interrupt is stored with the task's memo steps, so that the node re-entered
            // with the answer gets back what it saw when it asked.
            let mut writes = match &outcome {
                TaskOutcome::Interrupted(_) => shared.take_deferred(),
                _ => Vec::new(),
            };
            writes.push(w);
            let span = tracing::info_span!("checkpoint.put_writes", writes = writes.len() as i64);
            run.put_writes(&checkpoint_id, writes)
                .instrument(span)
                .await
                .map_err(RunError::from)
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e),
    };
    let outcome = match stored {
        Ok(()) => outcome,
        // What the task did could not be recorded: the run stops on the storage error (a
        // failure that could not be recorded is not a failure of the turn yet).
        Err(RunError::Checkpoint(e)) => TaskOutcome::Storage(e),
        Err(e) => match outcome {
            failed @ (TaskOutcome::Failed(_) | TaskOutcome::Panicked(_)) => failed,
            _ => TaskOutcome::Failed(NodeError::fatal(format!(
                "could not encode the task's result: {e}"
            ))),
        },
    };
    (outcome, Some(record))
}

/// The cached result of `node` under `key`, if the cache holds one that decodes.
async fn cached<S: State>(cp: &dyn Checkpointer, node: &str, key: &str) -> Option<Command<S>> {
    let raw = match cp.cache_get(node, key, now_ms()).await {
        Ok(raw) => raw?,
        Err(e) => {
            tracing::warn!(node, error = %e, "node cache unreadable; running the node");
            return None;
        }
    };
    match serde_json::from_str::<StoredResult<S::Update>>(raw.get()) {
        Ok(stored) => Some(Command {
            update: stored.update,
            goto: stored.goto,
            sends: stored.sends,
            parent: None,
        }),
        Err(e) => {
            tracing::warn!(node, error = %e, "cached result does not fit the state; running the node");
            None
        }
    }
}

/// Stores a task's result in its node's cache (best effort: a failure is only logged).
async fn store_cached<S: State>(
    cp: &dyn Checkpointer,
    node: &str,
    key: &str,
    expires_at_ms: Option<i64>,
    cmd: &Command<S>,
) {
    let stored = StoredResult {
        update: cmd.update.clone(),
        goto: cmd.goto.clone(),
        sends: cmd.sends.clone(),
        ran: None,
    };
    let value = serde_json::value::to_raw_value(&stored).map_err(|e| e.to_string());
    let result = match value {
        Ok(v) => cp
            .cache_put(node, key, v, expires_at_ms, now_ms())
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!(node, error = %e, "could not store the node's result in its cache");
    }
}
