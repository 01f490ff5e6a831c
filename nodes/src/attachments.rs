//! What PalAssist cannot read in the user's message: its attachments.
//!
//! A message may come as a list of content blocks (agent-chat-ui sends images and PDFs
//! that way: `{"type": "image", "mimeType", "data"}`, `{"type": "file", "mimeType":
//! "application/pdf", ..}`). PalAssist answers from the text blocks and the user's
//! documents; it says which attachments it did not read instead of ignoring them silently.

use palgraph::{Message, MessageKind};
use serde_json::Value;

/// The notice for the attachments of the turn's message that PalAssist does not read, or
/// `None` when it has none.
pub(crate) fn unread_notice(messages: &[Message]) -> Option<String> {
    let current = messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human)?;
    let unread: Vec<String> = current.blocks.iter().filter_map(describe).collect();
    if unread.is_empty() {
        return None;
    }
    Some(format!(
        "I read only the text of your message: I cannot read {} yet. Upload the text as a document to ask about it.",
        join(&unread)
    ))
}

/// "the image (image/png)", "the PDF report.pdf", ...; `None` for a text block.
fn describe(block: &Value) -> Option<String> {
    let o = match block {
        Value::Object(o) => o,
        _ => return None,
    };
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("text");
    if kind == "text" {
        return None;
    }
    let mime = ["mimeType", "mime_type"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str));
    let name = o
        .get("metadata")
        .and_then(|m| ["filename", "name"].iter().find_map(|k| m.get(*k)))
        .and_then(Value::as_str);
    let what = match (kind, mime) {
        (_, Some("application/pdf")) => "the PDF".to_string(),
        ("image" | "image_url", _) => "the image".to_string(),
        ("audio" | "input_audio", _) => "the audio".to_string(),
        ("file", _) => "the file".to_string(),
        (other, _) => format!("the {other} attachment"),
    };
    Some(match (name, mime) {
        (Some(n), _) => format!("{what} {n}"),
        (None, Some(m)) if m != "application/pdf" => format!("{what} ({m})"),
        _ => what,
    })
}

fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn human(content: Value) -> Message {
        serde_json::from_value(json!({"type": "human", "content": content})).unwrap()
    }

    #[test]
    fn names_each_attachment_it_cannot_read() {
        let m = human(json!([
            {"type": "text", "text": "Summarize this"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "file", "mimeType": "application/pdf", "data": "JVBERi0=", "metadata": {"filename": "report.pdf"}}
        ]));
        assert_eq!(
            unread_notice(&[m]).unwrap(),
            "I read only the text of your message: I cannot read the image (image/png) or the PDF report.pdf yet. Upload the text as a document to ask about it."
        );
    }

    #[test]
    fn text_only_messages_need_no_notice() {
        assert_eq!(unread_notice(&[Message::human("hi")]), None);
        assert_eq!(
            unread_notice(&[human(json!([{"type": "text", "text": "hi"}]))]),
            None
        );
        assert_eq!(unread_notice(&[]), None);
    }

    #[test]
    fn only_the_current_message_counts() {
        let old = human(json!([{"type": "image", "mimeType": "image/jpeg", "data": "x"}]));
        assert_eq!(unread_notice(&[old, Message::human("and now?")]), None);
    }
}
