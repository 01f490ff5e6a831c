//! Reading the conversation: the current request without its mention labels, the
//! mentions of its TipTap JSON, and the recent lines given to the LLM.

use palgraph::{Message, MessageKind};

use crate::llm::{ChatLine, ChatRole};
use crate::prompt::RECORD_KIND;
use crate::state::AgentState;
use crate::text::{shorten, strip_mentions};
use crate::tiptap::{self, Mention};

/// The longest line of history given to the LLM.
const HISTORY_LINE_CHARS: usize = 1_000;

/// The mentions of the turn's TipTap JSON.
pub(crate) fn mentions(state: &AgentState) -> Vec<Mention> {
    state
        .tiptap_json
        .as_ref()
        .map(tiptap::mentions)
        .unwrap_or_default()
}

/// The current message without the labels of its mentions and of `more_labels`.
pub(crate) fn request_text(state: &AgentState, more_labels: &[String]) -> String {
    let mut labels: Vec<String> = mentions(state)
        .into_iter()
        .filter_map(|m| m.label)
        .collect();
    labels.extend(more_labels.iter().cloned());
    strip_mentions(state.current_message(), &labels)
}

fn is_prompt_record(m: &Message) -> bool {
    m.metadata.get("kind").and_then(|k| k.as_str()) == Some(RECORD_KIND)
}

/// Up to `n` user and assistant messages before the current one (prompt records left out).
pub(crate) fn recent_lines(state: &AgentState, n: usize) -> Vec<ChatLine> {
    let current = state
        .messages
        .iter()
        .rposition(|m| m.kind == MessageKind::Human)
        .unwrap_or(state.messages.len());
    let mut lines: Vec<ChatLine> = state.messages[..current]
        .iter()
        .rev()
        .filter(|m| !is_prompt_record(m))
        .filter_map(|m| {
            let role = match m.kind {
                MessageKind::Human => ChatRole::User,
                MessageKind::Ai => ChatRole::Assistant,
                _ => return None,
            };
            Some(ChatLine {
                role,
                content: shorten(&m.content, HISTORY_LINE_CHARS),
            })
        })
        .take(n)
        .collect();
    lines.reverse();
    lines
}

/// The index of the current message (the last human message).
fn current(state: &AgentState) -> usize {
    state
        .messages
        .iter()
        .rposition(|m| m.kind == MessageKind::Human)
        .unwrap_or(state.messages.len())
}

/// The user's message before the current one, if any.
pub(crate) fn previous_request(state: &AgentState) -> Option<String> {
    state.messages[..current(state)]
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human)
        .map(|m| m.content.clone())
}

/// The documents the answer before the current message worked on (its `doc_ids`), if any.
pub(crate) fn previous_answer_docs(state: &AgentState) -> Vec<String> {
    state.messages[..current(state)]
        .iter()
        .rev()
        .filter(|m| m.kind == MessageKind::Ai && !is_prompt_record(m))
        .find_map(|m| {
            m.metadata
                .get("doc_ids")
                .and_then(|v| v.as_array())
                .cloned()
        })
        .map(|ids| {
            ids.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
