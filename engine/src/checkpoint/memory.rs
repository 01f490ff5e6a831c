//! The in-memory checkpointer: a `Mutex` over plain maps. Fast, and gone with the process:
//! for tests, benchmarks and graphs that need no durability.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{
    CheckpointError, CheckpointRecord, Checkpointer, Fence, FieldBlob, FieldChain, ListOptions,
    LoadedCheckpoint, PendingWrite, PruneStats, PruneStrategy, PutCheckpoint, REPLACING_CHANNEL,
};

type WriteKey = (String, String, String, i64); // checkpoint, task, channel, idx

#[derive(Default, Clone)]
struct ThreadData {
    head: Option<String>,
    checkpoints: BTreeMap<String, CheckpointRecord>,
    blobs: HashMap<(String, String), FieldBlob>,
    writes: BTreeMap<WriteKey, PendingWrite>,
    /// The epoch of the thread's fence (0: never advanced).
    fence: i64,
}

/// Refuses a fenced write whose epoch is not the thread's current one.
fn check_fence(data: Option<&ThreadData>, fence: Option<&Fence>) -> Result<(), CheckpointError> {
    match fence {
        Some(f) => f.check(data.map_or(0, |d| d.fence)),
        None => Ok(()),
    }
}

/// A cached node result and when it expires.
type CacheEntry = (super::Json, Option<i64>);

/// Checkpoints in process memory.
#[derive(Default)]
pub struct MemoryCheckpointer {
    threads: Mutex<HashMap<String, ThreadData>>,
    cache: Mutex<HashMap<(String, String), CacheEntry>>,
}

impl MemoryCheckpointer {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ThreadData>> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than losing the process, so a poisoned lock is still used.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn chain(
    thread_id: &str,
    data: &ThreadData,
    field: &str,
    version: &str,
) -> Result<FieldChain, CheckpointError> {
    let mut deltas = Vec::new();
    let mut cur = Some(version.to_string());
    let mut base = None;
    while let Some(v) = cur {
        let blob = data
            .blobs
            .get(&(field.to_string(), v.clone()))
            .ok_or_else(|| CheckpointError::MissingVersion {
                thread_id: thread_id.to_string(),
                field: field.to_string(),
                version: v.clone(),
            })?;
        if blob.delta {
            deltas.push(blob.value.clone());
            cur = blob.prev.clone();
        } else {
            base = Some(blob.value.clone());
            cur = None;
        }
    }
    deltas.reverse();
    Ok(FieldChain {
        field: field.to_string(),
        version: version.to_string(),
        base,
        deltas,
    })
}

/// Removes blobs that no remaining checkpoint reaches through its versions and their
/// delta chains; returns how many were removed.
fn collect_garbage(data: &mut ThreadData) -> u64 {
    let mut live: HashSet<(String, String)> = HashSet::new();
    for rec in data.checkpoints.values() {
        for (field, version) in &rec.versions {
            let mut cur = Some(version.clone());
            while let Some(v) = cur {
                let key = (field.clone(), v);
                if !live.insert(key.clone()) {
                    break;
                }
                cur = data.blobs.get(&key).and_then(|b| b.prev.clone());
            }
        }
    }
    let before = data.blobs.len();
    data.blobs.retain(|k, _| live.contains(k));
    (before - data.blobs.len()) as u64
}

fn remove_checkpoints(data: &mut ThreadData, doomed: &HashSet<String>) -> PruneStats {
    let mut stats = PruneStats::default();
    for id in doomed {
        if data.checkpoints.remove(id).is_some() {
            stats.checkpoints += 1;
        }
    }
    let before = data.writes.len();
    data.writes.retain(|k, _| !doomed.contains(&k.0));
    stats.writes = (before - data.writes.len()) as u64;
    stats.blobs = collect_garbage(data);
    data.head = data
        .checkpoints
        .values()
        .max_by_key(|r| r.seq)
        .map(|r| r.checkpoint_id.clone());
    stats
}

#[async_trait]
impl Checkpointer for MemoryCheckpointer {
    async fn cache_get(
        &self,
        namespace: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<super::Json>, CheckpointError> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        Ok(cache
            .get(&(namespace.to_string(), key.to_string()))
            .filter(|(_, exp)| exp.is_none_or(|e| e > now_ms))
            .map(|(v, _)| v.clone()))
    }

    async fn cache_put(
        &self,
        namespace: &str,
        key: &str,
        value: super::Json,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), CheckpointError> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|(ns, _), (_, exp)| ns != namespace || exp.is_none_or(|e| e > now_ms));
        cache.insert(
            (namespace.to_string(), key.to_string()),
            (value, expires_at_ms),
        );
        Ok(())
    }

    async fn put(&self, put: &PutCheckpoint) -> Result<(), CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Memory, super::timing::Op::Put);
        let mut threads = self.lock();
        check_fence(threads.get(&put.record.thread_id), put.fence.as_ref())?;
        let data = threads.entry(put.record.thread_id.clone()).or_default();
        let head_seq = data
            .head
            .as_ref()
            .and_then(|h| data.checkpoints.get(h))
            .map(|r| r.seq)
            .unwrap_or(0);
        if data.head != put.expected_head
            || put.record.seq != head_seq + 1
            || data.checkpoints.contains_key(&put.record.checkpoint_id)
        {
            return Err(CheckpointError::Conflict {
                thread_id: put.record.thread_id.clone(),
                expected: put.expected_head.clone(),
                actual: data.head.clone(),
            });
        }
        for blob in &put.blobs {
            data.blobs
                .entry((blob.field.clone(), blob.version.clone()))
                .or_insert_with(|| blob.clone());
        }
        data.head = Some(put.record.checkpoint_id.clone());
        data.checkpoints
            .insert(put.record.checkpoint_id.clone(), put.record.clone());
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
        fence: Option<&Fence>,
    ) -> Result<(), CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Memory, super::timing::Op::Writes);
        let mut threads = self.lock();
        check_fence(threads.get(thread_id), fence)?;
        let data = threads.entry(thread_id.to_string()).or_default();
        for w in writes {
            let key = (
                checkpoint_id.to_string(),
                w.task_id.clone(),
                w.channel.clone(),
                w.idx,
            );
            if w.channel == REPLACING_CHANNEL {
                data.writes.insert(key, w);
            } else {
                data.writes.entry(key).or_insert(w);
            }
        }
        Ok(())
    }

    async fn advance_fence(&self, key: &str, epoch: i64) -> Result<i64, CheckpointError> {
        let mut threads = self.lock();
        let data = threads.entry(key.to_string()).or_default();
        data.fence = data.fence.max(epoch);
        Ok(data.fence)
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let _timer =
            super::timing::Timer::start(super::timing::Backend::Memory, super::timing::Op::Load);
        let threads = self.lock();
        let Some(data) = threads.get(thread_id) else {
            return Ok(None);
        };
        let id = match checkpoint_id {
            Some(id) => id.to_string(),
            None => match &data.head {
                Some(h) => h.clone(),
                None => return Ok(None),
            },
        };
        let Some(record) = data.checkpoints.get(&id) else {
            return Ok(None);
        };
        let fields = record
            .versions
            .iter()
            .map(|(f, v)| chain(thread_id, data, f, v))
            .collect::<Result<Vec<_>, _>>()?;
        let writes = data
            .writes
            .range((id.clone(), String::new(), String::new(), i64::MIN)..)
            .take_while(|(k, _)| k.0 == id)
            .map(|(_, w)| w.clone())
            .collect();
        Ok(Some(LoadedCheckpoint {
            record: record.clone(),
            fields,
            writes,
        }))
    }

    async fn get_without_values(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<LoadedCheckpoint>, CheckpointError> {
        let _timer = super::timing::Timer::start(
            super::timing::Backend::Memory,
            super::timing::Op::LoadMetadata,
        );
        let threads = self.lock();
        let Some(data) = threads.get(thread_id) else {
            return Ok(None);
        };
        let Some(id) = checkpoint_id
            .map(str::to_string)
            .or_else(|| data.head.clone())
        else {
            return Ok(None);
        };
        let Some(record) = data.checkpoints.get(&id) else {
            return Ok(None);
        };
        let writes = data
            .writes
            .range((id.clone(), String::new(), String::new(), i64::MIN)..)
            .take_while(|(k, _)| k.0 == id)
            .map(|(_, w)| w.clone())
            .collect();
        Ok(Some(LoadedCheckpoint {
            record: record.clone(),
            fields: Vec::new(),
            writes,
        }))
    }

    async fn head(&self, thread_id: &str) -> Result<Option<String>, CheckpointError> {
        Ok(self.lock().get(thread_id).and_then(|d| d.head.clone()))
    }

    async fn list(
        &self,
        thread_id: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError> {
        let threads = self.lock();
        let Some(data) = threads.get(thread_id) else {
            return Ok(vec![]);
        };
        Ok(data
            .checkpoints
            .values()
            .rev()
            .filter(|r| {
                options
                    .before
                    .as_ref()
                    .is_none_or(|b| r.checkpoint_id.as_str() < b.as_str())
            })
            .filter(|r| options.matches(&r.metadata))
            .take(options.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), CheckpointError> {
        let namespaces = format!("{thread_id}|");
        self.lock()
            .retain(|t, _| t != thread_id && !t.starts_with(&namespaces));
        Ok(())
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), CheckpointError> {
        let mut threads = self.lock();
        if threads.get(to).is_some_and(|d| d.head.is_some()) {
            return Err(CheckpointError::Conflict {
                thread_id: to.to_string(),
                expected: None,
                actual: threads.get(to).and_then(|d| d.head.clone()),
            });
        }
        // The thread and its subgraphs' namespaces (`{from}|...`), renamed.
        let namespaces = format!("{from}|");
        let copies: Vec<(String, ThreadData)> = threads
            .iter()
            .filter(|(t, _)| *t == from || t.starts_with(&namespaces))
            .map(|(t, d)| (format!("{to}{}", &t[from.len()..]), d.clone()))
            .collect();
        for (name, mut copy) in copies {
            copy.fence = 0;
            for rec in copy.checkpoints.values_mut() {
                rec.thread_id = name.clone();
            }
            threads.insert(name, copy);
        }
        Ok(())
    }

    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[String],
    ) -> Result<PruneStats, CheckpointError> {
        let mut threads = self.lock();
        let Some(data) = threads.get_mut(thread_id) else {
            return Ok(PruneStats::default());
        };
        let doomed: HashSet<String> = data
            .checkpoints
            .values()
            .filter(|r| r.run_id().is_some_and(|id| run_ids.iter().any(|x| x == id)))
            .map(|r| r.checkpoint_id.clone())
            .collect();
        Ok(remove_checkpoints(data, &doomed))
    }

    async fn prune(
        &self,
        thread_id: &str,
        strategy: PruneStrategy,
    ) -> Result<PruneStats, CheckpointError> {
        let mut threads = self.lock();
        let Some(data) = threads.get_mut(thread_id) else {
            return Ok(PruneStats::default());
        };
        let head = data.head.clone();
        let doomed: HashSet<String> = match strategy {
            PruneStrategy::DeleteAll => data.checkpoints.keys().cloned().collect(),
            PruneStrategy::KeepLatest => data
                .checkpoints
                .keys()
                .filter(|id| Some(*id) != head.as_ref())
                .cloned()
                .collect(),
            PruneStrategy::KeepNewerThan(cutoff) => data
                .checkpoints
                .values()
                .filter(|r| r.created_at_ms < cutoff && Some(&r.checkpoint_id) != head.as_ref())
                .map(|r| r.checkpoint_id.clone())
                .collect(),
        };
        let stats = remove_checkpoints(data, &doomed);
        if strategy == PruneStrategy::DeleteAll {
            threads.remove(thread_id);
        }
        Ok(stats)
    }
}
