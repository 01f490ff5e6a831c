//! The prompts the OpenAI-compatible client sends: a system instruction per task and a
//! user turn carrying the message, the registry or the numbered passages.

use std::fmt::Write as _;

use super::{AnswerRequest, ChatLine, ChatRole, DocRequest, IntentRequest};
use crate::state::Action;

/// A system instruction and a user turn.
pub(crate) struct Prompt {
    pub(crate) system: String,
    pub(crate) user: String,
}

const INTENT: &str = "You route messages sent to PalAssist, a compliance document assistant. \
Choose the action the user wants: \"summarize\" (summarize documents), \"inquire\" (answer a \
question from documents), \"compare\" (compare two or more documents or versions), \"audit\" \
(check a text or practice against regulations and policies). List in requested_actions every \
action the message asks for, in order, and set multi_action_detected when it asks for more \
than one of summarize, compare and audit. Set enable_web_search when a good answer needs current \
information from outside the documents (whether a rule is still in force, recent changes, \
news). confidence is your certainty from 0 to 1: below 0.7 when the message is too short or \
vague to tell. Give a one-sentence reasoning.";

const DOCS: &str = "You resolve which documents a message sent to PalAssist, a compliance \
document assistant, refers to. You get the registry of documents already discussed in the \
conversation (id and title). Return in doc_ids the ids of registry documents the message \
refers to, by name, by kind (\"that regulation\") or by pronoun (\"it\", \"both\"); use the \
recent conversation, when given, to tell which one a pronoun means. Return in \
unresolved_names the names of documents the message refers to by name that are not in the \
registry, as written. confidence is your certainty from 0 to 1 that doc_ids is right: 0 with \
empty doc_ids when the message refers to no registry document, around 0.5 when several \
registry documents fit equally. Give a one-sentence reasoning.";

fn history_block(out: &mut String, history: &[ChatLine]) {
    if history.is_empty() {
        return;
    }
    out.push_str("Recent conversation:\n");
    for line in history {
        let who = match line.role {
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
        };
        let _ = writeln!(out, "{who}: {}", line.content);
    }
    out.push('\n');
}

pub(crate) fn intent(request: &IntentRequest) -> Prompt {
    let mut user = String::new();
    history_block(&mut user, &request.history);
    let _ = write!(user, "Message: {}", request.message);
    Prompt {
        system: INTENT.into(),
        user,
    }
}

pub(crate) fn documents(request: &DocRequest) -> Prompt {
    let mut user = String::from("Registry (id: title):\n");
    if request.registry.is_empty() {
        user.push_str("(empty)\n");
    }
    for d in &request.registry {
        let _ = writeln!(user, "- {}: {}", d.id, d.title);
    }
    user.push('\n');
    history_block(&mut user, &request.history);
    let _ = write!(user, "Message: {}", request.message);
    Prompt {
        system: DOCS.into(),
        user,
    }
}

const CITE: &str = "Use only the numbered passages below, and cite each statement with the \
marker of the passage it comes from, like [3]. If the passages do not contain the answer, say \
so plainly. Be concise; use Markdown bullet points.";

fn action_instruction(action: Action) -> &'static str {
    match action {
        Action::Summarize => "Summarize the documents for a compliance officer: their purpose, the key obligations with their figures (ratios, thresholds, deadlines, retention periods) and who is responsible. Group the points by document.",
        Action::Inquire => "Answer the user's question. Quote exact figures and conditions.",
        Action::Compare => "Compare the documents side by side: what changed (old value -> new value), what appears in only one of them, and what is the same. Group by topic and cite both sides of each change.",
        Action::Audit => "Audit the user's text against the regulations and policies in the passages. For each statement of the text say whether it is consistent, conflicts (name the requirement it breaks) or is not covered. List conflicts first.",
    }
}

pub(crate) fn answer(request: &AnswerRequest, web_search_model: bool) -> Prompt {
    let mut system = format!(
        "You are PalAssist, a compliance document assistant. {} {CITE}",
        action_instruction(request.action)
    );
    if let Some(q) = &request.web_search_query {
        if web_search_model {
            let _ = write!(
                system,
                " You may search the web for current information (suggested query: \"{q}\"); mark what comes from the web as such."
            );
        } else {
            system.push_str(
                " The user asked for current information from the web, but web search is not configured: say that the answer relies on the documents only and that the current status should be checked with the issuing authority.",
            );
        }
    }
    let mut user = String::new();
    history_block(&mut user, &request.history);
    let titles: Vec<&str> = request.documents.iter().map(|d| d.title.as_str()).collect();
    let _ = writeln!(user, "Documents: {}\n\nPassages:", titles.join("; "));
    for p in &request.passages {
        let heading = p
            .heading
            .as_deref()
            .map(|h| format!(" / {h}"))
            .unwrap_or_default();
        let _ = writeln!(user, "[{}] ({}{heading}) {}", p.number, p.title, p.text);
    }
    if let Some(text) = &request.audit_text {
        let _ = write!(user, "\nText to audit:\n{text}\n");
    }
    let _ = write!(user, "\nRequest: {}", request.question);
    Prompt { system, user }
}
