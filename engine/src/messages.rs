//! Chat messages and the `add_messages` reducer.
//!
//! [`Message`] serializes the way LangChain messages do (`{"type": "human", "content": ..,
//! "id": ..}`), so LangGraph clients read palgraph's state unchanged; `role` with
//! `user`/`assistant` is accepted on input too. Content given as a list of blocks (text,
//! images, files: what agent-chat-ui sends with attachments) is kept whole in
//! [`Message::blocks`] and serialized back as that list; [`Message::content`] holds its text.
//! An AI message's tool calls (kept in its `metadata.tool_calls` as `{id, name, args}`) are
//! written as LangChain's top-level `tool_calls` (`{id, name, args, type: "tool_call"}`) and
//! a tool message's `metadata.tool_call_id` as its top-level `tool_call_id`; both are read
//! back into the metadata, so agent-chat-ui and LangChain clients see tool calls where they
//! look for them.
//!
//! [`AddMessages`] appends; a message whose id already exists replaces that message in place;
//! [`Message::remove`] deletes by id (an unknown id is an error) and
//! [`Message::remove_all`] clears the list; messages without an id get a fresh one before the
//! update is recorded, so a replayed update rebuilds the same list.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::reducer::{ReduceError, Reducer};

/// The id that [`Message::remove_all`] carries.
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// Who wrote a message (LangChain's message `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MessageKind {
    /// The user (`human`; `user` is accepted on input).
    #[serde(alias = "user")]
    Human,
    /// The assistant (`ai`; `assistant` is accepted on input).
    #[serde(alias = "assistant")]
    Ai,
    /// A system instruction.
    System,
    /// A tool result.
    Tool,
    /// A removal marker: deletes the message with this id.
    Remove,
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "WireMessage")]
pub struct Message {
    /// Who wrote it.
    pub kind: MessageKind,
    /// The text (of the text blocks, joined, when the content came as a list of blocks).
    pub content: String,
    /// The content blocks the message came with (`{"type": "text" | "image" | "file" |
    /// ..}`), kept whole; empty for a plain text message. When not empty, this list is
    /// what the message serializes as its `content`.
    pub blocks: Vec<Value>,
    /// A stable id; assigned when missing.
    pub id: Option<String>,
    /// An optional author name.
    pub name: Option<String>,
    /// Free-form metadata (citations, `interrupted`, a prompt's type, an AI message's
    /// `tool_calls`, a tool message's `tool_call_id`, ...).
    pub metadata: Map<String, Value>,
}

/// A message as it is read (LangChain's shape): `content` is a string or a list of blocks.
#[derive(Deserialize)]
struct WireMessage {
    #[serde(rename = "type", alias = "role")]
    kind: MessageKind,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
    /// LangChain's AI message tool calls: `[{id, name, args, type: "tool_call"}]`.
    #[serde(default)]
    tool_calls: Option<Value>,
    /// LangChain's tool message: the call it answers.
    #[serde(default)]
    tool_call_id: Option<Value>,
}

impl From<WireMessage> for Message {
    fn from(w: WireMessage) -> Self {
        let (content, blocks) = match w.content {
            Value::Null => (String::new(), Vec::new()),
            Value::String(s) => (s, Vec::new()),
            Value::Array(blocks) => (blocks_text(&blocks), blocks),
            other => (other.to_string(), Vec::new()),
        };
        let mut metadata = w.metadata;
        if let Some(Value::Array(calls)) = w.tool_calls {
            if !calls.is_empty() {
                let calls = calls
                    .into_iter()
                    .map(|mut c| {
                        if let Value::Object(o) = &mut c {
                            o.remove("type");
                        }
                        c
                    })
                    .collect();
                metadata.insert(TOOL_CALLS.into(), Value::Array(calls));
            }
        }
        if let Some(id @ Value::String(_)) = w.tool_call_id {
            metadata.insert(TOOL_CALL_ID.into(), id);
        }
        Message {
            kind: w.kind,
            content,
            blocks,
            id: w.id,
            name: w.name,
            metadata,
        }
    }
}

const TOOL_CALLS: &str = "tool_calls";
const TOOL_CALL_ID: &str = "tool_call_id";

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let calls = match self.metadata.get(TOOL_CALLS) {
            Some(Value::Array(calls)) if self.kind == MessageKind::Ai => Some(calls),
            _ => None,
        };
        let call_id = match self.metadata.get(TOOL_CALL_ID) {
            Some(id @ Value::String(_)) if self.kind == MessageKind::Tool => Some(id),
            _ => None,
        };
        let lifted = |k: &str| {
            (k == TOOL_CALLS && calls.is_some()) || (k == TOOL_CALL_ID && call_id.is_some())
        };
        let rest = self.metadata.iter().filter(|(k, _)| !lifted(k));
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", &self.kind)?;
        if self.blocks.is_empty() {
            map.serialize_entry("content", &self.content)?;
        } else {
            map.serialize_entry("content", &self.blocks)?;
        }
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        if rest.clone().next().is_some() {
            map.serialize_entry("metadata", &RestOf(rest))?;
        }
        if let Some(calls) = calls {
            map.serialize_entry(TOOL_CALLS, &ToolCallsWire(calls))?;
        }
        if let Some(id) = call_id {
            map.serialize_entry(TOOL_CALL_ID, id)?;
        }
        map.end()
    }
}

/// The metadata entries not lifted to the top level.
struct RestOf<I>(I);

impl<'a, I> Serialize for RestOf<I>
where
    I: Iterator<Item = (&'a String, &'a Value)> + Clone,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.clone())
    }
}

/// Tool calls with LangChain's `type: "tool_call"` on each.
struct ToolCallsWire<'a>(&'a [Value]);

impl Serialize for ToolCallsWire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| match c {
            Value::Object(o) if !o.contains_key("type") => {
                let mut o = o.clone();
                o.insert("type".into(), Value::String("tool_call".into()));
                Value::Object(o)
            }
            other => other.clone(),
        }))
    }
}

/// The text of content blocks: their text parts (and bare strings), joined.
pub fn blocks_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) if o.get("type").is_none_or(|t| t == "text") => {
                o.get("text").and_then(Value::as_str).map(str::to_owned)
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

impl Message {
    fn new(kind: MessageKind, content: impl Into<String>) -> Self {
        Message {
            kind,
            content: content.into(),
            blocks: Vec::new(),
            id: None,
            name: None,
            metadata: Map::new(),
        }
    }

    /// A user message.
    pub fn human(content: impl Into<String>) -> Self {
        Self::new(MessageKind::Human, content)
    }

    /// An assistant message.
    pub fn ai(content: impl Into<String>) -> Self {
        Self::new(MessageKind::Ai, content)
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(MessageKind::System, content)
    }

    /// A tool result.
    pub fn tool(content: impl Into<String>) -> Self {
        Self::new(MessageKind::Tool, content)
    }

    /// A marker that deletes the message with `id`.
    pub fn remove(id: impl Into<String>) -> Self {
        Self::new(MessageKind::Remove, "").with_id(id)
    }

    /// A marker that deletes every message before it.
    pub fn remove_all() -> Self {
        Self::remove(REMOVE_ALL_MESSAGES)
    }

    /// The same message with an id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same message with one more metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

impl From<Message> for Vec<Message> {
    fn from(m: Message) -> Self {
        vec![m]
    }
}

/// The `add_messages` reducer over `Vec<Message>`.
#[derive(Debug, Clone, Copy)]
pub struct AddMessages;

impl Reducer<Vec<Message>> for AddMessages {
    type Update = Vec<Message>;
    const NAME: &'static str = "add_messages";
    const DELTA: bool = true;

    fn normalize(update: &mut Vec<Message>) {
        for m in update.iter_mut() {
            if m.id.as_deref().is_none_or(str::is_empty) && m.kind != MessageKind::Remove {
                m.id = Some(uuid::Uuid::new_v4().to_string());
            }
        }
    }

    fn reduce_batch(
        current: &mut Vec<Message>,
        updates: Vec<Vec<Message>>,
    ) -> Result<(), ReduceError> {
        // One id index for the whole batch: folding a long chain stays linear.
        fn index(list: &[Message]) -> std::collections::HashMap<String, usize> {
            list.iter()
                .enumerate()
                .filter_map(|(i, m)| m.id.clone().map(|id| (id, i)))
                .collect()
        }
        let mut by_id = index(current);
        for m in updates.into_iter().flatten() {
            let id = m.id.clone().filter(|s| !s.is_empty());
            if m.kind == MessageKind::Remove {
                let Some(id) = id else {
                    return Err(ReduceError::new(
                        "a remove marker needs the id of the message to remove",
                    ));
                };
                if id == REMOVE_ALL_MESSAGES {
                    current.clear();
                    by_id.clear();
                    continue;
                }
                let pos = by_id.get(&id).copied().ok_or_else(|| {
                    ReduceError::new(format!(
                        "cannot remove message `{id}`: no message has that id"
                    ))
                })?;
                current.remove(pos);
                by_id = index(current);
                continue;
            }
            match id.as_ref().and_then(|id| by_id.get(id)).copied() {
                Some(pos) => current[pos] = m,
                None => {
                    let mut m = m;
                    let id = id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                    m.id = Some(id.clone());
                    by_id.insert(id, current.len());
                    current.push(m);
                }
            }
        }
        Ok(())
    }

    fn reduce(current: &mut Vec<Message>, update: Vec<Message>) -> Result<(), ReduceError> {
        for m in update {
            let id = m.id.as_deref().filter(|s| !s.is_empty());
            if m.kind == MessageKind::Remove {
                let Some(id) = id else {
                    return Err(ReduceError::new(
                        "a remove marker needs the id of the message to remove",
                    ));
                };
                if id == REMOVE_ALL_MESSAGES {
                    current.clear();
                    continue;
                }
                match current.iter().rposition(|c| c.id.as_deref() == Some(id)) {
                    Some(pos) => {
                        current.remove(pos);
                    }
                    None => {
                        return Err(ReduceError::new(format!(
                            "cannot remove message `{id}`: no message has that id"
                        )))
                    }
                }
                continue;
            }
            let existing =
                id.and_then(|id| current.iter().rposition(|c| c.id.as_deref() == Some(id)));
            match existing {
                Some(pos) => current[pos] = m,
                None => {
                    let mut m = m;
                    if m.id.as_deref().is_none_or(str::is_empty) {
                        m.id = Some(uuid::Uuid::new_v4().to_string());
                    }
                    current.push(m);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[Message]) -> Vec<&str> {
        v.iter().map(|m| m.id.as_deref().unwrap_or("")).collect()
    }

    #[test]
    fn appends_replaces_by_id_and_removes() {
        let mut list = vec![];
        AddMessages::reduce(
            &mut list,
            vec![
                Message::human("a").with_id("1"),
                Message::ai("b").with_id("2"),
            ],
        )
        .unwrap();
        AddMessages::reduce(
            &mut list,
            vec![
                Message::ai("b2").with_id("2"),
                Message::human("c").with_id("3"),
            ],
        )
        .unwrap();
        assert_eq!(ids(&list), ["1", "2", "3"]);
        assert_eq!(list[1].content, "b2");
        AddMessages::reduce(&mut list, vec![Message::remove("1")]).unwrap();
        assert_eq!(ids(&list), ["2", "3"]);
        let err = AddMessages::reduce(&mut list, vec![Message::remove("nope")]).unwrap_err();
        assert!(err.message.contains("nope"));
        AddMessages::reduce(
            &mut list,
            vec![Message::remove_all(), Message::human("d").with_id("4")],
        )
        .unwrap();
        assert_eq!(ids(&list), ["4"]);
    }

    #[test]
    fn normalize_assigns_ids_once() {
        let mut upd = vec![Message::human("x"), Message::ai("y").with_id("keep")];
        AddMessages::normalize(&mut upd);
        let first = upd[0].id.clone().unwrap();
        assert!(!first.is_empty());
        assert_eq!(upd[1].id.as_deref(), Some("keep"));
        AddMessages::normalize(&mut upd);
        assert_eq!(upd[0].id.as_deref(), Some(first.as_str()));
    }

    #[test]
    fn tool_calls_use_langchain_fields_and_read_back() {
        let call = serde_json::json!({"id": "call_0", "name": "lookup", "args": {"q": "x"}});
        let ai = Message::ai("")
            .with_id("a")
            .with_metadata("tool_calls", serde_json::json!([call.clone()]));
        let wire = serde_json::to_value(&ai).unwrap();
        assert_eq!(wire["tool_calls"][0]["type"], "tool_call");
        assert_eq!(wire["tool_calls"][0]["name"], "lookup");
        assert!(
            wire.get("metadata").is_none(),
            "lifted, not repeated: {wire}"
        );
        let back: Message = serde_json::from_value(wire).unwrap();
        assert_eq!(back, ai, "reads back into the metadata");

        let tool = Message::tool("42")
            .with_metadata("tool_call_id", "call_0")
            .with_metadata("k", 1);
        let wire = serde_json::to_value(&tool).unwrap();
        assert_eq!(wire["tool_call_id"], "call_0");
        assert_eq!(wire["metadata"], serde_json::json!({"k": 1}));
        assert_eq!(serde_json::from_value::<Message>(wire).unwrap(), tool);

        // A LangChain client's messages: empty tool_calls stay out of the metadata.
        let m: Message = serde_json::from_value(serde_json::json!(
            {"type": "ai", "content": "hi", "tool_calls": [], "invalid_tool_calls": []}
        ))
        .unwrap();
        assert!(m.metadata.is_empty());
    }

    #[test]
    fn reads_langchain_and_role_shapes() {
        let m: Message = serde_json::from_str(r#"{"type":"human","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}"#).unwrap();
        assert_eq!(m.kind, MessageKind::Human);
        assert_eq!(m.content, "hi there");
        let m: Message =
            serde_json::from_str(r#"{"role":"assistant","content":"ok","id":"9"}"#).unwrap();
        assert_eq!(m.kind, MessageKind::Ai);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"type":"ai","content":"ok","id":"9"})
        );
    }

    #[test]
    fn content_blocks_are_kept_whole_and_their_text_read() {
        let wire = serde_json::json!({"type": "human", "id": "m1", "content": [
            {"type": "text", "text": "What does "},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "text", "text": "this say?"},
            {"type": "file", "mimeType": "application/pdf", "data": "JVBERi0=",
             "metadata": {"filename": "report.pdf"}}
        ]});
        let m: Message = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(m.content, "What does this say?");
        assert_eq!(m.blocks.len(), 4);
        assert_eq!(serde_json::to_value(&m).unwrap(), wire, "round trip, whole");
        let back: Message = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        let plain = Message::human("hi");
        assert!(plain.blocks.is_empty());
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"type": "human", "content": "hi"})
        );
    }
}
