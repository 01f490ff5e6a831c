//! How token deltas are stored: coalesced, yet replayable from any event id.
//!
//! Live watchers get every delta as the engine streams it, each with its own event id. The
//! events table gets fewer rows: consecutive deltas of one message that reach the writer in
//! the same flush window become one row, stored under the id of the last of them, with
//! `from_seq` (the id of the first) and `cuts` (where each delta but the last ends, in
//! bytes). A client that saw some of them live and reconnects with `Last-Event-ID` in the
//! middle of such a row gets exactly the text after that id: [`replay`] cuts the row there.

use palgraph::{Event, RunEvent};
use serde_json::{json, Value};

use crate::store::EventRow;

/// The parts of a stored delta row this module reads and writes.
struct Delta<'a> {
    node: &'a str,
    message_id: &'a str,
    delta: &'a str,
}

fn delta_of(row: &EventRow) -> Option<Delta<'_>> {
    let o = row.event.as_object()?;
    if o.get("type")?.as_str()? != "message_delta" {
        return None;
    }
    Some(Delta {
        node: o.get("node")?.as_str()?,
        message_id: o.get("message_id")?.as_str()?,
        delta: o.get("delta")?.as_str()?,
    })
}

/// Where a row's coalesced range starts, and where each of its deltas but the last ends.
fn range_of(row: &EventRow) -> (i64, Vec<usize>) {
    let from = row
        .event
        .get("from_seq")
        .and_then(Value::as_i64)
        .unwrap_or(row.seq);
    let cuts = row
        .event
        .get("cuts")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_u64().map(|c| c as usize))
                .collect()
        })
        .unwrap_or_default();
    (from, cuts)
}

/// Merges, within one batch, each run's consecutive deltas of one message (consecutive
/// ids, same claim) into one row. Other rows keep their order.
pub(crate) fn coalesce(rows: Vec<EventRow>) -> Vec<EventRow> {
    let mut out: Vec<EventRow> = Vec::with_capacity(rows.len());
    // The index in `out` of each run's latest row.
    let mut latest: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for row in rows {
        if let Some(&i) = latest.get(&row.run_id) {
            if let Some(merged) = merge(&out[i], &row) {
                out[i] = merged;
                continue;
            }
        }
        latest.insert(row.run_id.clone(), out.len());
        out.push(row);
    }
    out
}

/// `prev` and `next` as one row, when `next` continues `prev`'s message right after it.
fn merge(prev: &EventRow, next: &EventRow) -> Option<EventRow> {
    if next.seq != prev.seq + 1 || next.attempt != prev.attempt {
        return None;
    }
    let (a, b) = (delta_of(prev)?, delta_of(next)?);
    if a.message_id != b.message_id || a.node != b.node {
        return None;
    }
    let (from, mut cuts) = range_of(prev);
    cuts.push(a.delta.len());
    let text = format!("{}{}", a.delta, b.delta);
    Some(EventRow {
        run_id: next.run_id.clone(),
        seq: next.seq,
        thread_id: next.thread_id.clone(),
        event: json!({
            "type": "message_delta",
            "node": a.node,
            "message_id": a.message_id,
            "delta": text,
            "from_seq": from,
            "cuts": cuts,
        }),
        attempt: next.attempt,
    })
}

/// Stored rows as the events they were made from, after `after`: a coalesced row becomes its
/// deltas again, each with its own id, so a reader cannot tell the difference (a client
/// resuming from an id inside a row gets exactly the text after it).
pub(crate) fn replay(rows: Vec<EventRow>, after: u64) -> Vec<RunEvent> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        if row.seq <= after as i64 {
            continue;
        }
        let (from, cuts) = range_of(&row);
        if from < row.seq {
            if let Some(d) = delta_of(&row) {
                out.extend(split(&d, from, row.seq, &cuts).filter(|e| e.seq > after));
                continue;
            }
        }
        if let Ok(event) = serde_json::from_value::<Event>(row.event) {
            out.push(RunEvent {
                seq: row.seq as u64,
                event,
            });
        }
    }
    out
}

/// A coalesced row's deltas `from..=to`, cut at `cuts`.
fn split<'a>(
    d: &'a Delta<'a>,
    from: i64,
    to: i64,
    cuts: &'a [usize],
) -> impl Iterator<Item = RunEvent> + 'a {
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().copied())
        .chain(std::iter::once(d.delta.len()))
        .collect();
    (from..=to).enumerate().filter_map(move |(i, seq)| {
        let (a, b) = (*bounds.get(i)?, *bounds.get(i + 1)?);
        Some(RunEvent {
            seq: seq as u64,
            event: Event::MessageDelta {
                node: d.node.to_string(),
                message_id: d.message_id.to_string(),
                delta: d.delta.get(a..b)?.to_string(),
            },
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: &str, seq: i64, event: Event) -> EventRow {
        EventRow {
            run_id: run.into(),
            seq,
            thread_id: "t".into(),
            event: serde_json::to_value(event).unwrap_or_default(),
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

    #[test]
    fn consecutive_deltas_of_a_message_become_one_row() {
        let rows = vec![
            row("r", 1, status()),
            row("r", 2, delta("m", "Hello")),
            row("other", 7, delta("m", "x")),
            row("r", 3, delta("m", ", wörld")),
            row("r", 4, delta("m", "!")),
            row("r", 5, delta("n", "next")),
            row("other", 8, delta("m", "y")),
        ];
        let stored = coalesce(rows);
        let ids: Vec<(String, i64)> = stored.iter().map(|r| (r.run_id.clone(), r.seq)).collect();
        assert_eq!(
            ids,
            vec![
                ("r".into(), 1),
                ("r".into(), 4),
                ("other".into(), 8),
                ("r".into(), 5)
            ]
        );
        assert_eq!(stored[1].event["delta"], "Hello, wörld!");
        assert_eq!(stored[1].event["from_seq"], 2);
        let all = replay(stored, 0);
        let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            vec![1, 2, 3, 4, 7, 8, 5],
            "every event again, with its own id"
        );
        assert_eq!(text(&all[1..4]), "Hello, wörld!");
    }

    #[test]
    fn a_replay_from_inside_a_row_gives_exactly_the_rest() {
        let pieces = ["The ", "policy ", "keeps ", "records ", "seven ", "years."];
        let rows: Vec<EventRow> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| row("r", i as i64 + 1, delta("m", p)))
            .collect();
        let stored = coalesce(rows);
        assert_eq!(stored.len(), 1);
        for seen in 0..=pieces.len() {
            let rest = replay(stored.clone(), seen as u64);
            assert_eq!(text(&rest), pieces[seen..].concat(), "after event {seen}");
            assert_eq!(rest.len(), pieces.len() - seen, "one event per delta");
            if let Some(e) = rest.first() {
                assert_eq!(e.seq, seen as u64 + 1);
            }
        }
    }

    #[test]
    fn gaps_resets_and_claims_are_never_merged() {
        let mut later = row("r", 3, delta("m", "b"));
        later.attempt = 2;
        let rows = vec![
            row("r", 1, delta("m", "a")),
            later,
            row(
                "r",
                4,
                Event::MessageReset {
                    node: "write".into(),
                    message_id: "m".into(),
                },
            ),
            row("r", 5, delta("m", "c")),
            row("r", 7, delta("m", "d")),
        ];
        assert_eq!(coalesce(rows).len(), 5);
    }
}
