//! Persists run events in batches.
//!
//! Runs hand their events to one writer task, which gathers what arrives within a flush
//! window (or until a run asks for a flush), packs each run's events of the batch into one
//! row ([`super::compact`]) and inserts the batch in one statement (without waiting for fsync on Postgres: checkpoints,
//! not events, are the durable truth). A run that ends takes its events not yet stored
//! back ([`EventWriter::take`]) and stores them with its end, in the row of its terminal
//! event: one row and one statement fewer per run, and a watcher that sees a finished run
//! finds every event in the table. While the database is unreachable
//! the writer retries (a batch is dropped only after the storage retry budget); rows of a
//! claim that lost its run are refused by the store.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::store::{EventRow, Store};

enum Msg {
    Event(EventRow),
    Flush(oneshot::Sender<()>),
    /// Hand back the rows of one run's claim (run id, attempt) not yet stored.
    Take(String, i64, oneshot::Sender<Vec<EventRow>>),
}

/// A handle to the writer task.
#[derive(Clone)]
pub(crate) struct EventWriter {
    tx: mpsc::UnboundedSender<Msg>,
}

const MAX_BATCH: usize = 1024;

impl EventWriter {
    /// Starts the writer task.
    pub(crate) fn start(store: Arc<dyn Store>, retry_for: Duration, window: Duration) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            let mut acks = Vec::new();
            while let Some(first) = rx.recv().await {
                let deadline = tokio::time::Instant::now() + window;
                let mut next = Some(first);
                while let Some(m) = next.take() {
                    match m {
                        Msg::Event(e) => batch.push(e),
                        Msg::Flush(ack) => acks.push(ack),
                        Msg::Take(run_id, attempt, reply) => {
                            let (theirs, rest) =
                                std::mem::take(&mut batch)
                                    .into_iter()
                                    .partition(|r: &EventRow| {
                                        r.run_id == run_id && r.attempt == attempt
                                    });
                            batch = rest;
                            let _ = reply.send(theirs);
                        }
                    }
                    if batch.len() >= MAX_BATCH {
                        break;
                    }
                    next = match rx.try_recv() {
                        Ok(m) => Some(m),
                        // Nothing queued: wait out the window, unless a run waits on us.
                        Err(_) if acks.is_empty() && !window.is_zero() => {
                            tokio::time::timeout_at(deadline, rx.recv())
                                .await
                                .ok()
                                .flatten()
                        }
                        Err(_) => None,
                    };
                }
                if !batch.is_empty() {
                    batch = super::compact::coalesce(std::mem::take(&mut batch));
                    metrics::histogram!(crate::metric::BATCH_SIZE, "kind" => "run_events")
                        .record(batch.len() as f64);
                    let stored = crate::retry::transient(
                        "storing run events",
                        retry_for,
                        || true,
                        || store.append_events(&batch),
                    )
                    .await;
                    if let Err(e) = stored {
                        tracing::error!(
                            error = %e,
                            dropped = batch.len(),
                            "giving up on storing run events"
                        );
                    }
                    batch.clear();
                }
                for ack in acks.drain(..) {
                    let _ = ack.send(());
                }
            }
        });
        EventWriter { tx }
    }

    /// Queues an event.
    pub(crate) fn push(&self, row: EventRow) {
        let _ = self.tx.send(Msg::Event(row));
    }

    /// The events of the run `run_id`'s claim `attempt` queued so far and not yet stored,
    /// taken out of the queue (the rest of its events are stored: the writer stores a batch
    /// before it reads the next message). Empty when the writer has stopped.
    pub(crate) async fn take(&self, run_id: &str, attempt: i64) -> Vec<EventRow> {
        let (reply, rows) = oneshot::channel();
        if self
            .tx
            .send(Msg::Take(run_id.to_string(), attempt, reply))
            .is_err()
        {
            return Vec::new();
        }
        rows.await.unwrap_or_default()
    }

    /// Waits until every event queued so far is stored.
    pub(crate) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }
}
