//! How a run's events are stored: a run's events of one flush window in one row, yet
//! replayable from any event id.
//!
//! Live watchers get every event as the engine streams it, each with its own event id. The
//! events table gets one row per run per flush window (per writer batch): a *pack*, a JSON
//! array of the run's events of that batch in id order, stored under the id of the last of
//! them. Each item of a pack is an event as [`super::codec`] writes it, or a number `n`
//! (the next `n` ids were never stored: events of other modes, a terminal event held back);
//! consecutive token deltas of one message are one item, the text of all of them with
//! `cuts` (where each delta but the last ends, in bytes); a values event after another in the
//! same pack is the fields of the state that changed (`["w", step, {field: value}]`). Nothing in a pack names an id:
//! the last item ends at the row's id, and each item before it just before the next.
//!
//! A client that saw some of a pack's events live and reconnects with `Last-Event-ID` in
//! the middle of it gets exactly the events after that id: [`replay`] cuts the pack there.
//! Rows stored by earlier versions (one serde object per row, a coalesced delta with
//! `from_seq` and `cuts`) and a run's terminal event (stored as one object in the run's
//! end transaction) are read as they are.

use std::collections::HashMap;

use palgraph::{Event, RunEvent};
use serde_json::{json, Map, Value};

use super::codec;
use crate::store::EventRow;

/// Packs each run's rows of one batch (rows whose `event` is one [`codec::encode`]d event)
/// into one row per run and claim, in the order the runs first appear.
pub(crate) fn coalesce(rows: Vec<EventRow>) -> Vec<EventRow> {
    let mut groups: Vec<Vec<EventRow>> = Vec::new();
    let mut at: HashMap<(String, i64), usize> = HashMap::new();
    for row in rows {
        let key = (row.run_id.clone(), row.attempt);
        match at.get(&key) {
            Some(&i) => groups[i].push(row),
            None => {
                at.insert(key, groups.len());
                groups.push(vec![row]);
            }
        }
    }
    groups.into_iter().filter_map(pack).collect()
}

/// What a run's terminal row stores: the terminal event as serde writes it, or, when the
/// run ends with events not yet stored (`pending`, taken back from the writer), one pack of
/// those events and the terminal event last, under the terminal event's id.
pub(crate) fn terminal_row(pending: Vec<EventRow>, terminal: EventRow) -> Value {
    if pending.is_empty() {
        return terminal.event;
    }
    let terminal_event = terminal.event.clone();
    let mut rows = pending;
    rows.push(terminal);
    pack(rows).map_or(terminal_event, |row| row.event)
}

/// One run's rows as one pack row.
fn pack(mut rows: Vec<EventRow>) -> Option<EventRow> {
    rows.sort_by_key(|r| r.seq);
    rows.dedup_by_key(|r| r.seq);
    let last = rows.last()?;
    let (run_id, thread_id, attempt, key) = (
        last.run_id.clone(),
        last.thread_id.clone(),
        last.attempt,
        last.seq,
    );
    let mut items: Vec<Value> = Vec::with_capacity(rows.len());
    // The delta being gathered: its item's index, its text and cuts so far.
    let mut open: Option<(usize, String, Vec<usize>)> = None;
    let mut next = rows[0].seq;
    // The state of the pack's latest values event.
    let mut state: Option<Map<String, Value>> = None;
    for row in rows {
        if row.seq > next {
            close(&mut items, &mut open);
            items.push(Value::from(row.seq - next));
        }
        next = row.seq + 1;
        let Some(d) = codec::delta(&row.event) else {
            close(&mut items, &mut open);
            items.push(changes(&mut state, row.event));
            continue;
        };
        let continues = matches!(&open, Some((i, _, _)) if codec::delta(&items[*i])
            .is_some_and(|o| o.node == d.node && o.message_id == d.message_id));
        match &mut open {
            Some((_, text, cuts)) if continues => {
                cuts.push(text.len());
                text.push_str(d.text);
            }
            _ => {
                close(&mut items, &mut open);
                open = Some((items.len(), d.text.to_string(), Vec::new()));
                items.push(row.event.clone());
            }
        }
    }
    close(&mut items, &mut open);
    Some(EventRow {
        run_id,
        seq: key,
        thread_id,
        event: Value::Array(items),
        attempt,
    })
}

/// Writes the gathered delta into its item.
fn close(items: &mut [Value], open: &mut Option<(usize, String, Vec<usize>)>) {
    let Some((i, text, cuts)) = open.take() else {
        return;
    };
    if cuts.is_empty() {
        return;
    }
    if let Some(d) = codec::delta(&items[i]) {
        let merged = codec::coalesced(d.node, d.message_id, &text, &cuts);
        items[i] = merged;
    }
}

/// Stored rows as the events they were made from, after `after`, in id order: a pack or a
/// coalesced row becomes its events again, each with its own id, so a reader cannot tell the
/// difference (a client resuming from an id inside a row gets exactly the events after it).
pub(crate) fn replay(rows: Vec<EventRow>, after: u64) -> Vec<RunEvent> {
    let mut out: Vec<RunEvent> = Vec::with_capacity(rows.len());
    for row in rows {
        if row.seq <= after as i64 {
            continue;
        }
        let events = match &row.event {
            Value::Array(items) => unpack(items, &row),
            _ => legacy(&row),
        };
        out.extend(
            events
                .into_iter()
                .filter(|(seq, _)| *seq > after)
                .map(|(seq, event)| RunEvent { seq, event }),
        );
    }
    out.sort_by_key(|e| e.seq);
    out
}

/// A pack's events.
fn unpack(items: &[Value], row: &EventRow) -> Vec<(u64, Event)> {
    let spans: Vec<u64> = items
        .iter()
        .map(|i| i.as_u64().unwrap_or_else(|| codec::span(i) as u64))
        .collect();
    let total: u64 = spans.iter().sum();
    let mut first = (row.seq as u64 + 1).saturating_sub(total);
    let mut out = Vec::with_capacity(items.len());
    let mut state: Option<Map<String, Value>> = None;
    for (item, span) in items.iter().zip(spans) {
        if !item.is_number() {
            let item = whole(&mut state, item);
            out.extend(codec::decode(&item, first, &row.run_id, &row.thread_id));
        }
        first += span;
    }
    out
}

/// A values item (`["v", step, values]`) after another in the same pack, as the fields that
/// changed (`["w", step, {field: value}]`; a list that only grew, as what it gained:
/// `["w", step, {field: value}, {field: [added, ...]}]`), when the state has the same fields;
/// `state` becomes its values. Any other item as it is.
fn changes(state: &mut Option<Map<String, Value>>, item: Value) -> Value {
    let Some(("v", step, Value::Object(values), None)) = values_of(&item) else {
        return item;
    };
    let before = state.replace(values.clone());
    let Some(before) = before.filter(|b| b.len() == values.len()) else {
        return item;
    };
    let (mut changed, mut grown) = (Map::new(), Map::new());
    for (k, v) in values {
        match (before.get(k), v) {
            (Some(old), _) if old == v => {}
            (Some(Value::Array(old)), Value::Array(new)) if new.starts_with(old) => {
                grown.insert(k.clone(), Value::from(new[old.len()..].to_vec()));
            }
            (Some(_), _) => {
                changed.insert(k.clone(), v.clone());
            }
            (None, _) => return item,
        }
    }
    if grown.is_empty() {
        json!(["w", step, changed])
    } else {
        json!(["w", step, changed, grown])
    }
}

/// The values item a `w` item stands for, after the values `state` (see [`changes`]);
/// `state` becomes its values.
fn whole(state: &mut Option<Map<String, Value>>, item: &Value) -> Value {
    match values_of(item) {
        Some(("v", _, Value::Object(values), None)) => {
            *state = Some(values.clone());
            item.clone()
        }
        Some(("w", step, Value::Object(changed), grown)) => {
            let mut values = state.clone().unwrap_or_default();
            for (k, v) in changed {
                values.insert(k.clone(), v.clone());
            }
            for (k, added) in grown.and_then(Value::as_object).into_iter().flatten() {
                if let (Some(Value::Array(list)), Some(added)) =
                    (values.get_mut(k), added.as_array())
                {
                    list.extend(added.iter().cloned());
                }
            }
            *state = Some(values.clone());
            json!(["v", step, values])
        }
        _ => item.clone(),
    }
}

/// The code, step, values (or changed fields) and grown lists of a values item.
fn values_of(item: &Value) -> Option<(&str, &Value, &Value, Option<&Value>)> {
    let (code, step, values, grown) = match item.as_array()?.as_slice() {
        [code, step, values] => (code, step, values, None),
        [code, step, values, grown] => (code, step, values, Some(grown)),
        _ => return None,
    };
    match code.as_str()? {
        c @ "v" if grown.is_none() => Some((c, step, values, None)),
        c @ "w" => Some((c, step, values, grown)),
        _ => None,
    }
}

/// A row as earlier versions stored it: one serde event, or a coalesced delta object with
/// `from_seq` and `cuts`.
fn legacy(row: &EventRow) -> Vec<(u64, Event)> {
    let o = &row.event;
    let from = o.get("from_seq").and_then(Value::as_i64).unwrap_or(row.seq);
    let delta = || -> Option<Value> {
        if o.get("type")?.as_str()? != "message_delta" || from >= row.seq {
            return None;
        }
        let cuts: Vec<usize> = o
            .get("cuts")?
            .as_array()?
            .iter()
            .filter_map(|c| c.as_u64().map(|c| c as usize))
            .collect();
        Some(codec::coalesced(
            o.get("node")?.as_str()?,
            o.get("message_id")?.as_str()?,
            o.get("delta")?.as_str()?,
            &cuts,
        ))
    };
    match delta() {
        Some(item) => codec::decode(&item, from as u64, &row.run_id, &row.thread_id),
        None => codec::decode(o, row.seq as u64, &row.run_id, &row.thread_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(run: &str, seq: i64, event: Event) -> EventRow {
        EventRow {
            run_id: run.into(),
            seq,
            thread_id: "t".into(),
            event: codec::encode(&event),
            attempt: 1,
        }
    }

    fn delta(message: &str, text: &str) -> Event {
        Event::MessageDelta {
            node: "write".into(),
            message_id: message.into(),
            delta: text.into(),
        }
    }

    fn status() -> Event {
        Event::Status {
            node: "write".into(),
            message: "Writing...".into(),
            details: Value::Null,
        }
    }

    fn text(events: &[RunEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Event::MessageDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    fn seqs(events: &[RunEvent]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn a_runs_events_of_a_batch_become_one_row() {
        let rows = vec![
            row("r", 1, status()),
            row("r", 2, delta("m", "Hello")),
            row("other", 7, delta("m", "x")),
            row("r", 3, delta("m", ", wörld")),
            row("r", 4, delta("m", "!")),
            row("r", 5, delta("n", "next")),
            row("other", 8, delta("m", "y")),
        ];
        let original: Vec<RunEvent> = rows
            .iter()
            .filter(|r| r.run_id == "r")
            .flat_map(|r| replay(coalesce(vec![r.clone()]), 0))
            .collect();
        let stored = coalesce(rows);
        let ids: Vec<(String, i64)> = stored.iter().map(|r| (r.run_id.clone(), r.seq)).collect();
        assert_eq!(ids, vec![("r".into(), 5), ("other".into(), 8)]);
        assert_eq!(
            stored[0].event,
            json!([
                ["s", "write", "Writing..."],
                ["d", "write", "m", "Hello, wörld!", [5, 13]],
                ["d", "write", "n", "next"]
            ])
        );
        let all = replay(vec![stored[0].clone()], 0);
        assert_eq!(
            seqs(&all),
            vec![1, 2, 3, 4, 5],
            "every event, with its own id"
        );
        assert_eq!(all, original, "each event as it was");
        assert_eq!(text(&all[1..4]), "Hello, wörld!");
        assert_eq!(seqs(&replay(vec![stored[1].clone()], 0)), vec![7, 8]);
    }

    #[test]
    fn a_run_ends_with_its_last_events_in_its_terminal_row() {
        let done = Event::Completed {
            checkpoint_id: Some("c1".into()),
        };
        let terminal = EventRow {
            event: serde_json::to_value(&done).expect("an event is JSON"),
            ..row("r", 6, status())
        };
        // Nothing left to store: the terminal event alone, as serde writes it.
        assert_eq!(
            terminal_row(Vec::new(), terminal.clone()),
            json!({"type": "completed", "checkpoint_id": "c1"})
        );
        // Events 3 and 4 were still queued (5 was of a mode nobody stores).
        let pending = vec![
            row("r", 3, delta("m", "Hello")),
            row("r", 4, delta("m", "!")),
        ];
        let stored = terminal_row(pending, terminal.clone());
        assert_eq!(
            stored,
            json!([["d", "write", "m", "Hello!", [5]], 1, {"type": "completed", "checkpoint_id": "c1"}])
        );
        let mut rows = coalesce(vec![row("r", 2, status())]);
        rows.push(EventRow {
            event: stored,
            ..terminal
        });
        let all = replay(rows.clone(), 0);
        assert_eq!(seqs(&all), vec![2, 3, 4, 6]);
        assert_eq!(text(&all), "Hello!");
        assert_eq!(all[3].event, done);
        assert_eq!(seqs(&replay(rows.clone(), 3)), vec![4, 6]);
        assert_eq!(seqs(&replay(rows, 5)), vec![6]);
    }

    #[test]
    fn a_replay_from_inside_a_row_gives_exactly_the_rest() {
        let pieces = ["The ", "policy ", "keeps ", "records ", "seven ", "years."];
        let mut rows = vec![row("r", 1, status())];
        rows.extend(
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| row("r", i as i64 + 2, delta("m", p))),
        );
        let stored = coalesce(rows);
        assert_eq!(stored.len(), 1);
        for seen in 0..=pieces.len() + 1 {
            let rest = replay(stored.clone(), seen as u64);
            let from = seen.saturating_sub(1);
            assert_eq!(text(&rest), pieces[from..].concat(), "after event {seen}");
            assert_eq!(rest.len(), pieces.len() + 1 - seen, "one event per id");
            if let Some(e) = rest.first() {
                assert_eq!(e.seq, seen as u64 + 1);
            }
        }
    }

    #[test]
    fn gaps_claims_and_disorder_keep_every_id() {
        let mut later = row("r", 9, delta("m", "b"));
        later.attempt = 2;
        let reset = Event::MessageReset {
            node: "write".into(),
            message_id: "m".into(),
        };
        let rows = vec![
            row("r", 2, delta("m", "a")),
            later,
            row("r", 5, delta("m", "d")),
            row("r", 4, delta("m", "c")),
            row("r", 3, reset),
            row("r", 7, delta("m", "e")),
            row("r", 8, status()),
        ];
        let stored = coalesce(rows);
        assert_eq!(stored.len(), 2, "one row per claim");
        assert_eq!(stored[0].seq, 8);
        assert_eq!(stored[0].event[1][0], "x", "a reset is never merged");
        assert_eq!(stored[0].event[2][4], json!([1]), "c and d are one item");
        assert_eq!(stored[0].event[3], 1, "id 6 was never stored");
        let all = replay(stored, 0);
        assert_eq!(seqs(&all), vec![2, 3, 4, 5, 7, 8, 9]);
        assert_eq!(text(&all), "acdeb");
        assert_eq!(seqs(&replay(coalesce(vec![row("r", 6, status())]), 5)), [6]);
    }

    #[test]
    fn values_after_values_store_what_changed() {
        let values = |step: i64, findings: Value, messages: Value| Event::Values {
            step,
            values: json!({"findings": findings, "messages": messages}),
        };
        let h = json!([{"type": "human", "content": "We guarantee 99.9% uptime"}]);
        let both = json!([h[0], {"type": "ai", "content": "ok"}]);
        let rows = vec![
            row("r", 1, values(-1, json!([]), h.clone())),
            row("r", 2, status()),
            row("r", 3, values(0, json!(["legal", "style"]), h.clone())),
            row("r", 4, values(1, json!(["legal", "style"]), both.clone())),
            row("r", 5, values(2, json!(["legal", "style"]), both)),
            row("r", 7, values(4, json!(["other"]), json!([]))),
            row("r", 8, values(5, json!(["x"]), json!([]))),
            row(
                "r",
                6,
                Event::Values {
                    step: 3,
                    values: json!({"other": 1}),
                },
            ),
        ];
        let mut original: Vec<RunEvent> = rows
            .iter()
            .flat_map(|r| replay(coalesce(vec![r.clone()]), 0))
            .collect();
        original.sort_by_key(|e| e.seq);
        let stored = coalesce(rows);
        let items = stored[0].event.as_array().unwrap();
        assert_eq!(
            items[2],
            json!(["w", 0, {}, {"findings": ["legal", "style"]}])
        );
        assert_eq!(
            items[3],
            json!(["w", 1, {}, {"messages": [{"type": "ai", "content": "ok"}]}]),
            "a list that grew stores what it gained"
        );
        assert_eq!(items[4], json!(["w", 2, {}]));
        assert_eq!(items[5][0], "v", "other fields: the whole state");
        assert_eq!(
            items[6],
            json!(["v", 4, {"findings": ["other"], "messages": []}])
        );
        assert_eq!(
            items[7],
            json!(["w", 5, {"findings": ["x"]}]),
            "a list replaced"
        );
        assert_eq!(replay(stored.clone(), 0), original);
        for after in 0..8 {
            assert_eq!(replay(stored.clone(), after), original[after as usize..]);
        }
    }

    #[test]
    fn rows_of_earlier_versions_replay_as_before() {
        let legacy = |seq: i64, event: Value| EventRow {
            run_id: "r".into(),
            seq,
            thread_id: "t".into(),
            event,
            attempt: 0,
        };
        let rows = vec![
            legacy(
                1,
                json!({"type": "run_started", "run_id": "r", "thread_id": "t", "input": "turn"}),
            ),
            legacy(
                4,
                json!({"type": "message_delta", "node": "w", "message_id": "m",
                       "delta": "abc", "from_seq": 2, "cuts": [1, 2]}),
            ),
            legacy(5, json!({"type": "completed", "checkpoint_id": "c"})),
        ];
        let all = replay(rows.clone(), 0);
        assert_eq!(seqs(&all), vec![1, 2, 3, 4, 5]);
        assert_eq!(text(&all), "abc");
        assert_eq!(text(&replay(rows, 2)), "bc");
        assert!(matches!(
            &all[0].event,
            Event::RunStarted { run_id, thread_id, .. } if run_id == "r" && thread_id == "t"
        ));
    }
}
