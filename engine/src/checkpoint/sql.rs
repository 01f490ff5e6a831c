//! What the SQL backends share: decoding rows, assembling field chains, encoding batches.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{CheckpointError, CheckpointRecord, FieldBlob, FieldChain, Json, PendingWrite};

/// One stored version of a field, as a chain query returns it.
pub(crate) struct ChainRow {
    pub(crate) field: String,
    pub(crate) version: String,
    pub(crate) prev: Option<String>,
    pub(crate) delta: bool,
    pub(crate) depth: i64,
    pub(crate) value: Json,
}

fn decode_err(what: &str, e: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Decode(format!("{what}: {e}"))
}

/// Decodes a checkpoint row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    thread_id: &str,
    checkpoint_id: String,
    seq: i64,
    parent_id: Option<String>,
    created_at_ms: i64,
    metadata: &str,
    versions: &str,
    plan: String,
) -> Result<CheckpointRecord, CheckpointError> {
    let metadata: Map<String, Value> = serde_json::from_str(metadata)
        .map_err(|e| decode_err(&format!("metadata of checkpoint {checkpoint_id}"), e))?;
    let versions: BTreeMap<String, String> = serde_json::from_str(versions)
        .map_err(|e| decode_err(&format!("versions of checkpoint {checkpoint_id}"), e))?;
    let plan = RawValue::from_string(plan)
        .map_err(|e| decode_err(&format!("plan of checkpoint {checkpoint_id}"), e))?;
    Ok(CheckpointRecord {
        thread_id: thread_id.to_string(),
        checkpoint_id,
        seq,
        parent_id,
        created_at_ms,
        metadata,
        versions,
        plan,
    })
}

/// Turns chain rows into one chain per referenced field, oldest value first.
pub(crate) fn assemble(
    thread_id: &str,
    versions: &BTreeMap<String, String>,
    rows: Vec<ChainRow>,
) -> Result<Vec<FieldChain>, CheckpointError> {
    let mut by_field: HashMap<String, Vec<ChainRow>> = HashMap::new();
    for r in rows {
        by_field.entry(r.field.clone()).or_default().push(r);
    }
    let mut out = Vec::with_capacity(versions.len());
    for (field, version) in versions {
        let missing = |v: &str| CheckpointError::MissingVersion {
            thread_id: thread_id.to_string(),
            field: field.clone(),
            version: v.to_string(),
        };
        let Some(mut rows) = by_field.remove(field) else {
            return Err(missing(version));
        };
        rows.sort_by_key(|r| std::cmp::Reverse(r.depth));
        let oldest = &rows[0];
        if oldest.delta {
            if let Some(p) = &oldest.prev {
                return Err(missing(p));
            }
        }
        if rows.last().map(|r| r.version.as_str()) != Some(version.as_str()) {
            return Err(missing(version));
        }
        let mut base = None;
        let mut deltas = Vec::with_capacity(rows.len());
        for r in rows {
            if r.delta {
                deltas.push(r.value);
            } else {
                base = Some(r.value);
            }
        }
        out.push(FieldChain {
            field: field.clone(),
            version: version.clone(),
            base,
            deltas,
        });
    }
    Ok(out)
}

/// The values a checkpoint writes, as stored in its row: `{field: [prev, is_delta, value]}`.
pub(crate) fn vals_json(blobs: &[FieldBlob]) -> Result<String, CheckpointError> {
    let map: BTreeMap<&str, (Option<&str>, bool, &RawValue)> = blobs
        .iter()
        .map(|b| (b.field.as_str(), (b.prev.as_deref(), b.delta, &*b.value)))
        .collect();
    serde_json::to_string(&map).map_err(|e| decode_err("encoding field values", e))
}

/// The versions map as JSON text, exactly as `serde_json` writes it: every put stores its
/// checkpoint's whole map, a field name and a 36-character checkpoint id per field (see
/// [`push_json_string`]).
pub(crate) fn versions_json(versions: &BTreeMap<String, String>) -> String {
    let len = versions
        .iter()
        .map(|(k, v)| k.len() + v.len() + 6)
        .sum::<usize>();
    let mut out = String::with_capacity(len + 2);
    out.push('{');
    for (i, (field, version)) in versions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, field);
        out.push(':');
        push_json_string(&mut out, version);
    }
    out.push('}');
    out
}

/// Appends `s` as a JSON string, as `serde_json` writes it.
///
/// `serde_json` looks up every byte of every string in its escape table, and the field
/// names and checkpoint ids of a versions map nearly never need escaping. So `s` is
/// checked in one pass the compiler vectorizes and copied as it is when no byte needs
/// escaping (a control character, `"` or `\`; serde_json escapes nothing else);
/// otherwise `serde_json` writes it: a checkpoint's versions map is written on every put.
fn push_json_string(out: &mut String, s: &str) {
    // No early exit, so the loop is vectorized.
    let plain = s
        .bytes()
        .fold(true, |ok, b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::from(s).to_string());
    }
}

/// One stored value as kept in a row: `[prev, is_delta, value]`.
pub(crate) type StoredVal = (Option<String>, bool, Json);

/// Turns (field, version, depth, stored value) rows into chain rows; a link whose row or
/// value is missing is reported as a missing version.
pub(crate) fn chain_rows(
    thread_id: &str,
    rows: Vec<(String, String, i64, Option<StoredVal>)>,
) -> Result<Vec<ChainRow>, CheckpointError> {
    rows.into_iter()
        .map(|(field, version, depth, blob)| match blob {
            Some((prev, delta, value)) => Ok(ChainRow {
                field,
                version,
                prev,
                delta,
                depth,
                value,
            }),
            None => Err(CheckpointError::MissingVersion {
                thread_id: thread_id.to_string(),
                field,
                version,
            }),
        })
        .collect()
}

/// A thread's rows as retention sees them: which values each row holds and what they
/// point to, without the values.
pub(crate) struct RowLinks {
    pub(crate) checkpoint_id: String,
    pub(crate) hidden: bool,
    pub(crate) versions: BTreeMap<String, String>,
    /// field -> prev version, for every value the row holds.
    pub(crate) prevs: BTreeMap<String, Option<String>>,
}

/// What removing some checkpoints from history does to a thread's rows.
#[derive(Default, Debug)]
pub(crate) struct Removal {
    /// Rows to delete.
    pub(crate) delete: Vec<String>,
    /// Rows to keep hidden, with the fields whose values are still needed.
    pub(crate) hide: Vec<(String, Vec<String>)>,
    /// Field values dropped.
    pub(crate) dropped_values: u64,
}

/// Plans the removal of `doomed` from history: rows no kept checkpoint's delta chains reach
/// are deleted; rows still reached are hidden and keep only the values reached.
pub(crate) fn plan_removal(
    rows: &[RowLinks],
    doomed: &std::collections::HashSet<String>,
) -> Removal {
    let by_id: HashMap<&str, &RowLinks> =
        rows.iter().map(|r| (r.checkpoint_id.as_str(), r)).collect();
    let mut live: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
    let mut stack: Vec<(String, String)> = Vec::new();
    for r in rows {
        if r.hidden || doomed.contains(&r.checkpoint_id) {
            continue;
        }
        for (f, v) in &r.versions {
            stack.push((f.clone(), v.clone()));
        }
    }
    while let Some((f, v)) = stack.pop() {
        if !live.insert((f.clone(), v.clone())) {
            continue;
        }
        if let Some(Some(prev)) = by_id.get(v.as_str()).and_then(|r| r.prevs.get(&f)) {
            stack.push((f, prev.clone()));
        }
    }
    let mut out = Removal::default();
    for r in rows {
        if !(r.hidden || doomed.contains(&r.checkpoint_id)) {
            continue;
        }
        let keep: Vec<String> = r
            .prevs
            .keys()
            .filter(|f| live.contains(&((*f).clone(), r.checkpoint_id.clone())))
            .cloned()
            .collect();
        out.dropped_values += (r.prevs.len() - keep.len()) as u64;
        if keep.is_empty() {
            out.delete.push(r.checkpoint_id.clone());
        } else if keep.len() < r.prevs.len() || !r.hidden {
            out.hide.push((r.checkpoint_id.clone(), keep));
        }
    }
    out
}

#[derive(Serialize)]
struct WriteRow<'a> {
    task_id: &'a str,
    channel: &'a str,
    idx: i64,
    value: &'a RawValue,
}

/// The checkpoints a prune removes from history (never the head, except for `DeleteAll`).
pub(crate) fn pick_for_prune(
    rows: &[RowFacts],
    strategy: super::PruneStrategy,
) -> std::collections::HashSet<String> {
    let head = rows
        .iter()
        .filter(|r| !r.4)
        .max_by_key(|r| r.1)
        .map(|r| r.0.clone());
    rows.iter()
        .filter(|r| !r.4)
        .filter(|r| match strategy {
            super::PruneStrategy::DeleteAll => true,
            super::PruneStrategy::KeepLatest => Some(&r.0) != head.as_ref(),
            super::PruneStrategy::KeepNewerThan(cutoff) => {
                r.2 < cutoff && Some(&r.0) != head.as_ref()
            }
        })
        .map(|r| r.0.clone())
        .collect()
}

/// A row as retention picks: (id, seq, created_at_ms, run_id, hidden).
pub(crate) type RowFacts = (String, i64, i64, Option<String>, bool);

/// The writes as one JSON array (for a single-statement insert).
pub(crate) fn writes_json(writes: &[PendingWrite]) -> Result<String, CheckpointError> {
    let rows: Vec<WriteRow<'_>> = writes
        .iter()
        .map(|w| WriteRow {
            task_id: &w.task_id,
            channel: &w.channel,
            idx: w.idx,
            value: &w.value,
        })
        .collect();
    serde_json::to_string(&rows).map_err(|e| decode_err("encoding pending writes", e))
}

/// Replaces `\u0000` escapes in JSON text with `\ufffd`: Postgres `jsonb` cannot hold NUL
/// characters (LangGraph strips them too). Other text is returned unchanged.
pub(crate) fn without_nul(json: &str) -> Cow<'_, str> {
    if !json.contains("\\u0000") {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let mut chars = json.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            if json[i..].starts_with("\\u0000") {
                out.push_str("\\ufffd");
                for _ in 0..5 {
                    chars.next();
                }
                continue;
            }
            out.push(c);
            if let Some((_, n)) = chars.next() {
                out.push(n);
            }
            continue;
        }
        out.push(c);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_escapes_are_replaced_but_escaped_backslashes_are_not() {
        assert_eq!(without_nul(r#"{"a":"x\u0000y"}"#), r#"{"a":"x\ufffdy"}"#);
        assert_eq!(without_nul(r#"{"a":"x\\u0000y"}"#), r#"{"a":"x\\u0000y"}"#);
        assert!(matches!(without_nul(r#"{"a":1}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn versions_are_written_as_serde_json_writes_them() {
        let awkward = [
            "",
            "messages",
            "019a7c2e-5f1b-7d3e-9a41-0c8d2b6e4f10",
            "quote\"inside",
            "back\\slash",
            "tab\there",
            "nul\u{0}byte",
            "unit\u{1f}separator",
            "delete\u{7f}kept",
            "caf\u{e9} \u{2028} \u{1f600}",
        ];
        let mut versions = BTreeMap::new();
        assert_eq!(versions_json(&versions), "{}");
        for (i, k) in awkward.iter().enumerate() {
            let v = awkward[(i + 3) % awkward.len()];
            versions.insert((*k).to_string(), v.to_string());
            assert_eq!(
                versions_json(&versions),
                serde_json::to_string(&versions).unwrap(),
                "after adding {k:?}"
            );
        }
    }
}
