//! How the example graphs speak the chat contract, so that each is served on `/chat` and
//! picked on the chat page by name.
//!
//! - [`ReviewChat`]: a graph that keeps `messages` and asks a person to approve a draft
//!   ([`approval`](crate::approval), [`supervisor`](crate::supervisor)): the question is a
//!   `text_input` prompt; "yes" publishes, any other answer is the note of a revision;
//! - [`EssayChat`]: the [`essay`](crate::essay) workflow: the message is the topic, the tone
//!   is asked as a `text_input`, the essay is the answer;
//! - [`JokesChat`]: the [`jokes`](crate::jokes) map-reduce: the message is the topic, the
//!   answer the best joke and the others.
//!
//! [`fanout`](crate::fanout) keeps `messages` and asks nothing: the server's
//! [`MessagesChat`] serves it as it is.

use palgraph::InterruptInfo;
use palgraph_server::{
    check_prompt_answer, ChatAdapter, HistoryMessage, MessagesChat, PartialAnswer, ResumeValue,
    TurnRequest,
};
use serde_json::{json, Value};

/// A `text_input` prompt of the chat contract.
fn text_prompt(interrupt: &InterruptInfo, message: String) -> Value {
    json!({
        "type": "interrupt",
        "interrupt_id": interrupt.id,
        "interrupt_type": "text_input",
        "message": message,
        "options": null,
    })
}

/// The user's message, then the answer, when the state holds a finished call's answer.
fn one_exchange(asked: Option<&str>, answer: Option<String>) -> Vec<HistoryMessage> {
    let message = |id: &str, role: &str, content: String| HistoryMessage {
        id: id.into(),
        role: role.into(),
        content,
        metadata: json!({}),
    };
    let mut out = Vec::new();
    if let Some(q) = asked.filter(|q| !q.is_empty()) {
        out.push(message("input", "user", q.to_string()));
    }
    if let Some(a) = answer.filter(|a| !a.is_empty()) {
        out.push(message("output", "assistant", a));
    }
    out
}

/// Words that approve a draft ("yes", "publish", "ok", ...), alone or with a full stop.
fn approves(answer: &str) -> bool {
    let a = answer
        .trim()
        .trim_end_matches(['.', '!'])
        .to_ascii_lowercase();
    matches!(
        a.as_str(),
        "yes" | "y" | "ok" | "okay" | "approve" | "approved" | "publish" | "publish it" | "lgtm"
    )
}

/// A `messages` graph whose interrupt asks a person to approve a draft (`{"question",
/// "draft"}`, answered with `{"approve": bool, "note": string?}`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReviewChat;

impl ChatAdapter for ReviewChat {
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        MessagesChat.turn_input(turn)
    }

    fn response(&self, values: &Value) -> Value {
        MessagesChat.response(values)
    }

    fn prompt(&self, interrupt: &InterruptInfo) -> Value {
        let v = &interrupt.value;
        let question = v["question"].as_str().unwrap_or("Publish this draft?");
        let message = match v["draft"].as_str() {
            Some(draft) => format!(
                "{question}\n\n{draft}\n\nAnswer \"yes\" to publish it, or say what to change."
            ),
            None => format!("{question} Answer \"yes\", or say what to change."),
        };
        text_prompt(interrupt, message)
    }

    fn check_resume(&self, resume: &ResumeValue, pending: &InterruptInfo) -> Result<(), String> {
        check_prompt_answer(resume, &self.prompt(pending))
    }

    fn resume_value(&self, resume: &ResumeValue) -> Value {
        match resume.value.as_str() {
            _ if resume.kind == "cancel" => Value::Null,
            Some(a) if approves(a) => json!({"approve": true}),
            Some(note) => json!({"approve": false, "note": note.trim()}),
            None => json!({"approve": false}),
        }
    }

    fn history(&self, values: &Value) -> Vec<HistoryMessage> {
        MessagesChat.history(values)
    }

    fn failed_turn(&self, failed: &Value, base: &Value, answer: &PartialAnswer) -> Option<Value> {
        MessagesChat.failed_turn(failed, base, answer)
    }
}

/// The essay workflow: `{"input": topic}` in, `output.text` out, the tone asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct EssayChat;

impl ChatAdapter for EssayChat {
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        Ok(json!({"input": turn.message}))
    }

    fn response(&self, values: &Value) -> Value {
        let text = values["output"]["text"].as_str().unwrap_or_default();
        json!({"type": "response", "response": text, "citations": []})
    }

    fn response_fields(&self) -> Option<&'static [&'static str]> {
        Some(&["output"])
    }

    fn prompt(&self, interrupt: &InterruptInfo) -> Value {
        let v = &interrupt.value;
        let question = v["question"].as_str().unwrap_or("Which tone?");
        let message = match v["outline"].as_str() {
            Some(outline) => format!("{question} (the outline: {outline})"),
            None => question.to_string(),
        };
        text_prompt(interrupt, message)
    }

    fn check_resume(&self, resume: &ResumeValue, pending: &InterruptInfo) -> Result<(), String> {
        check_prompt_answer(resume, &self.prompt(pending))
    }

    fn history(&self, values: &Value) -> Vec<HistoryMessage> {
        // The state keeps the latest finished essay; its topic is in the essay's words.
        one_exchange(None, values["output"]["text"].as_str().map(str::to_string))
    }
}

/// The jokes map-reduce: `{"topic": message}` in, the best joke (and the others) out.
#[derive(Clone, Copy, Debug, Default)]
pub struct JokesChat;

impl JokesChat {
    fn answer(values: &Value) -> Option<String> {
        let best = values["best"].as_str()?;
        let others: Vec<&str> = values["jokes"]
            .as_array()
            .map(|j| {
                j.iter()
                    .filter_map(Value::as_str)
                    .filter(|j| *j != best)
                    .collect()
            })
            .unwrap_or_default();
        let mut text = best.to_string();
        if !others.is_empty() {
            text.push_str("\n\nThe others:\n");
            for joke in others {
                text.push_str(&format!("- {joke}\n"));
            }
        }
        Some(text.trim_end().to_string())
    }
}

impl ChatAdapter for JokesChat {
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        if turn.message.trim().is_empty() {
            return Err("say what the jokes should be about".into());
        }
        Ok(json!({"topic": turn.message.trim()}))
    }

    fn response(&self, values: &Value) -> Value {
        let text = Self::answer(values).unwrap_or_default();
        json!({"type": "response", "response": text, "citations": []})
    }

    fn history(&self, values: &Value) -> Vec<HistoryMessage> {
        one_exchange(values["topic"].as_str(), Self::answer(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resume(kind: &str, value: Value) -> ResumeValue {
        serde_json::from_value(json!({"type": kind, "value": value})).expect("a resume value")
    }

    #[test]
    fn a_yes_publishes_and_anything_else_is_the_revision_note() {
        let yes = ReviewChat.resume_value(&resume("text_input", json!("Yes.")));
        assert_eq!(yes, json!({"approve": true}));
        let note = ReviewChat.resume_value(&resume("text_input", json!(" shorter please ")));
        assert_eq!(note, json!({"approve": false, "note": "shorter please"}));
        let cancel = ReviewChat.resume_value(&resume("cancel", Value::Null));
        assert_eq!(cancel, Value::Null);
    }

    #[test]
    fn the_jokes_answer_is_the_best_then_the_others() {
        let values = json!({"topic": "cats", "best": "b", "jokes": ["a", "b", "c"]});
        assert_eq!(
            JokesChat.response(&values)["response"],
            "b\n\nThe others:\n- a\n- c"
        );
        let history = JokesChat.history(&values);
        assert_eq!(history.len(), 2);
    }
}
