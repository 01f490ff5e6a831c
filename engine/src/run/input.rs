//! Input handling: turning a [`RunInput`] into the cursor the first step runs from. A new
//! turn resets the transient fields and writes an `input` checkpoint; a resume records its
//! answers against the checkpoint the graph waits at; a run from an old checkpoint forks it;
//! a command applies its update and `goto`. The refusals are [`super::admission`]'s rules,
//! which [`crate::CompiledGraph::check_input`] applies without running.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use crate::checkpoint::{CheckpointError, Flush, PendingWrite};
use crate::interrupt::Resume;
use crate::node::Command;
use crate::state::{Lifetime, State, StateUpdate};

use super::admission;
use super::cache::Entry;
use super::cursor::{write, Cursor, StepWrites, RESUME};
use super::executor::{load_head, Executor};
use super::plan::{self, Plan};
use super::{RunError, RunInput};

impl<S: State> Executor<'_, S> {
    /// Applies `input` and returns the cursor the first step runs from.
    pub(super) async fn first_cursor(&mut self, input: RunInput<S>) -> Result<Cursor<S>, RunError> {
        let input = match input {
            RunInput::Turn(update) if self.cfg.checkpoint_id.is_none() => {
                return self.start_turn_at_head(update).await;
            }
            RunInput::Resume(resume) if self.cfg.checkpoint_id.is_none() => {
                match self.resume_from_cache(resume).await? {
                    Ok(cur) => return Ok(cur),
                    Err(resume) => RunInput::Resume(resume),
                }
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
                self.set_head(&c);
                c
            }
        };
        match input {
            RunInput::Turn(update) => self.start_turn(&mut cur, update).await?,
            RunInput::Resume(resume) => self.resume(&mut cur, resume).await?,
            RunInput::Continue => self.fork_if_old(&mut cur).await?,
            RunInput::Command(cmd) => self.command(&mut cur, cmd).await?,
        }
        Ok(cur)
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
        self.set_head(&guess);
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
        self.set_head(&cur);
        self.start_turn(&mut cur, update).await?;
        Ok(cur)
    }

    /// A new turn on `cur`: transient fields reset, the input applied, the entry nodes
    /// planned, the `input` checkpoint saved.
    async fn start_turn(
        &mut self,
        cur: &mut Cursor<S>,
        mut update: S::Update,
    ) -> Result<(), RunError> {
        if self.cfg.checkpoint_id.is_none() && cur.failed() {
            // The last turn failed: start from the checkpoint before it, so its partial
            // items are not carried forward.
            let base = cur.turn_base().map(str::to_string);
            *cur = match base {
                Some(b) => self.load(Some(&b)).await?.unwrap_or_else(Cursor::empty),
                None => Cursor::empty(),
            };
        }
        // A new turn from a turn's input checkpoint replaces that input, as LangGraph's
        // input checkpoints hold their input only as a pending write (a client's edit of a
        // message, the thread's first included, runs from it): the new input applies to the
        // state the old one was applied to (the turn's base; nothing on a thread's first
        // turn). Those fields are stored whole in the new checkpoint, a child of `cur`.
        let rebase = if self.cfg.checkpoint_id.is_some() && cur.is_input() {
            let base_id = cur.turn_base().map(str::to_string);
            let base = match &base_id {
                Some(b) => self.load(Some(b)).await?,
                None => None,
            };
            let turn = base.as_ref().map_or(0, Cursor::turn) + 1;
            Some((base_id, base.map(|c| c.state), turn))
        } else {
            None
        };
        // The turn's base: what its input applied to (the replaced input's base).
        let (turn_base, turn) = match &rebase {
            Some((id, _, turn)) => (id.clone(), *turn),
            None => (cur.id().map(str::to_string), cur.turn() + 1),
        };
        let abandoned: Vec<Value> = cur
            .pending_interrupts()
            .into_iter()
            .map(|i| Value::String(i.id))
            .collect();
        let defaults = self.g.graph.default_json();
        let mut writes = StepWrites::new::<S>();
        let state = Arc::make_mut(&mut cur.state);
        if let Some((_, base, _)) = rebase {
            for idx in 0..S::FIELDS.len() {
                let json = match &base {
                    Some(b) => b.field_json(idx),
                    None => S::default_field_json(idx),
                }
                .map_err(crate::state::StateError::Encode)?;
                state.set_field_json(idx, &json)?;
                writes.reset(idx);
            }
        }
        for (idx, f) in S::FIELDS.iter().enumerate() {
            if f.lifetime == Lifetime::Transient {
                let current = state
                    .field_json(idx)
                    .map_err(crate::state::StateError::Encode)?;
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
        plan::check_task_count("__start__", targets.task_count(), self.max_tasks_per_step())?;
        let (tasks, deferred) = plan::schedule(
            &self.g.graph,
            Vec::new(),
            plan::tasks_for(&self.g.graph, &targets),
        );
        // Steps count on across a thread's turns, as in LangGraph: the first input
        // checkpoint is step -1, a later turn's input is the step after its base's.
        let step = if cur.record.is_some() {
            cur.step() + 1
        } else {
            -1
        };
        let mut meta = self.metadata("input", step, turn, turn_base.as_deref());
        if !abandoned.is_empty() {
            meta.insert("abandoned_interrupts".into(), Value::Array(abandoned));
        }
        let plan = Plan {
            paused: self.breakpoint(&[], &tasks),
            tasks,
            deferred,
            barriers: BTreeMap::new(),
            counters: BTreeMap::new(),
        };
        // The input is the caller's request: its first node need not wait for the disk,
        // as long as a flushed write follows (the step's checkpoint, its interrupt, its
        // error; or the run's final flush). A run that stops here flushes it at once.
        let flush = if plan.paused.is_none() && !plan.tasks.is_empty() {
            Flush::WithNext
        } else {
            Flush::Now
        };
        self.save_with(cur, &writes, plan, meta, flush).await?;
        self.emit_checkpoint(cur);
        Ok(())
    }

    /// Records the resume's answers against the checkpoint the graph waits at.
    async fn resume(&mut self, cur: &mut Cursor<S>, resume: Resume) -> Result<(), RunError> {
        admission::at_head(
            self.thread(),
            self.cfg.checkpoint_id.as_deref(),
            self.head.as_ref().map(|h| h.0.as_str()),
        )?;
        let answered = self.answered(cur, admission::normalize_resume(resume))?;
        let writes = resume_writes(&answered)?;
        let cid = cur.id().unwrap_or_default().to_string();
        let span = tracing::info_span!("checkpoint.put_writes", writes = writes.len() as i64);
        self.scope.put_writes(&cid, writes).instrument(span).await?;
        record_answers(cur, answered);
        Ok(())
    }

    /// Resumes from the copy of the head an interrupted run of this graph left in the state
    /// cache, without reading storage: the answers are written only while that copy is
    /// current (still the head, with the same pending writes), and before any node runs.
    /// Otherwise (nothing cached, the bet lost, or the copy refuses the resume) the resume
    /// is handed back to take the usual way, from storage.
    async fn resume_from_cache(
        &mut self,
        resume: Resume,
    ) -> Result<Result<Cursor<S>, Resume>, RunError> {
        let Some(Entry {
            checkpoint_id,
            state,
            waiting: Some(waiting),
            ..
        }) = self.g.cache.take_waiting(self.thread())
        else {
            return Ok(Err(resume));
        };
        let known = waiting.writes.clone();
        let expected = known.len();
        let mut cur = Cursor::with_state(
            crate::checkpoint::LoadedCheckpoint {
                record: waiting.record,
                fields: Vec::new(),
                writes: waiting.writes,
            },
            state.clone(),
        )?;
        let give_back = |resume: Resume| -> Result<Result<Cursor<S>, Resume>, RunError> {
            // The state is still that of the checkpoint: the usual way reuses it.
            self.g
                .cache
                .put(self.thread(), &checkpoint_id, state.clone(), None, None);
            Ok(Err(resume))
        };
        if cur.id() != Some(checkpoint_id.as_str()) {
            return give_back(resume);
        }
        let Ok(answered) = self.answered(&cur, admission::normalize_resume(resume.clone())) else {
            return give_back(resume);
        };
        let writes = resume_writes(&answered)?;
        self.scope.hold_fence().await?;
        let span = tracing::info_span!("checkpoint.put_writes", writes = writes.len() as i64);
        let stored = self
            .cp()
            .put_writes_at_head(
                self.thread(),
                &checkpoint_id,
                expected,
                writes.clone(),
                self.cfg.fence.as_ref(),
                // Like the input, a resume's answers are the caller's request.
                Flush::WithNext,
            )
            .instrument(span)
            .await?;
        if !stored {
            tracing::debug!(thread_id = %self.thread(), "the cached head is not current; reading it");
            return give_back(resume);
        }
        self.scope.deferred();
        self.set_head(&cur);
        self.scope.know_writes(Some((&checkpoint_id, known)));
        self.scope.remember(&checkpoint_id, writes, true);
        record_answers(&mut cur, answered);
        Ok(Ok(cur))
    }

    /// The resume's answers to `cur`'s pending interrupts: (task, interrupt index, value).
    fn answered(
        &self,
        cur: &Cursor<S>,
        resume: Resume,
    ) -> Result<Vec<(String, i64, Value)>, RunError> {
        let pending = cur.pending_interrupts();
        Ok(admission::answers(self.thread(), &pending, &resume)?
            .into_iter()
            .map(|(pos, v)| (pending[pos].task_id.clone(), pending[pos].index, v.clone()))
            .collect())
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
        plan.paused = None;
        for t in &mut plan.tasks {
            t.id = uuid::Uuid::new_v4().to_string();
        }
        let meta = self.metadata_after("fork", cur.step(), cur);
        self.save(cur, &StepWrites::new::<S>(), plan, meta).await?;
        Ok(())
    }

    /// Applies a command's update and goto / sends (forking first when `cur` is not the
    /// head).
    async fn command(&mut self, cur: &mut Cursor<S>, cmd: Command<S>) -> Result<(), RunError> {
        // Checked before the fork is written: a refused command changes nothing.
        let targets = admission::goto_targets(&self.g.graph, &cmd.goto)?;
        admission::check_sends(&self.g.graph, &cmd.sends)?;
        plan::check_task_count(
            plan::INPUT_SOURCE,
            targets.len() + cmd.sends.len(),
            self.max_tasks_per_step(),
        )?;
        self.fork_if_old(cur).await?;
        if cmd.update.is_none() && cmd.goto.is_empty() && cmd.sends.is_empty() {
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
        plan.paused = None;
        if !cmd.goto.is_empty() || !cmd.sends.is_empty() {
            let next = plan::NextTargets {
                nodes: targets,
                sends: cmd.sends,
            };
            let planned = plan::tasks_for(&self.g.graph, &next);
            (plan.tasks, plan.deferred) =
                plan::schedule(&self.g.graph, std::mem::take(&mut plan.deferred), planned);
        } else {
            for t in &mut plan.tasks {
                t.id = uuid::Uuid::new_v4().to_string();
            }
        }
        let meta = self.metadata_after("update", cur.step(), cur);
        self.save(cur, &writes, plan, meta).await?;
        self.emit_checkpoint(cur);
        Ok(())
    }
}

/// The answers as pending writes.
fn resume_writes(answered: &[(String, i64, Value)]) -> Result<Vec<PendingWrite>, RunError> {
    answered
        .iter()
        .map(|(task, idx, v)| write(task, RESUME, *idx, v))
        .collect()
}

/// Records the answers in the cursor's pending writes.
fn record_answers<S: State>(cur: &mut Cursor<S>, answered: Vec<(String, i64, Value)>) {
    for (task, idx, v) in answered {
        cur.writes.entry(task).or_default().resumes.insert(idx, v);
    }
}
