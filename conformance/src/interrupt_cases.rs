//! Interrupts and resumes, run on any checkpointer.
#![allow(missing_docs, clippy::unwrap_used, clippy::type_complexity)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, ListOptions, Message, NodeContext, NodeError, Resume, RunConfig, RunError,
    RunInput, RunStatus, StateGraph, END, START,
};
fn interrupt_graph(
    cp: Arc<dyn Checkpointer>,
    body: Counter,
    step: Counter,
    action_seen: Arc<Mutex<Vec<Option<String>>>>,
) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("prep", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().action(Some("chosen".into())))
    });
    g.add_node("ask", move |s: Arc<TestState>, ctx: NodeContext| {
        let (body, step, seen) = (body.clone(), step.clone(), action_seen.clone());
        async move {
            body.bump();
            seen.lock().unwrap().push(s.action.clone());
            let drafted: String = ctx
                .step("draft", async {
                    step.bump();
                    Ok::<_, NodeError>("draft-1".to_string())
                })
                .await?;
            let answer: String =
                ctx.interrupt(json!({"question": "approve?", "draft": drafted}))?;
            Ok(Upd::default().messages(vec![Message::ai(format!("{drafted}:{answer}"))]))
        }
    });
    g.add_edge(START, "prep");
    g.add_edge("prep", "ask");
    g.add_edge("ask", END);
    build(g, cp)
}

pub async fn resume_reenters_node_but_not_durable_step(cp: Arc<dyn Checkpointer>) {
    let (body, step) = (Counter::default(), Counter::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let g = interrupt_graph(cp, body.clone(), step.clone(), seen.clone());
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("please")).await;
    let RunStatus::Interrupted(ints) = &out.status else {
        panic!("expected interrupt, got {:?}", out.status)
    };
    assert_eq!(ints.len(), 1);
    assert_eq!(
        ints[0].value,
        json!({"question": "approve?", "draft": "draft-1"})
    );
    assert_eq!(ints[0].node, "ask");
    assert_eq!((body.get(), step.get()), (1, 1));
    let snap = g.get_state(&t).await.unwrap().unwrap();
    assert_eq!(snap.next, vec!["ask"]);
    assert_eq!(snap.interrupts.len(), 1);

    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("yes")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(body.get(), 2, "the node body runs again from its top");
    assert_eq!(step.get(), 1, "the durable step does not");
    assert_eq!(out.state.messages.last().unwrap().content, "draft-1:yes");
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![Some("chosen".to_string()), Some("chosen".to_string())],
        "a resume is not a new turn: transient fields are not reset"
    );
}

/// A memo step is stored only with its node's interrupt, in that write: the node
/// re-entered with the answer gets it back without running it; a node that finishes stores
/// none of its memo steps.
pub async fn memo_steps_are_stored_with_an_interrupt_and_only_then(cp: Arc<dyn Checkpointer>) {
    let reads = Counter::default();
    let mut g = StateGraph::<TestState>::new();
    let r = reads.clone();
    g.add_node("ask", move |s: Arc<TestState>, ctx: NodeContext| {
        let r = r.clone();
        async move {
            let library: Vec<String> = ctx
                .memo("library", async {
                    r.bump();
                    Ok::<_, NodeError>(vec![format!("doc-{}", r.get())])
                })
                .await?;
            let asks = s.messages.last().is_some_and(|m| m.content == "ask me");
            let answer: String = if asks {
                ctx.interrupt(json!({"pick one of": library}))?
            } else {
                "none".into()
            };
            Ok(Upd::default().messages(vec![Message::ai(format!("{}:{answer}", library[0]))]))
        }
    });
    g.add_edge(START, "ask");
    g.add_edge("ask", END);
    let g = build(g, cp.clone());
    let steps = |writes: &[palgraph::checkpoint::PendingWrite]| {
        writes
            .iter()
            .filter(|w| w.channel.starts_with("__step__:"))
            .map(|w| w.channel.clone())
            .collect::<Vec<_>>()
    };

    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("ask me")).await;
    assert!(
        matches!(out.status, RunStatus::Interrupted(_)),
        "{:?}",
        out.status
    );
    assert_eq!(reads.get(), 1);
    let head = cp.get(&t, None).await.unwrap().unwrap();
    assert_eq!(steps(&head.writes), vec!["__step__:library"]);
    assert!(head.writes.iter().any(|w| w.channel == "__interrupt__"));
    let out = ok(&g, RunConfig::new(&t), RunInput::Resume(Resume::value("a"))).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(reads.get(), 1, "the re-entered node gets the memo back");
    assert_eq!(out.state.messages.last().unwrap().content, "doc-1:a");

    // A node that finishes: the memo runs and nothing of it is stored.
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("just answer")).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(reads.get(), 2);
    for c in cp.list(&t, &ListOptions::default()).await.unwrap() {
        let loaded = cp.get(&t, Some(&c.checkpoint_id)).await.unwrap().unwrap();
        assert_eq!(
            steps(&loaded.writes),
            Vec::<String>::new(),
            "{}",
            c.checkpoint_id
        );
    }
}

/// A memo step's result is kept as a value for the task: an attempt after a retryable
/// failure gets it back without running it again, and nothing of it is stored when the node
/// then finishes.
pub async fn a_retried_node_gets_its_memo_back(cp: Arc<dyn Checkpointer>) {
    let reads = Counter::default();
    let attempts = Counter::default();
    let mut g = StateGraph::<TestState>::new();
    let (r, a) = (reads.clone(), attempts.clone());
    g.add_node("flaky", move |_s: Arc<TestState>, ctx: NodeContext| {
        let (r, a) = (r.clone(), a.clone());
        async move {
            let library: Arc<Vec<String>> = ctx
                .memo("library", async {
                    r.bump();
                    Ok::<_, NodeError>(Arc::new(vec![format!("doc-{}", r.get())]))
                })
                .await?;
            if a.bump() < 2 {
                return Err(NodeError::retryable("503"));
            }
            Ok(Upd::default().messages(vec![Message::ai(library[0].clone())]))
        }
    })
    .retry(
        palgraph::RetryPolicy::attempts(3)
            .initial_interval(std::time::Duration::from_millis(1))
            .no_jitter(),
    );
    g.add_edge(START, "flaky");
    g.add_edge("flaky", END);
    let g = build(g, cp.clone());
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(attempts.get(), 2);
    assert_eq!(reads.get(), 1, "the retry gets the memo back");
    assert_eq!(out.state.messages.last().unwrap().content, "doc-1");
    for c in cp.list(&t, &ListOptions::default()).await.unwrap() {
        let loaded = cp.get(&t, Some(&c.checkpoint_id)).await.unwrap().unwrap();
        assert!(
            !loaded
                .writes
                .iter()
                .any(|w| w.channel.starts_with("__step__:")),
            "{}",
            c.checkpoint_id
        );
    }
}

pub async fn two_interrupts_in_one_node_resume_in_order(cp: Arc<dyn Checkpointer>) {
    let body = Counter::default();
    let b = body.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("form", move |_s: Arc<TestState>, ctx: NodeContext| {
        let b = b.clone();
        async move {
            b.bump();
            let name: String = ctx.interrupt("name?")?;
            let age: u32 = ctx.interrupt("age?")?;
            Ok::<_, NodeError>(Upd::default().log(vec![format!("{name}/{age}")]))
        }
    });
    g.add_edge(START, "form");
    g.add_edge("form", END);
    let g = build(g, cp);
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("start")).await;
    assert_eq!(out.interrupts()[0].value, json!("name?"));
    assert_eq!(out.interrupts()[0].index, 0);
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("Ada")),
    )
    .await;
    assert_eq!(out.interrupts().len(), 1);
    assert_eq!(out.interrupts()[0].value, json!("age?"));
    assert_eq!(out.interrupts()[0].index, 1);
    let out = ok(&g, RunConfig::new(&t), RunInput::Resume(Resume::value(36))).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["Ada/36"]);
    assert_eq!(body.get(), 3);
}

pub async fn parallel_interrupts_are_answered_by_id(cp: Arc<dyn Checkpointer>) {
    let counts = [Counter::default(), Counter::default()];
    let mut g = StateGraph::<TestState>::new();
    for (i, name) in ["p1", "p2"].into_iter().enumerate() {
        let c = counts[i].clone();
        g.add_node(name, move |_s: Arc<TestState>, ctx: NodeContext| {
            let c = c.clone();
            async move {
                c.bump();
                let v: String = ctx.interrupt(format!("{name}?"))?;
                Ok::<_, NodeError>(Upd::default().log(vec![format!("{name}:{v}")]))
            }
        });
        g.add_edge(START, name);
        g.add_edge(name, END);
    }
    let g = build(g, cp);
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    let ints = out.interrupts().to_vec();
    assert_eq!(ints.len(), 2);
    assert_ne!(ints[0].id, ints[1].id);
    let before = g.get_state(&t).await.unwrap().unwrap().checkpoint_id;

    let err = g
        .invoke(RunConfig::new(&t), RunInput::Resume(Resume::value("x")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::AmbiguousResume { ref pending } if pending.len() == 2),
        "{err}"
    );
    let err = g
        .invoke(
            RunConfig::new(&t),
            RunInput::Resume(Resume::ById(BTreeMap::from([("nope".into(), json!(1))]))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::UnknownInterrupt { .. }));
    assert_eq!(
        g.get_state(&t).await.unwrap().unwrap().checkpoint_id,
        before,
        "refusals change nothing"
    );

    let p1 = ints.iter().find(|i| i.node == "p1").unwrap().id.clone();
    let p2 = ints.iter().find(|i| i.node == "p2").unwrap().id.clone();
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::ById(BTreeMap::from([(p1, json!("a"))]))),
    )
    .await;
    assert_eq!(out.interrupts().len(), 1);
    assert_eq!(
        out.interrupts()[0].id,
        p2,
        "p2 still waits under its own id"
    );
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::ById(BTreeMap::from([(p2, json!("b"))]))),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["p1:a", "p2:b"]);
    assert_eq!(
        counts[0].get(),
        2,
        "p1 finished on the second run and was not run again"
    );
    assert_eq!(counts[1].get(), 2);
}

pub async fn resume_with_nothing_pending_is_refused_and_changes_nothing(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b"], cp.clone());
    let t = thread();
    let err = g
        .invoke(RunConfig::new(&t), RunInput::Resume(Resume::value(1)))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::NothingToResume { .. }), "{err}");
    assert!(err.is_refusal());
    assert!(
        g.get_state(&t).await.unwrap().is_none(),
        "nothing written for an unknown thread"
    );
    ok(&g, RunConfig::new(&t), say("hi")).await;
    let before = cp.list(&t, &ListOptions::default()).await.unwrap();
    let err = g
        .invoke(RunConfig::new(&t), RunInput::Resume(Resume::value(1)))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::NothingToResume { .. }));
    let after = cp.list(&t, &ListOptions::default()).await.unwrap();
    assert_eq!(
        before.iter().map(|r| &r.checkpoint_id).collect::<Vec<_>>(),
        after.iter().map(|r| &r.checkpoint_id).collect::<Vec<_>>()
    );
    let head = cp.get(&t, None).await.unwrap().unwrap();
    assert!(head.writes.is_empty(), "no resume write was recorded");
}

pub async fn finished_sibling_is_not_rerun_after_an_interrupt(cp: Arc<dyn Checkpointer>) {
    let fast = Counter::default();
    let f2 = fast.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("fast", move |_s: Arc<TestState>, _c: NodeContext| {
        let f = f2.clone();
        async move {
            f.bump();
            Ok::<_, NodeError>(Upd::default().log(vec!["fast".into()]))
        }
    });
    g.add_node("asker", |_s: Arc<TestState>, ctx: NodeContext| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let v: String = ctx.interrupt("ok?")?;
        Ok::<_, NodeError>(Upd::default().log(vec![format!("asker:{v}")]))
    });
    for n in ["fast", "asker"] {
        g.add_edge(START, n);
        g.add_edge(n, END);
    }
    let g = build(g, cp.clone());
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("go")).await;
    assert_eq!(out.interrupts().len(), 1);
    assert!(
        out.state.log.is_empty(),
        "the step is not applied while a task waits"
    );
    let head = cp.get(&t, None).await.unwrap().unwrap();
    assert!(
        head.writes.iter().any(|w| w.channel == "__result__"),
        "fast's result is a pending write"
    );
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("yes")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(fast.get(), 1, "the finished sibling was not run again");
    assert_eq!(out.state.log, vec!["fast", "asker:yes"]);
}

pub async fn new_turn_abandons_a_pending_interrupt(cp: Arc<dyn Checkpointer>) {
    let g = interrupt_graph(
        cp.clone(),
        Counter::default(),
        Counter::default(),
        Default::default(),
    );
    let t = thread();
    let first = ok(&g, RunConfig::new(&t), say("one")).await.interrupts()[0]
        .id
        .clone();
    let second = ok(&g, RunConfig::new(&t), say("two")).await;
    let id2 = second.interrupts()[0].id.clone();
    assert_ne!(first, id2, "a fresh prompt, not the old one again");
    let inputs = cp
        .list(
            &t,
            &ListOptions {
                filter: Some(serde_json::Map::from_iter([(
                    "source".into(),
                    json!("input"),
                )])),
                limit: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        inputs[0].metadata.get("abandoned_interrupts"),
        Some(&json!([first.clone()]))
    );
    let err = g
        .invoke(
            RunConfig::new(&t),
            RunInput::Resume(Resume::ById(BTreeMap::from([(first, json!("late"))]))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::UnknownInterrupt { .. }));
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("ok")),
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        contents(&out.state.messages),
        vec!["one", "two", "draft-1:ok"]
    );
}

/// A node asking two questions in turn (its body counted by `body`), with the state cache
/// on.
fn form_graph(cp: Arc<dyn Checkpointer>, body: Counter) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("form", move |_s: Arc<TestState>, ctx: NodeContext| {
        let b = body.clone();
        async move {
            b.bump();
            let name: String = ctx.interrupt("name?")?;
            let age: u32 = ctx.interrupt("age?")?;
            Ok::<_, NodeError>(Upd::default().log(vec![format!("{name}/{age}")]))
        }
    });
    g.add_edge(START, "form");
    g.add_edge("form", END);
    g.compile().expect("valid graph").with_checkpointer(cp)
}

/// The run that stopped on an interrupt leaves its checkpoint (with every write stored at
/// it) in the state cache; the resume writes its answers from that copy without reading
/// storage. A copy that is no longer current (another process answered in the meantime) is
/// not trusted: the resume reads storage and answers what is pending there.
pub async fn a_resume_from_the_cached_head_reads_nothing_and_a_stale_copy_is_not_trusted(
    cp: Arc<dyn Checkpointer>,
) {
    let counting = Arc::new(palgraph::testkit::counting::Counting::new(cp));
    let body = Counter::default();
    let g = form_graph(counting.clone(), body.clone());
    let t = thread();
    let out = ok(&g, RunConfig::new(&t), say("start")).await;
    assert_eq!(out.interrupts()[0].value, json!("name?"));
    let before = counting.snapshot();
    let out = ok(
        &g,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("Ada")),
    )
    .await;
    let after = counting.snapshot();
    assert_eq!(out.interrupts()[0].value, json!("age?"));
    assert_eq!(after.2 - before.2, 0, "the resume read nothing");
    assert_eq!(after.1 - before.1, 2, "the answer, then the next interrupt");
    // Again from the copy the second interrupt left (it knows the first answer too).
    let out = ok(&g, RunConfig::new(&t), RunInput::Resume(Resume::value(36))).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["Ada/36"]);
    assert_eq!(counting.snapshot().2 - after.2, 0, "no read either");
    assert_eq!(body.get(), 3);

    // Another process (a graph with its own cache) answers the first question: the head
    // is the same checkpoint, with more writes than this process's copy of it.
    let t = thread();
    ok(&g, RunConfig::new(&t), say("start")).await;
    let other = form_graph(counting.clone(), Counter::default());
    let out = ok(
        &other,
        RunConfig::new(&t),
        RunInput::Resume(Resume::value("Grace")),
    )
    .await;
    assert_eq!(out.interrupts()[0].value, json!("age?"));
    // This process's copy still waits for a name; the answer goes to the age instead.
    let before = counting.snapshot();
    let out = ok(&g, RunConfig::new(&t), RunInput::Resume(Resume::value(85))).await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.log, vec!["Grace/85"]);
    assert!(
        counting.snapshot().2 > before.2,
        "the stale copy sent the resume to storage"
    );
    let head = counting.get(&t, None).await.unwrap().unwrap();
    assert!(
        head.writes.is_empty(),
        "the turn completed: {:?}",
        head.writes
    );
}
