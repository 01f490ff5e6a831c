//! Storage conformance: what every [`Checkpointer`] must do.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use palgraph::checkpoint::{
    json as raw, now_ms, CheckpointError, CheckpointRecord, FieldBlob, ListOptions, PendingWrite,
    PutCheckpoint,
};
use palgraph::testkit::fixtures::*;
use palgraph::{
    Checkpointer, Message, NodeContext, NodeError, RunConfig, RunError, StateGraph, END, START,
};
/// A graph writing every kind of field, one node.
pub(super) fn everything(cp: Arc<dyn Checkpointer>) -> palgraph::CompiledGraph<TestState> {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("all", |s: Arc<TestState>, _c: NodeContext| async move {
        let n = s.messages.len();
        Ok::<_, NodeError>(
            Upd::default()
                .messages(vec![
                    Message::ai(format!("answer {n}")).with_metadata("n", n)
                ])
                .registry(BTreeMap::from([(format!("k{}", n % 3), format!("v{n}"))]))
                .log(vec![format!("l{n}")])
                .action(Some(format!("a{n}")))
                .trail(vec![format!("t{n}"), format!("u{n}")])
                .confidence(n as f64 / 10.0)
                .best((n * 7 % 5) as u32)
                .counter(s.counter + 1),
        )
    });
    g.add_edge(START, "all");
    g.add_edge("all", END);
    build(g, cp)
}

fn filter(pairs: &[(&str, Value)]) -> Option<Map<String, Value>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

fn record(thread: &str, id: &str, parent: Option<&str>) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.to_string(),
        checkpoint_id: id.to_string(),
        parent_id: parent.map(str::to_string),
        seq: if parent.is_some() { 2 } else { 1 },
        created_at_ms: now_ms(),
        metadata: Map::from_iter([("source".into(), json!("loop"))]),
        versions: BTreeMap::new(),
        plan: raw("{}".into()).unwrap(),
    }
}

fn w(task: &str, channel: &str, idx: i64, v: Value) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        channel: channel.into(),
        idx,
        value: raw(v.to_string()).unwrap(),
    }
}

pub async fn every_reducer_round_trips_through_storage(cp: Arc<dyn Checkpointer>) {
    let g = everything(cp.clone());
    let t = thread();
    let mut live = None;
    for i in 0..4 {
        live = Some(
            ok(&g, RunConfig::new(&t), say(&format!("q{i} ünïcødé")))
                .await
                .state,
        );
    }
    // A fresh graph object reads everything back from storage only.
    let fresh = everything(cp.clone());
    let stored = fresh.get_state(&t).await.unwrap().unwrap().values;
    assert_eq!(*stored, *live.unwrap());
    assert_eq!(stored.registry.len(), 3);
    assert_eq!(stored.log.len(), 4);
    for snap in fresh
        .get_state_history(&t, &ListOptions::default())
        .await
        .unwrap()
    {
        assert!(snap.values.messages.len() <= 8);
    }
}

pub async fn history_is_newest_first_with_before_and_limit(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b"], cp.clone());
    let t = thread();
    for i in 0..4 {
        ok(&g, RunConfig::new(&t), say(&format!("m{i}"))).await;
    }
    let all = cp.list(&t, &ListOptions::default()).await.unwrap();
    assert_eq!(all.len(), 12);
    for pair in all.windows(2) {
        assert!(
            pair[0].checkpoint_id > pair[1].checkpoint_id,
            "newest first"
        );
        assert!(pair[0].created_at_ms >= pair[1].created_at_ms);
        assert_eq!(
            pair[0].parent_id.as_deref(),
            Some(pair[1].checkpoint_id.as_str()),
            "a linear chain"
        );
    }
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = cp
            .list(
                &t,
                &ListOptions {
                    before: before.clone(),
                    limit: Some(5),
                    filter: None,
                },
            )
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 5);
        before = Some(page.last().unwrap().checkpoint_id.clone());
        paged.extend(page.into_iter().map(|r| r.checkpoint_id));
    }
    assert_eq!(
        paged,
        all.iter()
            .map(|r| r.checkpoint_id.clone())
            .collect::<Vec<_>>()
    );
    let snaps = g
        .get_state_history(
            &t,
            &ListOptions {
                limit: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(snaps.len(), 3);
    assert_eq!(snaps[0].checkpoint_id, all[0].checkpoint_id);
}

pub async fn history_filters_on_metadata(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b"], cp.clone());
    let t = thread();
    let mut runs = Vec::new();
    for i in 0..3 {
        let cfg = RunConfig::new(&t).metadata("tag", if i == 1 { "special" } else { "plain" });
        runs.push(cfg.run_id.clone());
        ok(&g, cfg, say("x")).await;
    }
    let inputs = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("source", json!("input"))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(inputs.len(), 3);
    let steps = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("step", json!(-1))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(steps.len(), 1, "only the thread's first input is step -1");
    let input_steps: Vec<i64> = inputs
        .iter()
        .rev()
        .map(|r| r.metadata["step"].as_i64().unwrap())
        .collect();
    assert_eq!(input_steps, vec![-1, 2, 5], "steps count on across turns");
    let run1 = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("run_id", json!(runs[1]))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(run1.len(), 3);
    let special = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("tag", json!("special")), ("source", json!("loop"))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(special.len(), 2);
    assert!(special.iter().all(|r| r.run_id() == Some(runs[1].as_str())));
    let none = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("tag", json!("nope"))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(none.is_empty());
    let limited = cp
        .list(
            &t,
            &ListOptions {
                filter: filter(&[("tag", json!("plain"))]),
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
    assert_eq!(limited[0].run_id(), Some(runs[2].as_str()));
}

pub async fn pending_writes_are_idempotent_and_per_checkpoint(cp: Arc<dyn Checkpointer>) {
    let t = thread();
    let a = uuid::Uuid::now_v7().to_string();
    cp.put(&PutCheckpoint {
        record: record(&t, &a, None),
        blobs: vec![],
        expected_head: None,
        fence: None,
        flush: Default::default(),
    })
    .await
    .unwrap();
    cp.put_writes(
        &t,
        &a,
        vec![
            w("t1", "__step__:x", 0, json!("first")),
            w("t1", "__error__", 0, json!({"node": "n", "message": "one"})),
        ],
        None,
    )
    .await
    .unwrap();
    cp.put_writes(
        &t,
        &a,
        vec![
            w("t1", "__step__:x", 0, json!("second")),
            w("t1", "__error__", 0, json!({"node": "n", "message": "two"})),
        ],
        None,
    )
    .await
    .unwrap();
    cp.put_writes(
        &t,
        &a,
        vec![
            w("t0", "__result__", 0, json!({"update": null})),
            w("t1", "__step__:x", 1, json!("again")),
        ],
        None,
    )
    .await
    .unwrap();
    let got = cp.get(&t, Some(&a)).await.unwrap().unwrap();
    let flat: Vec<(String, String, i64, Value)> = got
        .writes
        .iter()
        .map(|w| {
            (
                w.task_id.clone(),
                w.channel.clone(),
                w.idx,
                serde_json::from_str(w.value.get()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flat,
        vec![
            ("t0".into(), "__result__".into(), 0, json!({"update": null})),
            (
                "t1".into(),
                "__error__".into(),
                0,
                json!({"node": "n", "message": "two"})
            ),
            ("t1".into(), "__step__:x".into(), 0, json!("first")),
            ("t1".into(), "__step__:x".into(), 1, json!("again")),
        ],
        "ordered by task, channel, idx; first write wins except __error__"
    );
    let b = uuid::Uuid::now_v7().to_string();
    cp.put(&PutCheckpoint {
        record: record(&t, &b, Some(&a)),
        blobs: vec![],
        expected_head: Some(a.clone()),
        fence: None,
        flush: Default::default(),
    })
    .await
    .unwrap();
    assert!(
        cp.get(&t, Some(&b))
            .await
            .unwrap()
            .unwrap()
            .writes
            .is_empty(),
        "a new checkpoint starts with no writes"
    );
    assert_eq!(cp.get(&t, Some(&a)).await.unwrap().unwrap().writes.len(), 4);
}

pub async fn unchanged_fields_are_not_written_again(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("reg", |s: Arc<TestState>, _c: NodeContext| async move {
        let upd = if s.registry.is_empty() {
            Upd::default().registry(BTreeMap::from([("doc".into(), "1".into())]))
        } else {
            Upd::default()
        };
        Ok::<_, NodeError>(upd)
    });
    g.add_node("talk", |_s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(Upd::default().messages(vec![Message::ai("ok")]))
    });
    g.add_edge(START, "reg");
    g.add_edge("reg", "talk");
    g.add_edge("talk", END);
    let g = build(g, cp.clone());
    let t = thread();
    for _ in 0..3 {
        ok(&g, RunConfig::new(&t), say("hi")).await;
    }
    let history = cp.list(&t, &ListOptions::default()).await.unwrap();
    let registry_versions: std::collections::HashSet<&String> = history
        .iter()
        .filter_map(|r| r.versions.get("registry"))
        .collect();
    assert_eq!(
        registry_versions.len(),
        1,
        "the registry was written once and referenced since"
    );
    let message_versions: std::collections::HashSet<&String> = history
        .iter()
        .filter_map(|r| r.versions.get("messages"))
        .collect();
    assert_eq!(
        message_versions.len(),
        6,
        "messages written twice per turn (input and talk)"
    );
    // Every checkpoint after the first `reg` step points at that same registry version.
    let head = cp.get(&t, None).await.unwrap().unwrap();
    let chain = head.fields.iter().find(|f| f.field == "messages").unwrap();
    assert!(
        chain.base.is_none() && chain.deltas.len() == 6,
        "small message lists are stored as deltas only"
    );
}

pub async fn put_with_stale_head_is_a_conflict(cp: Arc<dyn Checkpointer>) {
    let t = thread();
    let a = uuid::Uuid::now_v7().to_string();
    let b = uuid::Uuid::now_v7().to_string();
    cp.put(&PutCheckpoint {
        record: record(&t, &a, None),
        blobs: vec![],
        expected_head: None,
        fence: None,
        flush: Default::default(),
    })
    .await
    .unwrap();
    let err = cp
        .put(&PutCheckpoint {
            record: record(&t, &b, None),
            blobs: vec![],
            expected_head: None,
            fence: None,
            flush: Default::default(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CheckpointError::Conflict { actual: Some(x), .. } if x == &a),
        "{err}"
    );
    let err = cp
        .put(&PutCheckpoint {
            record: record(&t, &b, Some(&a)),
            blobs: vec![],
            expected_head: Some("not-the-head".into()),
            fence: None,
            flush: Default::default(),
        })
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Conflict { .. }));
    assert_eq!(cp.head(&t).await.unwrap().as_deref(), Some(a.as_str()));
    assert_eq!(
        cp.list(&t, &ListOptions::default()).await.unwrap().len(),
        1,
        "the loser wrote nothing"
    );
    // A conflicting put must not leave its field blobs behind either.
    let blob = FieldBlob {
        field: "counter".into(),
        version: b.clone(),
        prev: None,
        delta: false,
        value: raw("5".into()).unwrap(),
    };
    let mut rec = record(&t, &b, Some(&a));
    rec.versions.insert("counter".into(), b.clone());
    let err = cp
        .put(&PutCheckpoint {
            record: rec,
            blobs: vec![blob],
            expected_head: None,
            fence: None,
            flush: Default::default(),
        })
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Conflict { .. }));
    assert!(cp.get(&t, Some(&b)).await.unwrap().is_none());
}

pub async fn racing_writers_cannot_corrupt_the_chain(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b", "c"], cp.clone());
    let t = thread();
    let mut completed = 0;
    let rounds = 6;
    for round in 0..rounds {
        let (g1, g2, t1, t2) = (g.clone(), g.clone(), t.clone(), t.clone());
        let r1 = tokio::spawn(async move {
            g1.invoke(RunConfig::new(&t1), say(&format!("x{round}")))
                .await
        });
        let r2 = tokio::spawn(async move {
            g2.invoke(RunConfig::new(&t2), say(&format!("y{round}")))
                .await
        });
        for r in [r1.await.unwrap(), r2.await.unwrap()] {
            match r {
                Ok(_) => completed += 1,
                Err(RunError::Checkpoint(CheckpointError::Conflict { .. })) => {}
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
    assert!(
        completed >= rounds,
        "at least one writer of each pair finishes"
    );
    // The chain from the head back to the root is whole and every checkpoint loads.
    let all = cp.list(&t, &ListOptions::default()).await.unwrap();
    let ids: std::collections::HashSet<&str> =
        all.iter().map(|r| r.checkpoint_id.as_str()).collect();
    let mut cur = cp.head(&t).await.unwrap();
    let mut walked = 0;
    while let Some(id) = cur {
        let rec = all.iter().find(|r| r.checkpoint_id == id).unwrap();
        cur = rec.parent_id.clone();
        if let Some(p) = &cur {
            assert!(ids.contains(p.as_str()), "parent {p} exists");
        }
        walked += 1;
    }
    assert!(walked >= 4);
    for r in &all {
        assert!(g
            .get_state_at(&t, Some(&r.checkpoint_id))
            .await
            .unwrap()
            .is_some());
    }
    // A turn that starts while another is under way either loses at once or builds on the
    // other's last checkpoint, which then loses at its next save: the loser's input and the
    // nodes it finished stay, as after a crash. So the log is a run of segments, each one
    // turn's a, b, c or a prefix of them, never two turns' nodes mixed; the whole segments
    // are exactly the finished turns.
    let head = g.get_state(&t).await.unwrap().unwrap().values;
    let mut whole = 0;
    let mut at = 0;
    for (i, node) in head.log.iter().enumerate() {
        at = match (at, node.as_str()) {
            (_, "a") => 1,
            (1, "b") => 2,
            (2, "c") => {
                whole += 1;
                0
            }
            _ => panic!("node {node} out of order at {i}: {:?}", head.log),
        };
    }
    assert_eq!(whole, completed, "each finished turn ran a, b, c once");
    let humans = head.messages.len();
    assert!(
        (completed..=2 * rounds).contains(&humans),
        "every finished turn's input is kept, no other input twice: {humans}"
    );
}

/// Many puts at the same instant (the Postgres backend commits them as a group): each one
/// resolves only once it is durable, and racing puts for one place still conflict.
pub async fn simultaneous_puts_are_each_durable_or_a_conflict(cp: Arc<dyn Checkpointer>) {
    let id = || uuid::Uuid::now_v7().to_string();
    let threads: Vec<String> = (0..48).map(|i| format!("{}-{i}", thread())).collect();
    let roots: Vec<String> = threads.iter().map(|_| id()).collect();
    let puts: Vec<PutCheckpoint> = threads
        .iter()
        .zip(&roots)
        .map(|(t, root)| PutCheckpoint {
            record: record(t, root, None),
            blobs: vec![],
            expected_head: None,
            fence: None,
            flush: Default::default(),
        })
        .collect();
    for r in futures_util::future::join_all(puts.iter().map(|p| cp.put(p))).await {
        r.unwrap();
    }
    // Every thread: four writers race for checkpoint 2 at once, all in flight together.
    let mut racers = Vec::new();
    for (t, root) in threads.iter().zip(&roots) {
        for _ in 0..4 {
            let next = id();
            let mut rec = record(t, &next, Some(root));
            rec.versions.insert("counter".into(), next.clone());
            let blob = FieldBlob {
                field: "counter".into(),
                version: next.clone(),
                prev: None,
                delta: false,
                value: raw(format!("\"{next}\"")).unwrap(),
            };
            racers.push((t.clone(), next, rec, blob, root.clone()));
        }
    }
    let racing: Vec<PutCheckpoint> = racers
        .iter()
        .map(|(_, _, rec, blob, root)| PutCheckpoint {
            record: rec.clone(),
            blobs: vec![blob.clone()],
            expected_head: Some(root.clone()),
            fence: None,
            flush: Default::default(),
        })
        .collect();
    let outcomes = futures_util::future::join_all(racing.iter().map(|p| cp.put(p))).await;
    let mut winners: HashMap<&str, &str> = HashMap::new();
    for ((t, next, ..), outcome) in racers.iter().zip(outcomes) {
        match outcome {
            Ok(()) => assert!(
                winners.insert(t.as_str(), next.as_str()).is_none(),
                "two racers won on {t}"
            ),
            Err(CheckpointError::Conflict { .. }) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), threads.len(), "one racer wins per thread");
    for t in &threads {
        let head = cp.head(t).await.unwrap().unwrap();
        assert_eq!(head, winners[t.as_str()], "the winner is the head");
        let loaded = cp.get(t, None).await.unwrap().unwrap();
        let chain = loaded.fields.iter().find(|f| f.field == "counter").unwrap();
        assert_eq!(chain.version, head);
        assert_eq!(
            chain.base.as_ref().map(|v| v.get()),
            Some(format!("\"{head}\"").as_str()),
            "the winner's field value is stored with it"
        );
        assert_eq!(cp.list(t, &ListOptions::default()).await.unwrap().len(), 2);
    }
}

pub async fn unicode_and_a_five_megabyte_field_round_trip(cp: Arc<dyn Checkpointer>) {
    let unit = "Größe 大きい 🚀 \"quoted\" \\ back\\slash\n";
    let big: String = unit.repeat(5_000_000 / unit.len() + 1);
    assert!(big.len() >= 5_000_000);
    let big2 = big.clone();
    let mut g = StateGraph::<TestState>::new();
    g.add_node("store", move |_s: Arc<TestState>, _c: NodeContext| {
        let big = big2.clone();
        async move {
            Ok::<_, NodeError>(
                Upd::default()
                    .registry(BTreeMap::from([("big".into(), big)]))
                    .messages(vec![Message::ai("مرحبا שלום 你好 👋🏽 \u{200d} tab\t")]),
            )
        }
    });
    g.add_edge(START, "store");
    g.add_edge("store", END);
    let g = build(g, cp);
    let t = thread();
    ok(&g, RunConfig::new(&t), say("e\u{301}moji 🧪 and \u{1F600}")).await;
    let s = g.get_state(&t).await.unwrap().unwrap().values;
    assert_eq!(s.registry.get("big").map(String::len), Some(big.len()));
    assert!(s.registry.get("big") == Some(&big));
    assert_eq!(s.messages[0].content, "e\u{301}moji 🧪 and \u{1F600}");
    assert_eq!(s.messages[1].content, "مرحبا שלום 你好 👋🏽 \u{200d} tab\t");
}

pub async fn thousand_turns_on_one_thread(cp: Arc<dyn Checkpointer>) {
    let mut g = StateGraph::<TestState>::new();
    g.add_node("reply", |s: Arc<TestState>, _c: NodeContext| async move {
        Ok::<_, NodeError>(
            Upd::default().messages(vec![Message::ai(format!("reply {}", s.messages.len()))]),
        )
    });
    g.add_edge(START, "reply");
    g.add_edge("reply", END);
    let g = build(g, cp.clone());
    let t = thread();
    let mut last = None;
    for i in 0..1000 {
        last = Some(
            ok(
                &g,
                RunConfig::new(&t),
                say(&format!("turn {i} with some words to make it realistic")),
            )
            .await
            .state,
        );
    }
    let live = last.unwrap();
    assert_eq!(live.messages.len(), 2000);
    let stored = g.get_state(&t).await.unwrap().unwrap().values;
    assert_eq!(stored.messages, live.messages);
    let head = cp.get(&t, None).await.unwrap().unwrap();
    let chain = head.fields.iter().find(|f| f.field == "messages").unwrap();
    assert!(chain.base.is_some(), "long lists get snapshots");
    let delta_bytes: usize = chain.deltas.iter().map(|d| d.get().len()).sum();
    let base_bytes = chain.base.as_ref().map(|b| b.get().len()).unwrap_or(0);
    assert!(
        delta_bytes <= base_bytes.max(16 * 1024) + 1024,
        "reading costs at most about twice the value"
    );
}

pub async fn concurrent_threads_do_not_interfere(cp: Arc<dyn Checkpointer>) {
    let g = linear(&["a", "b"], cp);
    let mut handles = Vec::new();
    for i in 0..16 {
        let g = g.clone();
        handles.push(tokio::spawn(async move {
            let t = format!("{}-{i}", thread());
            for j in 0..4 {
                ok(&g, RunConfig::new(&t), say(&format!("{i}:{j}"))).await;
            }
            (t, i)
        }));
    }
    for h in handles {
        let (t, i) = h.await.unwrap();
        let s = g.get_state(&t).await.unwrap().unwrap().values;
        assert_eq!(
            contents(&s.messages),
            (0..4).map(|j| format!("{i}:{j}")).collect::<Vec<_>>()
        );
        assert_eq!(s.log.len(), 8);
    }
}
