//! [`AgentState`]: PalAssist's graph state, the actions it can run, the citations it
//! returns, and the mapping from a chat request ([`ChatTurn`]) to a turn's input.
//!
//! Two fields are persistent: `messages` (the conversation, `add_messages`) and
//! `conversation_docs` (the registry of documents discussed so far, `{title: doc_id}`,
//! merge-map: it only grows). Everything else describes one turn and is transient: the
//! engine resets it when a new message arrives, never on a resume.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use palgraph::{AddMessages, Append, MergeMap, Message, State};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What PalAssist can do with the resolved documents.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Summarize one or more documents.
    Summarize,
    /// Answer a question from the documents.
    Inquire,
    /// Compare two or more documents.
    Compare,
    /// Check a text against regulations and policies.
    Audit,
}

impl Action {
    /// Every action, in the order prompts offer them.
    pub const ALL: [Action; 4] = [
        Action::Summarize,
        Action::Inquire,
        Action::Compare,
        Action::Audit,
    ];

    /// The wire name (`summarize`, `inquire`, `compare`, `audit`), also the node's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Summarize => "summarize",
            Action::Inquire => "inquire",
            Action::Compare => "compare",
            Action::Audit => "audit",
        }
    }

    /// The button text in an `action_choice` prompt.
    pub fn label(self) -> &'static str {
        match self {
            Action::Summarize => "Summarize",
            Action::Inquire => "Answer a question",
            Action::Compare => "Compare",
            Action::Audit => "Audit",
        }
    }

    /// The node's status line.
    pub fn status_line(self) -> &'static str {
        match self {
            Action::Summarize => "Summarizing documents...",
            Action::Inquire => "Researching your question...",
            Action::Compare => "Comparing documents...",
            Action::Audit => "Auditing against regulations...",
        }
    }

    /// Reads an action name, case-insensitively; `ask`/`question` mean inquire.
    pub fn parse(name: &str) -> Option<Action> {
        match name.trim().to_ascii_lowercase().as_str() {
            "summarize" | "summarise" | "summary" => Some(Action::Summarize),
            "inquire" | "enquire" | "ask" | "question" => Some(Action::Inquire),
            "compare" | "comparison" => Some(Action::Compare),
            "audit" => Some(Action::Audit),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action name that is not one of [`Action::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action `{0}`: expected summarize, inquire, compare or audit")]
pub struct UnknownAction(pub String);

impl FromStr for Action {
    type Err = UnknownAction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Action::parse(s).ok_or_else(|| UnknownAction(s.to_string()))
    }
}

/// A document by id and title.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct DocRef {
    /// The document's id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// A passage an answer relies on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Citation {
    /// The cited document.
    pub doc_id: String,
    /// Its title.
    pub title: String,
    /// The passage quoted (shortened when long).
    pub quote: String,
    /// The marker the answer uses for it (`[n]`).
    pub marker: u32,
}

/// What made an answer: the offline extractive model (PalAssist's own, which quotes the
/// documents and compares wording and figures, without a language model), or a language
/// model, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnsweredBy {
    /// `offline` or `model`.
    pub kind: AnswerKind,
    /// The model's name (`None` offline).
    pub model: Option<String>,
}

impl AnsweredBy {
    /// The offline extractive model.
    pub fn offline() -> Self {
        AnsweredBy {
            kind: AnswerKind::Offline,
            model: None,
        }
    }

    /// The language model `name`.
    pub fn model(name: impl Into<String>) -> Self {
        AnsweredBy {
            kind: AnswerKind::Model,
            model: Some(name.into()),
        }
    }
}

/// The kind of [`AnsweredBy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// PalAssist's offline extractive model: quotes, no judgement.
    Offline,
    /// A language model.
    Model,
}

/// How the documents of a turn were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InferenceSource {
    /// Mentioned (TipTap mentions or tagged ids).
    Explicit,
    /// Referred to from the conversation's registry ("that regulation").
    Registry,
    /// Named in the text and matched to a title by similarity.
    Fuzzy,
    /// Picked by the user at a prompt.
    UserChoice,
    /// Nothing named: the documents whose content matches the question.
    Retrieval,
}

/// PalAssist's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State, JsonSchema)]
pub struct AgentState {
    /// The conversation (persistent, `add_messages`).
    #[state(reducer = AddMessages)]
    #[schemars(with = "Vec<Value>")]
    pub messages: Vec<Message>,
    /// Documents discussed in this conversation, `{title: doc_id}` (persistent, merge-map).
    #[state(reducer = MergeMap)]
    pub conversation_docs: BTreeMap<String, String>,

    /// Document ids the user tagged (request input).
    #[state(transient)]
    pub explicit_doc_ids: Vec<String>,
    /// Document-set ids the user tagged (request input; see [`crate::doc_resolver`]).
    #[state(transient)]
    pub tagged_set_ids: Vec<String>,
    /// The message as TipTap JSON, with its mention nodes (request input).
    #[state(transient)]
    pub tiptap_json: Option<Value>,
    /// The action: asked for explicitly (request input), then the one resolved.
    #[state(transient)]
    pub action: Option<Action>,
    /// Whether the answer may use web search (request input OR keywords OR the LLM).
    #[state(transient)]
    pub enable_web_search: bool,
    /// The web query the action uses, when web search is on.
    #[state(transient)]
    pub web_search_query: Option<String>,
    /// How sure the intent resolver is of `action` (0..1).
    #[state(transient)]
    pub intent_confidence: f64,
    /// The message asked for several actions.
    #[state(transient)]
    pub multi_action_detected: bool,

    /// The documents the action works on.
    #[state(transient)]
    pub resolved_doc_ids: Vec<String>,
    /// How they were found.
    #[state(transient)]
    pub inference_source: Option<InferenceSource>,
    /// How sure the doc resolver is of them (0..1).
    #[state(transient)]
    pub inference_confidence: f64,
    /// How well the passages used match the request (0..1).
    #[state(transient)]
    pub retrieval_confidence: f64,
    /// Names in the message that match no document.
    #[state(transient)]
    pub unresolved_names: Vec<String>,
    /// Documents offered to the user (prompt candidates, near matches).
    #[state(transient)]
    pub suggested_doc_ids: Vec<String>,
    /// The text an audit checks.
    #[state(transient)]
    pub audit_text: Option<String>,
    /// Things the answer should tell the user (web search dropped, a tag ignored, ...).
    #[state(transient, reducer = Append)]
    pub notices: Vec<String>,
    /// The user cancelled a prompt: the turn ends without an action.
    #[state(transient)]
    pub cancelled: bool,

    /// The answer.
    #[state(transient)]
    pub response: String,
    /// The passages it cites.
    #[state(transient)]
    pub citations: Vec<Citation>,
    /// What made the answer (set by the action nodes; `None` when no action answered).
    #[state(transient)]
    pub answered_by: Option<AnsweredBy>,
    /// LLM tokens this turn used (each node adds its own).
    #[state(transient, reduce_with = add_tokens)]
    pub tokens_used: u64,
    /// What this turn's LLM calls cost in USD (each node adds its own).
    #[state(transient, reduce_with = add_cost)]
    pub cost_usd: f64,
}

fn add_tokens(total: &mut u64, more: u64) {
    *total = total.saturating_add(more);
}

fn add_cost(total: &mut f64, more: f64) {
    *total += more;
}

impl AgentState {
    /// The user's message of the current turn (the last human message).
    pub fn current_message(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.kind == palgraph::MessageKind::Human)
            .map(|m| m.content.as_str())
            .unwrap_or("")
    }

    /// The registry as document references, in title order.
    pub fn registry(&self) -> Vec<DocRef> {
        self.conversation_docs
            .iter()
            .map(|(title, id)| DocRef {
                id: id.clone(),
                title: title.clone(),
            })
            .collect()
    }
}

impl AgentStateUpdate {
    /// Adds LLM usage (tokens and cost), when there is any.
    pub(crate) fn with_usage(self, usage: &crate::llm::Usage) -> Self {
        if usage.total_tokens() == 0 && usage.cost_usd == 0.0 {
            return self;
        }
        self.tokens_used(usage.total_tokens())
            .cost_usd(usage.cost_usd)
    }

    /// Appends messages, when there are any.
    pub(crate) fn with_messages(self, messages: Vec<Message>) -> Self {
        if messages.is_empty() {
            self
        } else {
            self.messages(messages)
        }
    }

    /// Appends notices, when there are any.
    pub(crate) fn with_notices(self, notices: Vec<String>) -> Self {
        if notices.is_empty() {
            self
        } else {
            self.notices(notices)
        }
    }

    /// Ends the turn at a cancelled prompt: no action runs, the response says so.
    pub(crate) fn cancelled_turn(self, response: &str) -> Self {
        self.cancelled(true).response(response.to_string())
    }
}

/// A chat request: what a chat frontend sends for a new message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatTurn {
    /// The message as plain text.
    pub message: String,
    /// The message as TipTap JSON (mention nodes carry document ids).
    #[serde(default)]
    pub tiptap_json: Option<Value>,
    /// Document ids tagged outside the text.
    #[serde(default)]
    pub tagged_doc_ids: Vec<String>,
    /// Document-set ids tagged outside the text: every document of each of the user's sets
    /// is in scope (see [`crate::documents::DocumentSetStore`]).
    #[serde(default)]
    pub tagged_set_ids: Vec<String>,
    /// An explicit action (`summarize`, `inquire`, `compare`, `audit`).
    #[serde(default)]
    pub action: Option<String>,
    /// Let the answer use web search.
    #[serde(default)]
    pub enable_web_search: bool,
}

/// The input of a new turn: appends the human message and sets the request's transient
/// fields. An explicit action is certain (`intent_confidence` 1: PalAssist's graph then
/// skips intent classification); an unknown one is dropped with a notice (the intent is
/// then inferred from the message).
pub fn turn_input(turn: ChatTurn) -> AgentStateUpdate {
    let requested = turn
        .action
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let action = requested.and_then(Action::parse);
    let mut human = Message::human(turn.message);
    if !turn.tagged_doc_ids.is_empty() {
        human = human.with_metadata("tagged_doc_ids", json!(turn.tagged_doc_ids));
    }
    if !turn.tagged_set_ids.is_empty() {
        human = human.with_metadata("tagged_set_ids", json!(turn.tagged_set_ids));
    }
    if let Some(a) = action {
        human = human.with_metadata("action", a.as_str());
    }
    // Transient fields start every new turn at their defaults: the input sets only what
    // differs (it is stored with the run and its checkpoint).
    let mut update = AgentStateUpdate::default().messages(vec![human]);
    if turn.tiptap_json.is_some() {
        update = update.tiptap_json(turn.tiptap_json);
    }
    if !turn.tagged_doc_ids.is_empty() {
        update = update.explicit_doc_ids(turn.tagged_doc_ids);
    }
    if !turn.tagged_set_ids.is_empty() {
        update = update.tagged_set_ids(turn.tagged_set_ids);
    }
    if turn.enable_web_search {
        update = update.enable_web_search(true);
    }
    if action.is_some() {
        update = update.action(action).intent_confidence(1.0);
    }
    if let (Some(name), None) = (requested, action) {
        update = update.notices(vec![format!(
            "\"{name}\" is not an action I know (summarize, inquire, compare, audit), so I worked out what to do from your message."
        )]);
    }
    update
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_input_appends_the_message_and_sets_transient_inputs() {
        let turn: ChatTurn = serde_json::from_value(json!({
            "message": "Summarize @CRR",
            "tagged_doc_ids": ["d1"],
            "action": "Summarize",
            "enable_web_search": true
        }))
        .unwrap();
        let mut state = AgentState::default();
        state.apply(turn_input(turn)).unwrap();
        assert_eq!(state.current_message(), "Summarize @CRR");
        assert_eq!(state.explicit_doc_ids, ["d1"]);
        assert_eq!(state.action, Some(Action::Summarize));
        assert!(state.enable_web_search);
        assert!(state.notices.is_empty());
        assert_eq!(state.messages[0].metadata["action"], "summarize");
        assert_eq!(state.intent_confidence, 1.0);
    }

    #[test]
    fn a_plain_message_sets_nothing_but_the_message() {
        let turn = ChatTurn {
            message: "What are the capital requirements?".into(),
            ..Default::default()
        };
        let input = serde_json::to_value(turn_input(turn)).unwrap();
        let keys: Vec<&String> = input.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["messages"], "{input}");
    }

    #[test]
    fn unknown_action_is_dropped_with_a_notice() {
        let turn = ChatTurn {
            message: "hi".into(),
            action: Some("translate".into()),
            ..Default::default()
        };
        let mut state = AgentState::default();
        state.apply(turn_input(turn)).unwrap();
        assert_eq!(state.action, None);
        assert!(state.notices[0].contains("translate"));
    }

    #[test]
    fn only_messages_and_registry_are_persistent() {
        let persistent: Vec<&str> = AgentState::FIELDS
            .iter()
            .filter(|f| f.lifetime == palgraph::Lifetime::Persistent)
            .map(|f| f.name)
            .collect();
        assert_eq!(persistent, ["messages", "conversation_docs"]);
    }

    #[test]
    fn state_has_a_json_schema() {
        let schema = schemars::schema_for!(AgentState);
        let props = &schema.as_value()["properties"];
        assert!(props["conversation_docs"].is_object());
        assert!(props["messages"].is_object());
    }
}
