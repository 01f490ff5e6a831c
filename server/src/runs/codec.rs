//! How one run event is written in the events table: a short positional array (`["n",
//! node, task_id, step, status]`) instead of serde's object with a key per field, and
//! without what the row already says (a run's own id). The events a run makes most (node
//! starts, status lines, tokens, custom events, node updates, values, checkpoints) have
//! a code of their own; any other event is stored as serde writes it, an object with a
//! `type`, which is also how earlier versions stored every event and how a run's terminal
//! event is stored. [`decode`] reads both.
//!
//! | code | event | fields after the code |
//! |---|---|---|
//! | `r` | `run_started` | input (the run and thread ids come from the row) |
//! | `n` | `node_started` | node, task_id, step, status |
//! | `s` | `status` | node, message, details (absent when null) |
//! | `c` | `custom` | node, value |
//! | `d` | `message_delta` | node, message_id, text, cuts (absent for one delta; see [`super::compact`]) |
//! | `x` | `message_reset` | node, message_id |
//! | `f` | `node_finished` | node, task_id, step, update, status, cached (absent when false) |
//! | `v` | `values` | step, values |
//! | `k` | `checkpoint` | checkpoint_id, step, source, next |
//!
//! (In a pack, a values event after another is stored as what changed: see
//! [`super::compact`].)

use palgraph::Event;
use serde_json::{json, Value};

/// An event as it is stored (`cuts` empty: one delta).
pub(crate) fn encode(event: &Event) -> Value {
    match event {
        Event::RunStarted { input, .. } => json!(["r", input]),
        Event::NodeStarted {
            node,
            task_id,
            step,
            status,
        } => json!(["n", node, task_id, step, status]),
        Event::Status {
            node,
            message,
            details,
        } if details.is_null() => json!(["s", node, message]),
        Event::Status {
            node,
            message,
            details,
        } => json!(["s", node, message, details]),
        Event::Custom { node, value } => json!(["c", node, value]),
        Event::MessageDelta {
            node,
            message_id,
            delta,
        } => json!(["d", node, message_id, delta]),
        Event::MessageReset { node, message_id } => json!(["x", node, message_id]),
        Event::NodeFinished {
            node,
            task_id,
            step,
            update,
            status,
            cached: false,
        } => json!(["f", node, task_id, step, update, status]),
        Event::NodeFinished {
            node,
            task_id,
            step,
            update,
            status,
            cached: true,
        } => json!(["f", node, task_id, step, update, status, true]),
        Event::Values { step, values } => json!(["v", step, values]),
        Event::Checkpoint {
            checkpoint_id,
            step,
            source,
            next,
        } => json!(["k", checkpoint_id, step, source, next]),
        other => serde_json::to_value(other).unwrap_or_default(),
    }
}

/// A stored token delta (code `d`), whole or coalesced.
pub(crate) struct Delta<'a> {
    /// The node writing the message.
    pub(crate) node: &'a str,
    /// The message.
    pub(crate) message_id: &'a str,
    /// The text of every delta it holds, one after the other.
    pub(crate) text: &'a str,
    /// Where each delta but the last ends in `text`, in bytes.
    pub(crate) cuts: Vec<usize>,
}

/// The stored delta `item` holds, if it is one.
pub(crate) fn delta(item: &Value) -> Option<Delta<'_>> {
    let a = item.as_array()?;
    if a.first()?.as_str()? != "d" {
        return None;
    }
    let cuts = match a.get(4) {
        Some(c) => c
            .as_array()?
            .iter()
            .map(|c| c.as_u64().map(|c| c as usize))
            .collect::<Option<Vec<_>>>()?,
        None => Vec::new(),
    };
    Some(Delta {
        node: a.get(1)?.as_str()?,
        message_id: a.get(2)?.as_str()?,
        text: a.get(3)?.as_str()?,
        cuts,
    })
}

/// A coalesced delta item: `text` made of deltas ending at `cuts` (and at its end).
pub(crate) fn coalesced(node: &str, message_id: &str, text: &str, cuts: &[usize]) -> Value {
    if cuts.is_empty() {
        json!(["d", node, message_id, text])
    } else {
        json!(["d", node, message_id, text, cuts])
    }
}

/// How many event ids a stored item stands for (a coalesced delta: one per delta).
pub(crate) fn span(item: &Value) -> usize {
    delta(item).map_or(1, |d| d.cuts.len() + 1)
}

/// The events a stored item stands for, the first with id `first` (`run_id` and
/// `thread_id`: the row's, for `run_started`); an item this version cannot read gives none.
pub(crate) fn decode(item: &Value, first: u64, run_id: &str, thread_id: &str) -> Vec<(u64, Event)> {
    if let Some(d) = delta(item) {
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(d.cuts.iter().copied())
            .chain(std::iter::once(d.text.len()))
            .collect();
        return bounds
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| {
                Some((
                    first + i as u64,
                    Event::MessageDelta {
                        node: d.node.to_string(),
                        message_id: d.message_id.to_string(),
                        delta: d.text.get(w[0]..w[1])?.to_string(),
                    },
                ))
            })
            .collect();
    }
    let event = match item.as_array() {
        Some(a) => one(a, run_id, thread_id),
        None => serde_json::from_value(item.clone()).ok(),
    };
    event.map(|e| vec![(first, e)]).unwrap_or_default()
}

fn one(a: &[Value], run_id: &str, thread_id: &str) -> Option<Event> {
    let s = |i: usize| a.get(i).and_then(Value::as_str).map(str::to_string);
    let step = |i: usize| a.get(i).and_then(Value::as_i64);
    let any = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Some(match a.first()?.as_str()? {
        "r" => Event::RunStarted {
            run_id: run_id.to_string(),
            thread_id: thread_id.to_string(),
            input: s(1)?,
        },
        "n" => Event::NodeStarted {
            node: s(1)?,
            task_id: s(2)?,
            step: step(3)?,
            status: s(4),
        },
        "s" => Event::Status {
            node: s(1)?,
            message: s(2)?,
            details: any(3),
        },
        "c" => Event::Custom {
            node: s(1)?,
            value: any(2),
        },
        "x" => Event::MessageReset {
            node: s(1)?,
            message_id: s(2)?,
        },
        "f" => Event::NodeFinished {
            node: s(1)?,
            task_id: s(2)?,
            step: step(3)?,
            update: any(4),
            status: s(5),
            cached: a.get(6).and_then(Value::as_bool).unwrap_or(false),
        },
        "v" => Event::Values {
            step: step(1)?,
            values: any(2),
        },
        "k" => Event::Checkpoint {
            checkpoint_id: s(1)?,
            step: step(2)?,
            source: s(3)?,
            next: serde_json::from_value(any(4)).ok()?,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use palgraph::CancelReason;

    fn events() -> Vec<Event> {
        vec![
            Event::RunStarted {
                run_id: "run".into(),
                thread_id: "thread".into(),
                input: "turn".into(),
            },
            Event::NodeStarted {
                node: "doc_resolver".into(),
                task_id: "t1".into(),
                step: 3,
                status: Some("Finding documents...".into()),
            },
            Event::NodeStarted {
                node: "quiet".into(),
                task_id: "t2".into(),
                step: -1,
                status: None,
            },
            Event::Status {
                node: "doc_resolver".into(),
                message: "Found 2 documents".into(),
                details: json!({"docs_found": [{"id": "d1", "title": "Policy"}]}),
            },
            Event::Status {
                node: "write".into(),
                message: "Writing...".into(),
                details: Value::Null,
            },
            Event::Custom {
                node: "write".into(),
                value: json!({"progress": 0.5, "list": [1, null]}),
            },
            Event::MessageDelta {
                node: "write".into(),
                message_id: "m".into(),
                delta: "héllo ".into(),
            },
            Event::MessageReset {
                node: "write".into(),
                message_id: "m".into(),
            },
            Event::NodeFinished {
                node: "write".into(),
                task_id: "t3".into(),
                step: 4,
                update: json!({"messages": [{"type": "ai", "content": "x"}]}),
                status: None,
                cached: false,
            },
            Event::NodeFinished {
                node: "write".into(),
                task_id: "t4".into(),
                step: 5,
                update: Value::Null,
                status: Some("Writing...".into()),
                cached: true,
            },
            Event::Values {
                step: 2,
                values: json!({"messages": []}),
            },
            Event::Checkpoint {
                checkpoint_id: "c1".into(),
                step: 2,
                source: "loop".into(),
                next: vec!["summarize".into()],
            },
            Event::Lagged { dropped: 3 },
            Event::Cancelled {
                reason: CancelReason::Superseded,
            },
        ]
    }

    #[test]
    fn every_event_reads_back_as_it_was() {
        for e in events() {
            let stored = encode(&e);
            assert_eq!(span(&stored), 1);
            let back = decode(&stored, 7, "run", "thread");
            assert_eq!(back, vec![(7, e.clone())], "stored as {stored}");
        }
    }

    #[test]
    fn the_frequent_events_are_short_arrays() {
        for e in events().iter().take(12) {
            let stored = encode(e);
            assert!(stored.is_array(), "{stored}");
            let serde = serde_json::to_value(e).unwrap().to_string().len();
            assert!(stored.to_string().len() < serde, "{stored} for {e:?}");
        }
    }

    #[test]
    fn serde_objects_of_earlier_versions_still_read() {
        let old = json!({"type": "status", "node": "a", "message": "b", "details": null});
        let back = decode(&old, 1, "r", "t");
        assert_eq!(back.len(), 1);
        assert!(matches!(&back[0].1, Event::Status { node, .. } if node == "a"));
        assert!(decode(&json!(["?", 1]), 1, "r", "t").is_empty());
    }
}
