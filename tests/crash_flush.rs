//! What a run returns survives a crash of Postgres the moment it returns. A run stores its
//! request (its input checkpoint, a resume's answers) without waiting for the disk
//! (`palgraph::checkpoint::Flush::WithNext`) and relies on a later flushed write of its own,
//! or a flush before it ends. Here Postgres' WAL writer is slowed to once per 10 s, so only
//! the runs' own flushes put their writes on disk; every shape of run is then followed at
//! once by an immediate shutdown (no checkpoint, no flush), and every thread must read back,
//! after recovery, as the run left it.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use common::pg_cluster::PgCluster;
use palgraph::checkpoint::PostgresCheckpointer;
use palgraph::{
    AddMessages, Checkpointer, CompiledGraph, Message, NodeContext, NodeError, Resume, RunConfig,
    RunInput, RunStatus, State, StateGraph, END, START,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A conversation.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
struct Talk {
    #[state(reducer = AddMessages)]
    messages: Vec<Message>,
}

/// `prep` answers at once; `ask` asks the user and says the answer back.
fn graph(cp: Arc<dyn Checkpointer>) -> CompiledGraph<Talk> {
    let mut g = StateGraph::<Talk>::new();
    g.add_node("prep", |_s: Arc<Talk>, _c: NodeContext| async move {
        Ok::<_, NodeError>(TalkUpdate::default().messages(vec![Message::ai("prepared")]))
    });
    g.add_node("ask", |_s: Arc<Talk>, ctx: NodeContext| async move {
        let answer: String = ctx.interrupt(json!({"question": "which?"}))?;
        Ok::<_, NodeError>(TalkUpdate::default().messages(vec![Message::ai(answer)]))
    });
    g.add_edge(START, "prep");
    g.add_edge("prep", "ask");
    g.add_edge("ask", END);
    g.compile()
        .expect("the graph compiles")
        .with_checkpointer(cp)
        .with_state_cache(0)
}

fn say(text: &str) -> RunInput<Talk> {
    RunInput::Turn(TalkUpdate::default().messages(vec![Message::human(text)]))
}

/// What a thread's head says: its checkpoint, the nodes next, the open interrupts and the
/// messages.
async fn head(g: &CompiledGraph<Talk>, thread: &str) -> (String, Vec<String>, usize, usize) {
    let snap = g
        .get_state(thread)
        .await
        .unwrap()
        .expect("the thread exists");
    (
        snap.checkpoint_id.clone(),
        snap.next.clone(),
        snap.interrupts.len(),
        snap.values.messages.len(),
    )
}

/// The shapes of run, each on a thread of its own: what it does, then the thread's id.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Input (unflushed), `prep`'s checkpoint, `ask`'s interrupt.
    Asks,
    /// The same, then a resume (answers unflushed) to the end.
    Answered,
    /// A breakpoint before the first node: the input is the run's only write.
    Paused,
    /// A finished thread's next turn, its input followed by a breakpoint.
    NextTurnPaused,
}

async fn run(g: &CompiledGraph<Talk>, shape: Shape, thread: &str) {
    let first = match shape {
        Shape::Paused => RunConfig::new(thread).interrupt_before(["prep"]),
        _ => RunConfig::new(thread),
    };
    let out = g.invoke(first, say("hi")).await.unwrap();
    assert!(matches!(out.status, RunStatus::Interrupted(_)), "{shape:?}");
    if matches!(shape, Shape::Answered | Shape::NextTurnPaused) {
        let out = g
            .invoke(
                RunConfig::new(thread),
                RunInput::Resume(Resume::value("this one")),
            )
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{shape:?}");
    }
    if matches!(shape, Shape::NextTurnPaused) {
        let config = RunConfig::new(thread).interrupt_before(["ask"]);
        let out = g.invoke(config, say("again")).await.unwrap();
        assert!(matches!(out.status, RunStatus::Interrupted(_)), "{shape:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_a_run_returns_survives_a_crash_of_the_database() {
    let pg = PgCluster::start();
    let admin = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    sqlx::raw_sql("ALTER SYSTEM SET wal_writer_delay = '10s'")
        .execute(&admin)
        .await
        .unwrap();
    sqlx::raw_sql("SELECT pg_reload_conf()")
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    for shape in [
        Shape::Asks,
        Shape::Answered,
        Shape::Paused,
        Shape::NextTurnPaused,
    ] {
        let thread = format!("{shape:?}");
        let pool = palgraph::db::open_postgres(&pg.url(), 4).await.unwrap();
        let g = graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
        run(&g, shape, &thread).await;
        let before = head(&g, &thread).await;
        // The crash comes right after the run returned: nothing else flushes in between.
        pool.close().await;
        pg.crash();
        pg.start_again();
        let pool = palgraph::db::open_postgres(&pg.url(), 4).await.unwrap();
        let g = graph(Arc::new(PostgresCheckpointer::new(pool.clone())));
        assert_eq!(head(&g, &thread).await, before, "{shape:?} after the crash");
        pool.close().await;
    }
}
