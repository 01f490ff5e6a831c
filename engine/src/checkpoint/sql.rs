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
pub(crate) fn record(
    thread_id: &str,
    checkpoint_id: String,
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

#[derive(Serialize)]
struct BlobRow<'a> {
    field: &'a str,
    version: &'a str,
    prev: Option<&'a str>,
    delta: bool,
    value: &'a RawValue,
}

/// The blobs as one JSON array (for a single-statement insert).
pub(crate) fn blobs_json(blobs: &[FieldBlob]) -> Result<String, CheckpointError> {
    let rows: Vec<BlobRow<'_>> = blobs
        .iter()
        .map(|b| BlobRow {
            field: &b.field,
            version: &b.version,
            prev: b.prev.as_deref(),
            delta: b.delta,
            value: &b.value,
        })
        .collect();
    serde_json::to_string(&rows).map_err(|e| decode_err("encoding field values", e))
}

#[derive(Serialize)]
struct WriteRow<'a> {
    task_id: &'a str,
    channel: &'a str,
    idx: i64,
    value: &'a RawValue,
}

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
}
