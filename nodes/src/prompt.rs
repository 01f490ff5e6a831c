//! PalAssist prompts: the interrupts that ask the user, their exact payloads, reading the
//! answer, and the message that records an answered prompt in the conversation.
//!
//! A payload is `{"interrupt_type": "action_choice" | "doc_choice" | "text_input",
//! "message": <question>, "options": [{"id", "label"}...] | null}` (the chat contract's
//! `interrupt` event); a `doc_choice` ends with `{"id": "all", "label": "All of these"}`, a
//! `text_input` has `"options": null`. The resume value is the chosen option's `id` (a
//! string) or free text; `null` cancels.
//!
//! The same payload is also an Agent Inbox `HumanInterrupt` (`action_request: {action,
//! args}`, `config: {allow_ignore, allow_respond, allow_edit, allow_accept}`,
//! `description`), which agent-chat-ui renders and answers: its answer `[{"type":
//! "response", "args": <text>}]` is read as typed text (an option's id or label), `[{"type":
//! "ignore"}]` cancels. The chat contract's `interrupt` event leaves these fields out.

use palgraph::{Message, NodeContext, NodeError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::state::{Action, DocRef};

/// The `kind` in the metadata of a message recording an answered prompt.
pub const RECORD_KIND: &str = "palassist_prompt";

/// The option id that picks every offered document.
pub const ALL: &str = "all";

/// What a turn cancelled at a prompt answers (clients may hide it).
pub const CANCELLED_RESPONSE: &str =
    "Okay, I've stopped there. Send a new message whenever you're ready.";

/// The kind of prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptKind {
    /// Pick an action.
    ActionChoice,
    /// Pick a document (or all of them).
    DocChoice,
    /// Type an answer.
    TextInput,
}

/// A button of a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptOption {
    /// What the client sends back when it is chosen (an action name, a document id, or
    /// [`ALL`]).
    pub id: String,
    /// The button text.
    pub label: String,
}

impl PromptOption {
    fn new(id: impl Into<String>, label: impl Into<String>) -> Self {
        PromptOption {
            id: id.into(),
            label: label.into(),
        }
    }
}

/// A prompt: the interrupt payload PalAssist raises.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// The kind.
    pub interrupt_type: PromptKind,
    /// The question for the user.
    pub message: String,
    /// The choices (`None`, sent as `null`, for `text_input`).
    pub options: Option<Vec<PromptOption>>,
    /// Agent Inbox: what is asked (`{action: <interrupt_type>, args: {options}}`).
    #[serde(default)]
    pub action_request: Value,
    /// Agent Inbox: how it may be answered (a typed response, or ignored to cancel).
    #[serde(default)]
    pub config: Value,
    /// Agent Inbox: the question and its options, in Markdown.
    #[serde(default)]
    pub description: String,
}

impl Prompt {
    fn new(kind: PromptKind, message: String, options: Option<Vec<PromptOption>>) -> Self {
        let mut description = message.clone();
        if let Some(opts) = &options {
            description.push_str("\n\nAnswer with one of:");
            for o in opts {
                description.push_str(&format!("\n- {} (`{}`)", o.label, o.id));
            }
        }
        let kind_name = serde_json::to_value(kind).unwrap_or(Value::Null);
        Prompt {
            interrupt_type: kind,
            message,
            action_request: json!({
                "action": kind_name,
                "args": {"options": options.clone().unwrap_or_default()},
            }),
            config: json!({
                "allow_ignore": true, "allow_respond": true,
                "allow_edit": false, "allow_accept": false,
            }),
            description,
            options,
        }
    }
}

impl Prompt {
    /// Pick one of `actions`.
    pub fn action_choice(message: impl Into<String>, actions: &[Action]) -> Self {
        Prompt::new(
            PromptKind::ActionChoice,
            message.into(),
            Some(
                actions
                    .iter()
                    .map(|a| PromptOption::new(a.as_str(), a.label()))
                    .collect(),
            ),
        )
    }

    /// Pick one of `docs`, or all of them.
    pub fn doc_choice(message: impl Into<String>, docs: &[DocRef]) -> Self {
        let mut options: Vec<PromptOption> = docs
            .iter()
            .map(|d| PromptOption::new(d.id.clone(), d.title.clone()))
            .collect();
        options.push(PromptOption::new(ALL, "All of these"));
        Prompt::new(PromptKind::DocChoice, message.into(), Some(options))
    }

    /// Type an answer.
    pub fn text_input(message: impl Into<String>) -> Self {
        Prompt::new(PromptKind::TextInput, message.into(), None)
    }
}

/// Reads a resume value: a string (an option's `id` or typed text; trimmed, empty means
/// cancel), `null` (cancel), a number or boolean (as text), an object with a `value` (or
/// `"type": "cancel"`), as chat clients send `{type, value}`, or an Agent Inbox response
/// (`{"type": "response", "args": <text>}` or `{"type": "ignore"}`, alone or in a list of
/// one, as agent-chat-ui sends it).
///
/// # Errors
/// A fatal error for anything else (a list of several answers, an inbox `accept`/`edit`).
pub fn read_answer(value: Value) -> Result<Option<String>, NodeError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => {
            let s = s.trim();
            Ok((!s.is_empty()).then(|| s.to_string()))
        }
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Object(mut o) => match o.get("type").and_then(Value::as_str) {
            Some("cancel" | "ignore") => Ok(None),
            Some("response") => read_answer(o.remove("args").unwrap_or(Value::Null)),
            Some(t @ ("accept" | "edit")) => Err(NodeError::fatal(format!(
                "a PalAssist prompt cannot be answered with `{t}`: respond with text (an option's id or label), or ignore it to cancel"
            ))),
            _ => read_answer(o.remove("value").unwrap_or(Value::Null)),
        },
        Value::Array(mut list) if list.len() == 1 && list[0].is_object() => {
            read_answer(list.remove(0))
        }
        Value::Array(_) => Err(NodeError::fatal(
            "a PalAssist prompt is answered with a string (an option's id or text) or null to cancel, not a list",
        )),
    }
}

/// Asks the prompts of one node in order and keeps the records of the answered ones.
pub(crate) struct Asker<'a> {
    ctx: &'a NodeContext,
    records: Vec<Message>,
}

impl<'a> Asker<'a> {
    pub(crate) fn new(ctx: &'a NodeContext) -> Self {
        Asker {
            ctx,
            records: Vec::new(),
        }
    }

    /// How many prompts this node asked so far.
    pub(crate) fn asked(&self) -> usize {
        self.records.len()
    }

    /// Raises `prompt` (the first time: the node stops here) or returns its answer
    /// (`None`: cancelled), recording the prompt and its answer as an assistant message.
    pub(crate) fn ask(&mut self, prompt: &Prompt) -> Result<Option<String>, NodeError> {
        let raw: Value = self.ctx.interrupt(prompt)?;
        let answer = read_answer(raw)?;
        let id = format!("{}:prompt:{}", self.ctx.task_id(), self.records.len());
        self.records.push(
            Message::ai(prompt.message.clone())
                .with_id(id)
                .with_metadata("kind", RECORD_KIND)
                .with_metadata("interrupt_type", json!(prompt.interrupt_type))
                .with_metadata("answer", json!(answer)),
        );
        Ok(answer)
    }

    /// The records of the answered prompts.
    pub(crate) fn into_records(self) -> Vec<Message> {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_exact_shape() {
        let p = Prompt::doc_choice(
            "Which one?",
            &[DocRef {
                id: "d1".into(),
                title: "Policy".into(),
            }],
        );
        let options = json!([
            {"id": "d1", "label": "Policy"}, {"id": "all", "label": "All of these"}
        ]);
        let inbox_config = json!({
            "allow_ignore": true, "allow_respond": true, "allow_edit": false, "allow_accept": false
        });
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"interrupt_type": "doc_choice", "message": "Which one?", "options": options,
                "action_request": {"action": "doc_choice", "args": {"options": options}},
                "config": inbox_config,
                "description": "Which one?\n\nAnswer with one of:\n- Policy (`d1`)\n- All of these (`all`)"})
        );
        assert_eq!(
            serde_json::to_value(Prompt::text_input("Which?")).unwrap(),
            json!({"interrupt_type": "text_input", "message": "Which?", "options": null,
                "action_request": {"action": "text_input", "args": {"options": []}},
                "config": inbox_config, "description": "Which?"})
        );
        let a = serde_json::to_value(Prompt::action_choice("Do?", &[Action::Audit])).unwrap();
        assert_eq!(a["options"][0], json!({"id": "audit", "label": "Audit"}));
    }

    #[test]
    fn answers_read_strings_objects_and_cancels() {
        assert_eq!(
            read_answer(json!(" audit ")).unwrap().as_deref(),
            Some("audit")
        );
        assert_eq!(read_answer(json!(null)).unwrap(), None);
        assert_eq!(read_answer(json!("")).unwrap(), None);
        assert_eq!(
            read_answer(json!({"type": "choice", "value": "d1"}))
                .unwrap()
                .as_deref(),
            Some("d1")
        );
        assert_eq!(read_answer(json!({"type": "cancel"})).unwrap(), None);
        // Agent Inbox answers, as agent-chat-ui sends them.
        assert_eq!(
            read_answer(json!([{"type": "response", "args": "Policy"}]))
                .unwrap()
                .as_deref(),
            Some("Policy")
        );
        assert_eq!(
            read_answer(json!({"type": "response", "args": "all"}))
                .unwrap()
                .as_deref(),
            Some("all")
        );
        assert_eq!(
            read_answer(json!([{"type": "ignore", "args": null}])).unwrap(),
            None
        );
        assert!(read_answer(json!([{"type": "accept", "args": null}])).is_err());
        assert!(read_answer(json!(["a", "b"])).is_err());
        assert!(read_answer(json!(["x"])).is_err());
    }
}
