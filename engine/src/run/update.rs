//! `update_state`: a new checkpoint with an update applied as if a node had written it.

use std::sync::Arc;

use crate::graph::CompiledGraph;
use crate::state::{State, StateUpdate};
use crate::stream::{NullSink, StreamModes};

use super::cursor::{Cursor, StepWrites};
use super::executor::Executor;
use super::plan;
use super::{RunConfig, RunError};

/// A new checkpoint with `update` applied as if `as_node` had written it (next: that node's
/// successors), or keeping the pending tasks (with new task ids) when `as_node` is `None`.
/// Based on `checkpoint_id` (default: the latest). Returns the new checkpoint's id.
pub(crate) async fn update_state<S: State>(
    g: &CompiledGraph<S>,
    thread_id: &str,
    checkpoint_id: Option<&str>,
    update: Option<S::Update>,
    as_node: Option<&str>,
) -> Result<String, RunError> {
    let mut cfg = RunConfig::new(thread_id).stream_modes(StreamModes::NONE);
    cfg.checkpoint_id = checkpoint_id.map(str::to_string);
    let mut ex = Executor::new(g, cfg, Arc::new(NullSink));
    let head = ex.load_head().await?;
    if let Some(h) = &head {
        ex.set_head(h);
    }
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
    if let Some(mut u) = update {
        let state = Arc::make_mut(&mut cur.state);
        u.normalize();
        writes.record::<S>(&u)?;
        state.apply(u)?;
    }
    let mut plan = cur.plan.clone();
    match node_idx {
        Some(i) => {
            let mut barriers = plan.barriers.clone();
            let targets = plan::successors(
                &g.graph,
                &*cur.state,
                &[plan::Finished {
                    node: g.graph.nodes[i].name.clone(),
                    goto: Vec::new(),
                    sends: Vec::new(),
                }],
                &mut barriers,
            )?;
            plan::check_task_count(
                &g.graph.nodes[i].name,
                targets.task_count(),
                g.max_sends_per_step,
            )?;
            let planned = plan::tasks_for(&g.graph, &targets);
            (plan.tasks, plan.deferred) =
                plan::schedule(&g.graph, std::mem::take(&mut plan.deferred), planned);
            plan.barriers = barriers;
        }
        None => {
            for t in &mut plan.tasks {
                t.id = uuid::Uuid::new_v4().to_string();
            }
        }
    }
    let mut meta = ex.metadata_after("update", cur.step() + 1, &cur);
    meta.remove("run_id");
    if let Some(n) = as_node {
        meta.insert("as_node".into(), n.into());
    }
    ex.save(&mut cur, &writes, plan, meta).await?;
    Ok(cur.id().unwrap_or_default().to_string())
}
