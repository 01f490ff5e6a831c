//! Group commit: concurrent callers' writes gathered into one call (the checkpointer's
//! pending writes, the server's run rows).
//!
//! A [`Batcher`] hands each submitted item to a background task that passes everything
//! queued at that moment to one batch function: one round trip and one commit for all of
//! them. While `in_flight` batches are running, new items wait and gather into the next
//! batch, so the batch size grows with the load and a lone caller pays only a task hop.
//! A batch that fails as a whole answers each caller `None`: the caller then writes its
//! item alone, the long way, and gets that way's own result or error.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};

/// The callers' side of a batching task (see the module docs); clones share the task, which
/// ends when the last clone is dropped.
pub struct Batcher<I, O> {
    tx: mpsc::UnboundedSender<(I, oneshot::Sender<Option<O>>)>,
}

impl<I, O> Clone for Batcher<I, O> {
    fn clone(&self) -> Self {
        Batcher {
            tx: self.tx.clone(),
        }
    }
}

impl<I, O> std::fmt::Debug for Batcher<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> Batcher<I, O> {
    /// Starts the task, on the current Tokio runtime (call within one). `run` gets up to `max` items and
    /// returns one output per item, in their order; at most `in_flight` calls run at once.
    pub fn spawn<F, Fut, E>(max: usize, in_flight: usize, run: F) -> Self
    where
        F: Fn(Vec<I>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<O>, E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<(I, oneshot::Sender<Option<O>>)>();
        let run = Arc::new(run);
        let slots = Arc::new(Semaphore::new(in_flight.max(1)));
        tokio::spawn(async move {
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Some(first) = rx.recv().await else {
                    return;
                };
                let mut items = Vec::with_capacity(8);
                let mut replies = Vec::with_capacity(8);
                let (item, reply) = first;
                items.push(item);
                replies.push(reply);
                while items.len() < max {
                    match rx.try_recv() {
                        Ok((item, reply)) => {
                            items.push(item);
                            replies.push(reply);
                        }
                        Err(_) => break,
                    }
                }
                let run = run.clone();
                tokio::spawn(async move {
                    let n = items.len();
                    // Boxed: `run`'s future may be large (it is whatever the caller's
                    // statement awaits), and the task would otherwise carry it inline from
                    // its spawn on, copied each time the runtime moves the task.
                    let out = Box::pin(run(items)).await;
                    drop(slot);
                    match out {
                        Ok(outs) if outs.len() == n => {
                            for (reply, out) in replies.into_iter().zip(outs) {
                                let _ = reply.send(Some(out));
                            }
                        }
                        Ok(outs) => {
                            tracing::error!(
                                items = n,
                                outputs = outs.len(),
                                "a batch answered for the wrong number of items"
                            );
                            for reply in replies {
                                let _ = reply.send(None);
                            }
                        }
                        Err(e) => {
                            tracing::debug!(items = n, error = %e, "a batch failed; its items are written one by one");
                            for reply in replies {
                                let _ = reply.send(None);
                            }
                        }
                    }
                });
            }
        });
        Batcher { tx }
    }

    /// Submits `item`; its output, or `None` when its batch failed (or the task is gone)
    /// and the caller must write it alone.
    pub async fn submit(&self, item: I) -> Option<O> {
        let (reply, rx) = oneshot::channel();
        self.tx.send((item, reply)).ok()?;
        rx.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn concurrent_items_share_batches_and_each_gets_its_own_output() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let b = Arc::new(Batcher::spawn(64, 1, move |items: Vec<u32>| {
            c.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                Ok::<_, String>(items.iter().map(|i| i * 2).collect())
            }
        }));
        let tasks: Vec<_> = (0..50u32)
            .map(|i| {
                let b = b.clone();
                tokio::spawn(async move { (i, b.submit(i).await) })
            })
            .collect();
        for t in tasks {
            let (i, out) = t.await.unwrap();
            assert_eq!(out, Some(i * 2));
        }
        let n = calls.load(Ordering::SeqCst);
        assert!(n < 50, "50 concurrent items took {n} calls");
    }

    #[tokio::test]
    async fn a_failed_batch_tells_every_caller_to_write_alone() {
        let b = Batcher::spawn(8, 2, |_items: Vec<u32>| async {
            Err::<Vec<u32>, _>("down")
        });
        assert_eq!(b.submit(1).await, None);
        let short = Batcher::spawn(8, 2, |_items: Vec<u32>| async {
            Ok::<Vec<u32>, String>(vec![])
        });
        assert_eq!(short.submit(1).await, None);
    }
}
