//! Subgraphs (`add_subgraph`), run on any checkpointer.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::json;

use crate::send_cases::{JokeState, JokeStateUpdate};
use palgraph::dynamic::DynGraph;
use palgraph::graph::subgraph::{namespace, resolve};
use palgraph::stream::VecSink;
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, Command, CompiledGraph, Event, NodeContext, NodeError, ParentCommand, Resume,
    RunConfig, RunInput, RunStatus, StateGraph, StreamModes, END, START,
};

pub async fn a_subgraph_runs_as_a_node_and_passes_interrupts_through(cp: Arc<dyn Checkpointer>) {
    // The subgraph: write a joke (a durable step), ask twice, then polish.
    let written = Counter::default();
    let w2 = written.clone();
    let mut sub = StateGraph::<JokeState>::new();
    sub.add_node("write", move |s: Arc<JokeState>, ctx: NodeContext| {
        let w = w2.clone();
        async move {
            let joke = ctx
                .step("llm", async {
                    w.bump();
                    Ok::<_, NodeError>(format!("joke about {}", s.topic))
                })
                .await?;
            Ok(JokeStateUpdate::default().jokes(vec![joke]))
        }
    });
    sub.add_node("ask", |_s: Arc<JokeState>, ctx: NodeContext| async move {
        let first: String = ctx.interrupt(json!({"q": "funny?"}))?;
        let second: String = ctx.interrupt(json!({"q": "really?"}))?;
        Ok::<_, NodeError>(JokeStateUpdate::default().best(Some(format!("{first}/{second}"))))
    });
    sub.add_edge(START, "write");
    sub.add_edge("write", "ask");
    sub.add_edge("ask", END);
    let sub = sub.compile().unwrap();

    // The parent: messages in, the subgraph's verdict out.
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "jokes",
        sub.clone(),
        |s: &TestState| {
            JokeStateUpdate::default().topic(
                s.messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            )
        },
        |s: &JokeState| Upd::default().log(s.jokes.clone()).action(s.best.clone()),
    );
    g.add_node("after", trail_node("after"));
    g.add_edge(START, "jokes");
    g.add_edge("jokes", "after");
    g.add_edge("after", END);
    let g = build(g, cp.clone());
    let t = thread();

    let out = ok(&g, RunConfig::new(&t), say("cats")).await;
    let i = out.interrupts();
    assert_eq!(i.len(), 1);
    assert_eq!(
        (i[0].node.as_str(), &i[0].value),
        ("jokes", &json!({"q": "funny?"}))
    );
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("yes")),
    )
    .await;
    assert_eq!(out.interrupts()[0].value, json!({"q": "really?"}));
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("sure")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["joke about cats", "after"]);
    assert_eq!(out.state.action.as_deref(), Some("yes/sure"));
    assert_eq!(written.get(), 1, "the subgraph's durable step ran once");

    // The subgraph's checkpoints are in the parent's storage, under its namespace.
    let task = g
        .get_state_history(&t, &Default::default())
        .await
        .unwrap()
        .into_iter()
        .find_map(|s| s.tasks.into_iter().find(|t| t.name == "jokes"))
        .unwrap();
    let ns = namespace(&t, "jokes", &task.id);
    let inner = sub.with_checkpointer(cp).with_state_cache(0);
    let snap = inner.get_state(&ns).await.unwrap().unwrap();
    assert!(snap.next.is_empty());
    assert_eq!(snap.values.jokes, vec!["joke about cats"]);
}

/// A two-level subgraph: `outer` (a JokeState graph) runs `inner` (another), which asks.
fn two_levels() -> (CompiledGraph<JokeState>, CompiledGraph<JokeState>) {
    let mut inner = StateGraph::<JokeState>::new();
    inner.add_node("write", |s: Arc<JokeState>, _ctx: NodeContext| async move {
        Ok::<_, NodeError>(
            JokeStateUpdate::default().jokes(vec![format!("joke about {}", s.topic)]),
        )
    });
    inner.add_node("ask", |_s: Arc<JokeState>, ctx: NodeContext| async move {
        let verdict: String = ctx.interrupt(json!({"q": "funny?"}))?;
        Ok::<_, NodeError>(JokeStateUpdate::default().best(Some(verdict)))
    });
    inner.add_edge(START, "write");
    inner.add_edge("write", "ask");
    inner.add_edge("ask", END);
    let inner = inner.compile().unwrap();

    let mut outer = StateGraph::<JokeState>::new();
    outer.add_node("prep", |s: Arc<JokeState>, _ctx: NodeContext| async move {
        Ok::<_, NodeError>(JokeStateUpdate::default().topic(format!("{}!", s.topic)))
    });
    outer.add_subgraph(
        "inner",
        inner.clone(),
        |s: &JokeState| JokeStateUpdate::default().topic(s.topic.clone()),
        |s: &JokeState| {
            JokeStateUpdate::default()
                .jokes(s.jokes.clone())
                .best(s.best.clone())
        },
    );
    outer.add_edge(START, "prep");
    outer.add_edge("prep", "inner");
    outer.add_edge("inner", END);
    (outer.compile().unwrap(), inner)
}

pub async fn get_state_with_subgraphs_shows_the_inner_states_and_events_carry_namespaces(
    cp: Arc<dyn Checkpointer>,
) {
    let (outer, _inner) = two_levels();
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "outer",
        outer,
        |s: &TestState| {
            JokeStateUpdate::default().topic(
                s.messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            )
        },
        |s: &JokeState| Upd::default().log(s.jokes.clone()).action(s.best.clone()),
    );
    g.add_edge(START, "outer");
    g.add_edge("outer", END);
    let g = build(g, cp.clone());
    let t = thread();

    // Streamed: the subgraphs' step events come tagged with their namespaces.
    let sink = Arc::new(VecSink::default());
    let out = g
        .run(
            RunConfig::new(&t).stream_modes(StreamModes::ALL),
            say("cats"),
            sink.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.interrupts().len(), 1);
    let tagged: Vec<(Vec<String>, Event)> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Subgraph { namespace, event } => Some((namespace, *event)),
            _ => None,
        })
        .collect();
    let finished: Vec<(Vec<String>, String)> = tagged
        .iter()
        .filter_map(|(ns, e)| match e {
            Event::NodeFinished { node, .. } => Some((ns.clone(), node.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished.len(),
        2,
        "prep in outer, write in inner: {finished:?}"
    );
    assert_eq!(finished[0].0.len(), 1);
    assert!(finished[0].0[0].starts_with("outer:"));
    assert_eq!(finished[0].1, "prep");
    assert_eq!(finished[1].0.len(), 2);
    assert_eq!(finished[1].0[0], finished[0].0[0]);
    assert!(finished[1].0[1].starts_with("inner:"));
    assert_eq!(finished[1].1, "write");
    assert!(
        tagged.iter().all(|(_, e)| !e.is_terminal()
            && !matches!(e, Event::RunStarted { .. } | Event::Subgraph { .. })),
        "only step events, flattened"
    );
    assert!(tagged.iter().any(|(ns, e)| ns.len() == 2
        && matches!(e, Event::Values { values, .. } if values["topic"] == "cats!")));

    // get_state: without subgraphs, the task names its namespace only.
    let plain = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(plain.tasks.len(), 1);
    let ns = plain.tasks[0].namespace.clone().unwrap();
    assert_eq!(ns, finished[0].0[0]);
    assert!(plain.tasks[0].state.is_none());

    // With subgraphs: the outer state, and in it the inner one, waiting at `ask`.
    let deep = g.get_state_with_subgraphs(&t, None).await.unwrap().unwrap();
    let outer_state = deep.tasks[0].state.as_deref().unwrap();
    assert_eq!(outer_state.values["topic"], "cats!");
    assert_eq!(outer_state.next, vec!["inner"]);
    assert_eq!(
        outer_state.tasks[0].namespace.as_deref(),
        Some(finished[1].0[1].as_str())
    );
    let inner_state = outer_state.tasks[0].state.as_deref().unwrap();
    assert_eq!(inner_state.next, vec!["ask"]);
    assert_eq!(inner_state.values["jokes"], json!(["joke about cats!"]));
    assert_eq!(inner_state.interrupts.len(), 1);
    assert_eq!(inner_state.interrupts[0].value, json!({"q": "funny?"}));

    // A namespace resolves to the graph and thread holding it.
    let dyn_g: Arc<dyn DynGraph> = Arc::new(g.clone());
    let full = finished[1].0.join("|");
    let (sub, sub_thread) = resolve(dyn_g.clone(), &t, &full).unwrap();
    let again = sub.state(&sub_thread, None).await.unwrap().unwrap();
    assert_eq!(again.values, inner_state.values);
    assert!(resolve(dyn_g.clone(), &t, "nope:1").is_none());
    assert!(resolve(dyn_g.clone(), &t, "outer").is_none());
    assert_eq!(dyn_g.subgraphs().len(), 1);
    assert_eq!(dyn_g.subgraph("outer").unwrap().subgraphs()[0].0, "inner");

    // Resumed from the parent: the inner graph ends, and nothing is due anywhere.
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("ha")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["joke about cats!"]);
    assert_eq!(out.state.action.as_deref(), Some("ha"));
    let done = g.get_state_with_subgraphs(&t, None).await.unwrap().unwrap();
    assert!(done.tasks.is_empty() && done.next.is_empty());
}

pub async fn a_subgraph_node_hands_off_to_a_parent_node_with_command_to_parent(
    cp: Arc<dyn Checkpointer>,
) {
    // The team: `ask` asks who goes next, then hands off to that node of the parent with
    // an update of the parent's state; `never` must not run.
    let never = Counter::default();
    let n2 = never.clone();
    let mut team = StateGraph::<JokeState>::new();
    team.add_node("ask", |s: Arc<JokeState>, ctx: NodeContext| async move {
        let next: String = ctx.interrupt(json!({"q": "who next?"}))?;
        let update = Upd::default().log(vec![format!("{} handed to {next}", s.topic)]);
        Ok::<_, NodeError>(Command::<JokeState>::to_parent(
            ParentCommand::goto(next).with_update(&update)?,
        ))
    });
    team.add_node("never", move |_s: Arc<JokeState>, _ctx: NodeContext| {
        let n = n2.clone();
        async move {
            n.bump();
            Ok::<_, NodeError>(JokeStateUpdate::default())
        }
    });
    team.add_edge(START, "ask");
    team.add_edge("ask", "never");
    team.add_edge("never", END);
    let team = team.compile().unwrap();

    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "team",
        team.clone(),
        |_s: &TestState| JokeStateUpdate::default().topic("cats".to_string()),
        |_s: &JokeState| Upd::default().log(vec!["mapped back".into()]),
    )
    .destinations(["b"]);
    g.add_node("after", trail_node("after"));
    g.add_node("b", trail_node("b"));
    g.add_edge(START, "team");
    g.add_edge("team", "after");
    g.add_edge("after", END);
    g.add_edge("b", END);
    let g = build(g, cp.clone());
    let t = thread();

    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.interrupts()[0].value, json!({"q": "who next?"}));
    let out = ok(&g, RunConfig::new(&t), RunInput::Resume(Resume::value("b"))).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["cats handed to b", "b"], "the parent's goto replaced the edge to `after`, and the subgraph's state was not mapped back");
    assert_eq!(never.get(), 0, "the subgraph stopped at the hand-off");

    // A second turn whose hand-off names no node of the parent fails the run, typed.
    let out = ok(&g, RunConfig::new(&t), say("again")).await;
    assert_eq!(out.interrupts().len(), 1);
    let err = g
        .invoke(
            RunConfig::new(&t),
            RunInput::Resume(Resume::value("nowhere")),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nowhere"), "{err}");

    // Run on its own, a graph whose node hands off to a parent fails with a clear error.
    let alone = team.with_checkpointer(cp).with_state_cache(0);
    let t2 = thread();
    alone
        .invoke(
            RunConfig::new(&t2),
            RunInput::Turn(JokeStateUpdate::default().topic("x".to_string())),
        )
        .await
        .unwrap();
    let err = alone
        .invoke(RunConfig::new(&t2), RunInput::Resume(Resume::value("b")))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("without a parent"), "{err}");
}

pub async fn a_crash_inside_a_subgraph_continues_it_without_repeating_finished_nodes(
    cp: Arc<dyn Checkpointer>,
) {
    let (first, second) = (Counter::default(), Counter::default());
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (f2, s2, h2) = (first.clone(), second.clone(), hang.clone());
    let mut sub = StateGraph::<JokeState>::new();
    sub.add_node("write", move |s: Arc<JokeState>, ctx: NodeContext| {
        let f = f2.clone();
        async move {
            let joke = ctx
                .step("llm", async {
                    f.bump();
                    Ok::<_, NodeError>(format!("joke about {}", s.topic))
                })
                .await?;
            Ok::<_, NodeError>(JokeStateUpdate::default().jokes(vec![joke]))
        }
    });
    sub.add_node("pick", move |s: Arc<JokeState>, _ctx: NodeContext| {
        s2.bump();
        let stuck = h2.swap(false, std::sync::atomic::Ordering::SeqCst);
        async move {
            if stuck {
                // The process "dies" while the subgraph's second node runs.
                std::future::pending::<()>().await;
            }
            Ok::<_, NodeError>(JokeStateUpdate::default().best(s.jokes.first().cloned()))
        }
    });
    sub.add_edge(START, "write");
    sub.add_edge("write", "pick");
    sub.add_edge("pick", END);
    let sub = sub.compile().unwrap();
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "jokes",
        sub.clone(),
        |_s: &TestState| JokeStateUpdate::default().topic("owls".to_string()),
        |s: &JokeState| Upd::default().action(s.best.clone()),
    );
    g.add_edge(START, "jokes");
    g.add_edge("jokes", END);
    let g = build(g, cp.clone());
    let t = thread();
    let (g2, t2) = (g.clone(), t.clone());
    let handle = tokio::spawn(async move { g2.invoke(RunConfig::new(&t2), say("go")).await });
    // Wait until the subgraph's first node is checkpointed inside it.
    let inner = sub.with_checkpointer(cp).with_state_cache(0);
    // A read that never returns fails the test too, instead of hanging it.
    let waited = tokio::time::timeout(std::time::Duration::from_secs(90), async {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let outer = g.get_state(&t).await.unwrap();
            let task = outer.as_ref().and_then(|s| s.tasks.first().cloned());
            let inside = match &task {
                Some(task) => inner
                    .get_state(&namespace(&t, "jokes", &task.id))
                    .await
                    .unwrap(),
                None => None,
            };
            if inside.as_ref().is_some_and(|s| s.next == ["pick"]) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline && !handle.is_finished(),
                "the subgraph never stopped before `pick`: outer {:?}, inside {:?}, run {}, \
                 write ran {} times, pick {} times",
                outer.map(|s| s.next),
                inside.map(|s| s.next),
                if handle.is_finished() {
                    "ended"
                } else {
                    "running"
                },
                first.get(),
                second.get()
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "reading the states did not return within 90 s"
    );
    handle.abort();
    let _ = handle.await;
    let out = ok(&g, RunConfig::new(&t), RunInput::Continue).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.action.as_deref(), Some("joke about owls"));
    assert_eq!(
        first.get(),
        1,
        "the subgraph's finished node and its durable step did not run again"
    );
    assert_eq!(second.get(), 2, "the node the crash stopped ran again");
}

/// A sub-agent team: one node that does its durable work and reports in the log; the
/// research team hands back to the supervisor with `Command::to_parent`, the writing team
/// ends and is mapped back.
fn team(name: &'static str, worked: Counter, hand_back: bool) -> CompiledGraph<JokeState> {
    let mut t = StateGraph::<JokeState>::new();
    t.add_node("work", move |s: Arc<JokeState>, ctx: NodeContext| {
        let w = worked.clone();
        async move {
            let done = ctx
                .step("work", async {
                    w.bump();
                    Ok::<_, NodeError>(format!("{name} on {}", s.topic))
                })
                .await?;
            if hand_back {
                let report = Upd::default().log(vec![done]).trail(vec![name.to_string()]);
                return Ok(Command::<JokeState>::to_parent(
                    ParentCommand::goto("supervisor").with_update(&report)?,
                ));
            }
            Ok(Command::with_update(
                JokeStateUpdate::default().best(Some(done)),
            ))
        }
    });
    t.add_edge(START, "work");
    t.add_edge("work", END);
    t.compile().unwrap()
}

pub async fn a_supervisor_routes_between_two_sub_agent_subgraphs(cp: Arc<dyn Checkpointer>) {
    let (research, writing) = (Counter::default(), Counter::default());
    let mut g = StateGraph::<TestState>::new();
    g.add_node(
        "supervisor",
        |s: Arc<TestState>, _ctx: NodeContext| async move {
            let next = if !s.trail.iter().any(|t| t == "research") {
                "research_team"
            } else if !s.trail.iter().any(|t| t == "writing") {
                "writing_team"
            } else {
                END
            };
            Ok::<_, NodeError>(Command::<TestState>::new().goto(next))
        },
    )
    .destinations(["research_team", "writing_team", END]);
    let topic = |s: &TestState| {
        JokeStateUpdate::default().topic(
            s.messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default(),
        )
    };
    g.add_subgraph(
        "research_team",
        team("research", research.clone(), true),
        topic,
        |_s: &JokeState| Upd::default(),
    )
    .destinations(["supervisor"]);
    g.add_subgraph(
        "writing_team",
        team("writing", writing.clone(), false),
        topic,
        |s: &JokeState| {
            Upd::default()
                .log(s.best.clone().into_iter().collect())
                .trail(vec!["writing".into()])
        },
    );
    g.add_edge(START, "supervisor");
    g.add_edge("writing_team", "supervisor");
    let g = build(g, cp);
    let t = thread();

    let sink = Arc::new(VecSink::default());
    let out = g
        .run(RunConfig::new(&t), say("tides"), sink.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["research on tides", "writing on tides"]);
    assert_eq!(
        out.state.trail,
        vec!["research", "writing"],
        "the research team's hand-off carried its update to the parent"
    );
    assert_eq!((research.get(), writing.get()), (1, 1));
    let order: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::NodeFinished { node, .. } => Some(node),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "supervisor",
            "research_team",
            "supervisor",
            "writing_team",
            "supervisor"
        ]
    );
    // The next turn goes through both teams again, each once.
    let out = ok(&g, RunConfig::new(&t), say("waves")).await;
    assert_eq!(
        out.state.log,
        vec![
            "research on tides",
            "writing on tides",
            "research on waves",
            "writing on waves"
        ]
    );
    assert_eq!((research.get(), writing.get()), (2, 2));
}

pub async fn a_copied_thread_resumes_inside_its_subgraph_and_delete_takes_namespaces(
    cp: Arc<dyn Checkpointer>,
) {
    let (outer, _inner) = two_levels();
    let mut g = StateGraph::<TestState>::new();
    g.add_subgraph(
        "outer",
        outer,
        |_s: &TestState| JokeStateUpdate::default().topic("owls".to_string()),
        |s: &JokeState| Upd::default().action(s.best.clone()),
    );
    g.add_edge(START, "outer");
    g.add_edge("outer", END);
    let g = build(g, cp.clone());
    let (t, copy) = (thread(), thread());
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.interrupts().len(), 1);

    cp.copy_thread(&t, &copy).await.unwrap();
    let deep = g
        .get_state_with_subgraphs(&copy, None)
        .await
        .unwrap()
        .unwrap();
    let inner = deep.tasks[0].state.as_deref().unwrap().tasks[0]
        .state
        .as_deref()
        .unwrap();
    assert_eq!(
        inner.next,
        vec!["ask"],
        "the copy has its subgraphs' states"
    );

    // The original goes, with its namespaces; the copy still resumes inside its subgraph.
    let task = g.get_state(&t).await.unwrap().unwrap().tasks[0].id.clone();
    cp.delete_thread(&t).await.unwrap();
    assert!(cp
        .head(&namespace(&t, "outer", &task))
        .await
        .unwrap()
        .is_none());
    let out = ok(
        &g,
        RunConfig::new(&copy),
        RunInput::Resume(Resume::value("hoot")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.action.as_deref(), Some("hoot"));
}
