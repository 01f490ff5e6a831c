//! Writers of one SQLite database take turns in the order they asked.
//!
//! SQLite has one writer at a time. A connection that finds the lock taken waits in
//! SQLite's busy handler, which sleeps in growing steps (1 ms up to 100 ms) and tries again:
//! a writer that commits often (a run storing the results of thousands of tasks) finds the
//! lock free at nearly every retry of its own, while a writer that arrived before it sleeps
//! through the gaps. So the writes of checkpoints, of the long-term store and of the
//! server's threads, runs and events on SQLite first take their [`WriteTurn`]: one queue
//! per database file in this process, first come first served. The busy handler is left
//! for writers of other processes and for rare writes that take no turn (documents,
//! crons): SQLite's lock keeps them correct, and they wait as they did.
//!
//! A turn is held for one transaction and released when dropped. A writer that has waited
//! [`MAX_WAIT`] for its turn goes on without one (SQLite's lock still makes it safe), so a
//! turn held by mistake across another write slows that write and never deadlocks it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use sqlx::SqlitePool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a writer waits for its turn before it goes on to SQLite's own lock: the busy
/// timeout [`super::open_sqlite`] sets.
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// The queues, by database file (weak: a queue lives as long as a writer holds or awaits it).
static QUEUES: LazyLock<Mutex<HashMap<PathBuf, Weak<Semaphore>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One writer's turn at a SQLite database; the next writer's starts when this is dropped.
#[derive(Debug)]
#[must_use = "the turn ends when dropped: hold it until the transaction commits"]
pub struct WriteTurn {
    _permit: Option<OwnedSemaphorePermit>,
}

impl WriteTurn {
    /// Whether this writer has its turn (`false`: it waited [`MAX_WAIT`] and went on).
    pub fn is_held(&self) -> bool {
        self._permit.is_some()
    }
}

/// Waits for the turn to write to `pool`'s database (see the module docs).
pub async fn write_turn(pool: &SqlitePool) -> WriteTurn {
    let options = pool.connect_options();
    let queue = queue_of(options.get_filename());
    WriteTurn {
        _permit: tokio::time::timeout(MAX_WAIT, queue.acquire_owned())
            .await
            .ok()
            .and_then(Result::ok),
    }
}

fn queue_of(file: &Path) -> Arc<Semaphore> {
    // A poisoned map is still a map of queues: a panic elsewhere does not stop the writers.
    let mut queues = QUEUES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(queue) = queues.get(file).and_then(Weak::upgrade) {
        return queue;
    }
    queues.retain(|_, q| q.strong_count() > 0);
    let queue = Arc::new(Semaphore::new(1));
    queues.insert(file.to_path_buf(), Arc::downgrade(&queue));
    queue
}

#[cfg(all(test, feature = "testkit"))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testkit::backends::{remove_sqlite_files, temp_db_path};

    #[tokio::test]
    async fn writers_of_one_file_take_turns_in_the_order_they_asked() {
        let path = temp_db_path();
        let pool = crate::db::open_sqlite(&path).await.expect("open");
        let first = write_turn(&pool).await;
        assert!(first.is_held());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for i in 0..3 {
            let (pool, order) = (pool.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let turn = write_turn(&pool).await;
                order.lock().unwrap().push(i);
                drop(turn);
            }));
            // Each has asked before the next one is spawned.
            while Arc::strong_count(&queue_of(&path)) < 3 + i {
                tokio::task::yield_now().await;
            }
        }
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody writes during a turn"
        );
        drop(first);
        for w in waiting {
            w.await.expect("writer");
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
        pool.close().await;
        remove_sqlite_files(&path);
    }

    #[tokio::test]
    async fn files_have_queues_of_their_own() {
        let (a, b) = (temp_db_path(), temp_db_path());
        let pool_a = crate::db::open_sqlite(&a).await.expect("open a");
        let pool_b = crate::db::open_sqlite(&b).await.expect("open b");
        let held = write_turn(&pool_a).await;
        let other = tokio::time::timeout(Duration::from_secs(5), write_turn(&pool_b))
            .await
            .expect("another file's turn does not wait");
        assert!(held.is_held() && other.is_held());
        pool_a.close().await;
        pool_b.close().await;
        remove_sqlite_files(&a);
        remove_sqlite_files(&b);
    }
}
