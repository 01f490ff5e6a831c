//! The `ledger` graph for fault tests (served only with `PALGRAPH_FAULT_GRAPH=1`).
//!
//! Three nodes, `reserve -> charge -> notify`, each performing one side effect inside a
//! durable `ctx.step`: it inserts a row into `ledger_effects` (thread, run, step, a fresh
//! execution id, the process id, the time) and returns the execution id, which the node
//! writes into its message. After a `kill -9` anywhere, the table tells whether a step
//! whose result had been recorded ran again (it must not), and the messages tell whether
//! any node's work was applied twice (it must not).
//!
//! Two more shapes, built from the same effect-recording node: `ledger_map` (`plan` sends
//! one `item` task per index, 50 by default, each its own durable effect `item-<i>`, all in
//! one step, finishing at different times) and `ledger_sub` (`reserve`, then a subgraph
//! running `charge -> notify`).

use std::sync::Arc;
use std::time::Duration;

use palgraph::{
    AddMessages, Checkpointer, CompiledGraph, Message, NodeContext, NodeError, State, StateGraph,
    END, START,
};
use serde::{Deserialize, Serialize};

use async_trait::async_trait;
use palgraph_server::{BoxError, Database, Extension, ServeContext};

/// The ledger graph's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub(crate) struct LedgerState {
    /// One message per node.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// How long each node works (half inside its step, half after).
    #[state(transient)]
    pub pause_ms: u64,
    /// How many `item` tasks `ledger_map` sends (default 50).
    #[state(transient)]
    pub items: Option<u32>,
}

/// What an `item` task of `ledger_map` gets.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Item {
    /// Its index.
    i: u32,
}

/// Creates the effects table when the server starts.
pub(crate) struct Ledger;

#[async_trait]
impl Extension for Ledger {
    fn name(&self) -> &str {
        "ledger"
    }

    async fn start(&self, ctx: &ServeContext) -> Result<(), BoxError> {
        prepare(&ctx.database).await
    }
}

async fn prepare(db: &Database) -> Result<(), BoxError> {
    let sql = "CREATE TABLE IF NOT EXISTS ledger_effects (
        thread_id TEXT NOT NULL, run_id TEXT NOT NULL, step TEXT NOT NULL,
        exec_id TEXT NOT NULL, pid BIGINT NOT NULL, at_ms BIGINT NOT NULL)";
    match db {
        Database::Sqlite(p) => {
            sqlx::raw_sql(sql).execute(p).await?;
        }
        Database::Postgres(p) => {
            sqlx::raw_sql(sql).execute(p).await?;
        }
        _ => {}
    }
    Ok(())
}

async fn record(db: &Database, ctx: &NodeContext, step: &str, exec: &str) -> Result<(), NodeError> {
    let q = "INSERT INTO ledger_effects (thread_id, run_id, step, exec_id, pid, at_ms) VALUES ($1, $2, $3, $4, $5, $6)";
    let (t, r, pid, at) = (
        ctx.thread_id(),
        ctx.run_id(),
        i64::from(std::process::id()),
        palgraph::checkpoint::now_ms(),
    );
    let res = match db {
        Database::Sqlite(p) => sqlx::query(q)
            .bind(t)
            .bind(r)
            .bind(step)
            .bind(exec)
            .bind(pid)
            .bind(at)
            .execute(p)
            .await
            .map(|_| ()),
        Database::Postgres(p) => sqlx::query(q)
            .bind(t)
            .bind(r)
            .bind(step)
            .bind(exec)
            .bind(pid)
            .bind(at)
            .execute(p)
            .await
            .map(|_| ()),
        _ => Ok(()),
    };
    res.map_err(|e| {
        if palgraph::db::is_transient(&e) {
            NodeError::unavailable(e.to_string())
        } else {
            NodeError::retryable(e.to_string())
        }
    })
}

/// The effect of step `name`, recorded once inside a durable step, taking `pause` (half in
/// the step, half after it); the node's message names the execution recorded.
async fn effect(
    db: &Database,
    ctx: &NodeContext,
    name: &str,
    pause: Duration,
) -> Result<Message, NodeError> {
    let half = pause / 2;
    let exec = uuid::Uuid::new_v4().to_string();
    let recorded: String = ctx
        .step(name, async {
            record(db, ctx, name, &exec).await?;
            tokio::time::sleep(half).await;
            Ok::<_, NodeError>(exec.clone())
        })
        .await?;
    tokio::time::sleep(half).await;
    Ok(Message::ai(format!("{name} done ({recorded})"))
        .with_id(format!("{}:{name}", ctx.task_id())))
}

fn node(
    db: Database,
    name: &'static str,
) -> impl Fn(
    Arc<LedgerState>,
    NodeContext,
) -> palgraph::node::BoxFuture<Result<LedgerStateUpdate, NodeError>>
       + Send
       + Sync
       + 'static {
    move |state: Arc<LedgerState>, ctx: NodeContext| {
        let db = db.clone();
        Box::pin(async move {
            let pause = Duration::from_millis(state.pause_ms);
            let msg = effect(&db, &ctx, name, pause).await?;
            Ok(LedgerStateUpdate::default().messages(vec![msg]))
        })
    }
}

/// Builds the ledger graph.
///
/// # Errors
/// Never for this graph.
pub(crate) fn graph(
    db: Database,
    cp: Arc<dyn Checkpointer>,
) -> Result<CompiledGraph<LedgerState>, palgraph::GraphError> {
    let mut g = StateGraph::<LedgerState>::new();
    for n in ["reserve", "charge", "notify"] {
        g.add_node(n, node(db.clone(), n)).status(format!("{n}..."));
    }
    g.add_edge(START, "reserve");
    g.add_sequence(["reserve", "charge", "notify"]);
    g.add_edge("notify", END);
    Ok(g.compile()?.with_checkpointer(cp))
}

/// Builds `ledger_map`: `plan` sends `items` (default 50) `item` tasks in one step; item `i`
/// records the effect `item-<i>` and works `pause_ms * (i % 10 + 1) / 10`, so they finish
/// at different times.
///
/// # Errors
/// Never for this graph.
pub(crate) fn map_graph(
    db: Database,
    cp: Arc<dyn Checkpointer>,
) -> Result<CompiledGraph<LedgerState>, palgraph::GraphError> {
    let mut g = StateGraph::<LedgerState>::new();
    g.add_node(
        "plan",
        |_s: Arc<LedgerState>, _ctx: NodeContext| async move {
            Ok::<_, NodeError>(LedgerStateUpdate::default())
        },
    );
    g.add_node("item", move |s: Arc<LedgerState>, ctx: NodeContext| {
        let db = db.clone();
        async move {
            let item: Item = ctx.arg()?;
            let pause = Duration::from_millis(s.pause_ms * u64::from(item.i % 10 + 1) / 10);
            let msg = effect(&db, &ctx, &format!("item-{}", item.i), pause).await?;
            Ok::<_, NodeError>(LedgerStateUpdate::default().messages(vec![msg]))
        }
    });
    g.add_conditional_edges(
        "plan",
        |s: &LedgerState| {
            (0..s.items.unwrap_or(50))
                .map(|i| palgraph::send::Send::new("item", serde_json::json!({ "i": i })))
                .collect::<Vec<_>>()
        },
        ["item"],
    );
    g.add_edge(START, "plan");
    g.add_edge("item", END);
    Ok(g.compile()?.with_checkpointer(cp))
}

/// Builds `ledger_sub`: `reserve`, then the subgraph `payment` running `charge -> notify`
/// (its messages are the parent's).
///
/// # Errors
/// Never for this graph.
pub(crate) fn sub_graph(
    db: Database,
    cp: Arc<dyn Checkpointer>,
) -> Result<CompiledGraph<LedgerState>, palgraph::GraphError> {
    let mut inner = StateGraph::<LedgerState>::new();
    for n in ["charge", "notify"] {
        inner.add_node(n, node(db.clone(), n));
    }
    inner.add_edge(START, "charge");
    inner.add_edge("charge", "notify");
    inner.add_edge("notify", END);
    let inner = inner.compile()?;
    let mut g = StateGraph::<LedgerState>::new();
    g.add_node("reserve", node(db, "reserve"));
    g.add_subgraph(
        "payment",
        inner,
        |s: &LedgerState| LedgerStateUpdate::default().pause_ms(s.pause_ms),
        |s: &LedgerState| LedgerStateUpdate::default().messages(s.messages.clone()),
    );
    g.add_edge(START, "reserve");
    g.add_edge("reserve", "payment");
    g.add_edge("payment", END);
    Ok(g.compile()?.with_checkpointer(cp))
}
