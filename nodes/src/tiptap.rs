//! TipTap mentions: walks a TipTap (ProseMirror) JSON document, nested nodes included, and
//! collects its mention nodes, e.g.
//! `{"type": "mention", "attrs": {"id": "doc-1", "label": "CRR"}}`.
//!
//! Any node type ending in `mention` counts (`mention`, `docMention`, `documentMention`).
//! A mention whose type or `attrs.type`/`attrs.kind` names a set (`setMention`,
//! `"kind": "set"`) is a document-set mention: its `id` is a document set's id, and it
//! stands for every document of the set. PalAssist's page writes
//! `{"type": "mention", "attrs": {"id": "<set id>", "label": "Basel", "kind": "set"}}`.

use serde_json::Value;

/// What a mention points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MentionKind {
    /// A document.
    Document,
    /// A set of documents.
    Set,
}

/// One mention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    /// The id it carries (`attrs.id`).
    pub id: String,
    /// The text it shows (`attrs.label`), if any.
    pub label: Option<String>,
    /// Document or set.
    pub kind: MentionKind,
}

/// The mentions of a TipTap document in document order, each id once.
pub fn mentions(doc: &Value) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    walk(doc, &mut out, 0);
    out
}

/// How deep a document may nest before the walk stops (a guard against hostile input).
const MAX_DEPTH: usize = 64;

fn walk(node: &Value, out: &mut Vec<Mention>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match node {
        Value::Array(items) => {
            for item in items {
                walk(item, out, depth + 1);
            }
        }
        Value::Object(obj) => {
            let node_type = obj.get("type").and_then(Value::as_str).unwrap_or("");
            if node_type.to_ascii_lowercase().ends_with("mention") {
                if let Some(m) = mention(node_type, obj.get("attrs")) {
                    if !out.iter().any(|o| o.id == m.id && o.kind == m.kind) {
                        out.push(m);
                    }
                }
            }
            if let Some(content) = obj.get("content") {
                walk(content, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn mention(node_type: &str, attrs: Option<&Value>) -> Option<Mention> {
    let attrs = attrs?.as_object()?;
    let id = match attrs.get("id")? {
        Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let label = attrs
        .get("label")
        .and_then(Value::as_str)
        .map(|l| l.trim().trim_start_matches('@').to_string())
        .filter(|l| !l.is_empty());
    let declared = ["type", "kind", "entity"]
        .iter()
        .filter_map(|k| attrs.get(*k).and_then(Value::as_str))
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>();
    let is_set = node_type.to_ascii_lowercase().contains("set")
        || declared
            .iter()
            .any(|d| d == "set" || d == "document_set" || d == "collection");
    Some(Mention {
        id,
        label,
        kind: if is_set {
            MentionKind::Set
        } else {
            MentionKind::Document
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_nested_mentions_once_in_order() {
        let doc = json!({"type": "doc", "content": [
            {"type": "paragraph", "content": [
                {"type": "text", "text": "Compare "},
                {"type": "mention", "attrs": {"id": "d1", "label": "@CRR"}},
                {"type": "text", "text": " with "},
            ]},
            {"type": "bulletList", "content": [{"type": "listItem", "content": [
                {"type": "paragraph", "content": [
                    {"type": "docMention", "attrs": {"id": "d2", "label": "AML"}},
                    {"type": "mention", "attrs": {"id": "d1", "label": "CRR"}},
                ]}
            ]}]}
        ]});
        let m = mentions(&doc);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].id, "d1");
        assert_eq!(m[0].label.as_deref(), Some("CRR"));
        assert_eq!(m[1].id, "d2");
        assert_eq!(m[1].kind, MentionKind::Document);
    }

    #[test]
    fn set_mentions_and_bad_nodes_are_told_apart() {
        let doc = json!({"content": [
            {"type": "mention", "attrs": {"id": "s1", "kind": "set"}},
            {"type": "setMention", "attrs": {"id": 7}},
            {"type": "mention", "attrs": {"label": "no id"}},
            {"type": "mention"},
        ]});
        let m = mentions(&doc);
        assert_eq!(m.len(), 2);
        assert!(m.iter().all(|m| m.kind == MentionKind::Set));
        assert_eq!(m[1].id, "7");
    }

    #[test]
    fn deep_nesting_stops_without_overflow() {
        let mut v = json!({"type": "mention", "attrs": {"id": "deep"}});
        for _ in 0..200 {
            v = json!({"type": "p", "content": [v]});
        }
        assert!(mentions(&v).is_empty());
    }
}
