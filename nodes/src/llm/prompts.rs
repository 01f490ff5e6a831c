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

const CITE: &str = "Use only the numbered passages below. Cite every statement with the \
number of the passage it comes from in square brackets, like [3] or [2, 5]; cite only numbers \
listed below, never a passage you were not given. Quote the documents and the user's text \
word for word when you quote them. If the passages do not contain the answer, say so plainly \
instead of guessing. Be concise; use Markdown bullet points. End with one line \
\"Confidence: high|medium|low: <reason>\", grounded in the retrieval: high only when a cited \
passage states the answer outright, low when the passages only touch on the request or the \
retrieval match is low.";

/// A 0..1 match as a word (the chat contract's retrieval levels).
fn level(score: f64) -> &'static str {
    crate::confidence::Confidence::of_retrieval(score).as_str()
}

fn action_instruction(action: Action) -> &'static str {
    match action {
        Action::Summarize => "Summarize the documents for a compliance officer: their purpose, the key obligations with their figures (ratios, thresholds, deadlines, retention periods) and who is responsible. Group the points by document.",
        Action::Inquire => "Answer the user's question. Quote exact figures and conditions.",
        Action::Compare => "Compare the documents side by side: what changed (old value -> new value), what appears in only one of them, and what is the same. Group by topic and cite both sides of each change. When one document replaces the other, say so and treat the older one as the base.",
        Action::Audit => "Audit the user's text against the regulations and policies in the passages. For each statement of the text, quote it and give one label: \"Possible gap\" when it contradicts or falls short of a requirement (a shorter period, a later deadline, another or no approver, optional wording for a mandatory rule; compare durations across units, e.g. 12 months is less than 5 years); \"Consistent\" only when it states the same obligation with compatible values (figures, who approves, timing); \"Not verified\" when a requirement applies but the text does not state enough to tell; \"Not covered\" when no passage applies. Quote the requirement each label rests on and cite it. List possible gaps first. Say that this is a document check, not a legal opinion.",
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
    let _ = writeln!(user, "Documents: {}", titles.join("; "));
    for r in &request.versions {
        let _ = writeln!(
            user,
            "Versions: {} replaces {} (it says: \"{}\"). Prefer {} and say that it replaces the older one.",
            r.newer.title, r.older.title, r.statement, r.newer.title
        );
    }
    let _ = writeln!(
        user,
        "Retrieval: the passages match the request at {:.2} ({}).",
        request.retrieval_confidence,
        level(request.retrieval_confidence)
    );
    user.push_str("\nPassages:\n");
    for p in &request.passages {
        let heading = p
            .heading
            .as_deref()
            .map(|h| format!(" / {h}"))
            .unwrap_or_default();
        let score = if p.score > 0.0 {
            format!("; match {:.2}", p.score)
        } else {
            String::new()
        };
        let _ = writeln!(
            user,
            "[{}] ({}{heading}{score}) {}",
            p.number,
            p.title,
            p.meaning()
        );
    }
    if let Some(text) = &request.audit_text {
        let _ = write!(user, "\nText to audit:\n{text}\n");
    }
    let _ = write!(user, "\nRequest: {}", request.question);
    Prompt { system, user }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passages::Passage;
    use crate::state::DocRef;
    use crate::versions::Replacement;

    #[test]
    fn the_answer_prompt_asks_for_passage_citations_and_a_grounded_confidence() {
        let doc = |id: &str, title: &str| DocRef {
            id: id.into(),
            title: title.into(),
        };
        let request = AnswerRequest {
            action: Action::Inquire,
            question: "How long are emails kept?".into(),
            documents: vec![doc("new", "Policy 2024"), doc("old", "Policy 2023")],
            versions: vec![Replacement {
                newer: doc("new", "Policy 2024"),
                older: doc("old", "Policy 2023"),
                statement: "Replaces the Policy 2023.".into(),
                stated: true,
            }],
            editions: vec![],
            passages: vec![Passage {
                number: 1,
                doc_id: "new".into(),
                title: "Policy 2024".into(),
                heading: None,
                clause: None,
                lead: None,
                text: "Email is kept for 3 years.".into(),
                score: 0.9,
            }],
            retrieval_confidence: 0.9,
            audit_text: None,
            web_search_query: None,
            history: vec![],
        };
        let p = answer(&request, false);
        assert!(p.system.contains("like [3]"), "{}", p.system);
        assert!(p.system.contains("never a passage you were not given"));
        assert!(p.system.contains("Confidence: high|medium|low"));
        assert!(p
            .user
            .contains("Retrieval: the passages match the request at 0.90 (high)."));
        assert!(p
            .user
            .contains("[1] (Policy 2024; match 0.90) Email is kept for 3 years."));
        assert!(p
            .user
            .contains("Versions: Policy 2024 replaces Policy 2023"));
    }
}
