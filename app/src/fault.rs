//! The `ledger` graph for fault tests (served only with `PALGRAPH_FAULT_GRAPH=1`).
//!
//! Three nodes, `reserve -> charge -> notify`, each performing one side effect inside a
//! durable `ctx.step`: it inserts a row into `ledger_effects` (thread, run, step, a fresh
//! execution id, the process id, the time) and returns the execution id, which the node
//! writes into its message. After a `kill -9` anywhere, the table tells whether a step
//! whose result had been recorded ran again (it must not), and the messages tell whether
//! any node's work was applied twice (it must not).

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
            let half = Duration::from_millis(state.pause_ms / 2);
            let exec = uuid::Uuid::new_v4().to_string();
            let recorded: String = ctx
                .step(name, async {
                    record(&db, &ctx, name, &exec).await?;
                    tokio::time::sleep(half).await;
                    Ok::<_, NodeError>(exec.clone())
                })
                .await?;
            tokio::time::sleep(half).await;
            let msg = Message::ai(format!("{name} done ({recorded})"))
                .with_id(format!("{}:{name}", ctx.task_id()));
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
