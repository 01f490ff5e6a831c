//! Where a claimed run's events go: numbered so that no id is ever reused, published live to
//! the hub and queued for the events table, the terminal event held back until the run's
//! end is recorded.
//!
//! **Numbering.** Events of the claim with attempt `a` are numbered from `(a - 1) << 32`
//! on, so an attempt's ids always follow every id an earlier attempt may have sent, stored
//! or not (a process killed mid-run takes unstored events with it, but a client may have
//! seen them). Within one claim the sink numbers events itself, across the retries a claim
//! makes after a storage outage.
//!
//! **Replays.** A node that runs again after a takeover or a retry streams its message from
//! the start. Before the first delta of each message in a retry or a later attempt the sink
//! publishes [`Event::MessageReset`]: clients replace the partial text instead of appending
//! to it, so nobody sees an answer's beginning twice.
//!
//! **Partial text.** The sink keeps the text streamed in the current try, per message, so
//! a run that fails can leave the answer it had written so far on its thread.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use palgraph::{Event, EventSink, RunEvent, StreamModes};

use super::hub::RunChannel;
use super::writer::EventWriter;
use crate::store::EventRow;

/// The first event id of attempt `attempt` (attempts count from 1).
pub(crate) fn first_seq(attempt: i64) -> u64 {
    (attempt.max(1) as u64 - 1) << 32
}

/// The event sink of one claim of a run.
pub(crate) struct RunSink {
    run_id: String,
    thread_id: String,
    attempt: i64,
    pub(crate) channel: Arc<RunChannel>,
    writer: EventWriter,
    next: AtomicU64,
    held: Mutex<Option<RunEvent>>,
    /// Whether a message streamed now may have been streamed before (a later attempt, or a
    /// retry within this claim).
    replaying: AtomicBool,
    /// Messages that got their reset in the current try.
    reset: Mutex<HashSet<String>>,
    /// Set once the claim is lost: nothing more is published or stored.
    stopped: AtomicBool,
    /// The text streamed in the current try, per message, in the order they started.
    streamed: Mutex<Vec<Streamed>>,
    /// The events the run's clients asked for: the others are neither published nor stored.
    modes: StreamModes,
    /// Whether the run's clients asked for subgraphs' events (`stream_subgraphs`).
    subgraphs: bool,
}

/// The text of a message streamed in the current try.
#[derive(Clone, Debug, Default)]
pub(crate) struct Streamed {
    /// The message's id.
    pub(crate) message_id: String,
    /// Its text so far.
    pub(crate) text: String,
}

impl RunSink {
    pub(crate) fn new(
        run_id: &str,
        thread_id: &str,
        attempt: i64,
        channel: Arc<RunChannel>,
        writer: EventWriter,
        modes: StreamModes,
    ) -> Self {
        RunSink {
            run_id: run_id.to_string(),
            thread_id: thread_id.to_string(),
            attempt,
            channel,
            writer,
            next: AtomicU64::new(first_seq(attempt)),
            held: Mutex::new(None),
            replaying: AtomicBool::new(attempt > 1),
            reset: Mutex::new(HashSet::new()),
            stopped: AtomicBool::new(false),
            streamed: Mutex::new(Vec::new()),
            modes,
            subgraphs: false,
        }
    }

    /// The same sink passing subgraphs' events on (`stream_subgraphs`), or not.
    pub(crate) fn with_subgraphs(mut self, subgraphs: bool) -> Self {
        self.subgraphs = subgraphs;
        self
    }

    fn number(&self, event: Event) -> RunEvent {
        RunEvent {
            seq: self.next.fetch_add(1, Ordering::AcqRel) + 1,
            event,
        }
    }

    fn publish(&self, event: RunEvent) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        self.writer.push(EventRow {
            run_id: self.run_id.clone(),
            seq: event.seq as i64,
            thread_id: self.thread_id.clone(),
            event: super::codec::encode(&event.event),
            attempt: self.attempt,
        });
        self.channel.push(event);
    }

    /// The engine's terminal event, held back (and numbered) until the run's end is
    /// recorded; `None` when the engine did not send one.
    pub(crate) fn take_terminal(&self) -> Option<RunEvent> {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Numbers a terminal event the worker made itself.
    pub(crate) fn terminal(&self, event: Event) -> RunEvent {
        self.number(event)
    }

    /// The claim is about to run the graph again (a retry after a storage outage): messages
    /// streamed from now on start over.
    pub(crate) fn begin_retry(&self) {
        let _ = self.take_terminal();
        self.replaying.store(true, Ordering::Release);
        self.reset.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.streamed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The last message streamed in the current try, with its text so far.
    pub(crate) fn last_streamed(&self) -> Option<Streamed> {
        self.streamed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last()
            .cloned()
    }

    fn keep_text(&self, message_id: &str, delta: &str) {
        let mut streamed = self.streamed.lock().unwrap_or_else(|e| e.into_inner());
        match streamed.iter_mut().find(|m| m.message_id == message_id) {
            Some(m) => m.text.push_str(delta),
            None => streamed.push(Streamed {
                message_id: message_id.to_string(),
                text: delta.to_string(),
            }),
        }
    }

    /// The claim was lost: drop whatever comes after.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }
}

impl EventSink for RunSink {
    fn send(&self, event: RunEvent) {
        if !self.modes.delivers(&event.event)
            || (!self.subgraphs && matches!(event.event, Event::Subgraph { .. }))
        {
            return;
        }
        if event.event.is_terminal() {
            let numbered = self.number(event.event);
            *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some(numbered);
            return;
        }
        if let Event::MessageReset { message_id, .. } = &event.event {
            // The engine retries a node: its message starts over.
            self.streamed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|m| &m.message_id != message_id);
        }
        if let Event::MessageDelta {
            node,
            message_id,
            delta,
        } = &event.event
        {
            self.keep_text(message_id, delta);
            let first = self.replaying.load(Ordering::Acquire)
                && self
                    .reset
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(message_id.clone());
            if first {
                let reset = self.number(Event::MessageReset {
                    node: node.clone(),
                    message_id: message_id.clone(),
                });
                self.publish(reset);
            }
        }
        let numbered = self.number(event.event);
        self.publish(numbered);
    }

    /// Only the modes the run's clients asked for: the engine skips building the others'
    /// events (a node's update, unless someone streams `updates`).
    fn wants(&self, mode: palgraph::StreamMode) -> bool {
        self.modes.contains(mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_number_their_events_apart() {
        assert_eq!(first_seq(1), 0);
        assert_eq!(first_seq(2), 1 << 32);
        assert!(first_seq(3) > first_seq(2) + u64::from(u32::MAX));
    }
}
