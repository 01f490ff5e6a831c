//! PalAssist's chat adapter: a chat request becomes PalAssist's turn input, its final state
//! the `response` event, its prompts the `interrupt` event, as the chat contract spells them
//! out (DESIGN.md, "Chat contract: exact shapes").

use palgraph::InterruptInfo;
use palgraph_nodes::confidence::{self, Confidence};
use palgraph_nodes::ChatTurn;
use palgraph_server::{ChatAdapter, TurnRequest};
use serde_json::{json, Map, Value};

/// The state's fields the `response` event is made of.
const RESPONSE_FIELDS: &[&str] = &[
    "response",
    "citations",
    "action",
    "inference_confidence",
    "retrieval_confidence",
    "tokens_used",
    "cost_usd",
    "cancelled",
    "notices",
    "answered_by",
];

/// The chat contract for PalAssist.
#[derive(Clone, Copy, Debug, Default)]
pub struct PalAssistChat;

impl ChatAdapter for PalAssistChat {
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        let mut fields: Map<String, Value> = turn.fields.clone();
        fields.insert("message".into(), turn.message.into());
        let chat: ChatTurn = serde_json::from_value(Value::Object(fields))
            .map_err(|e| format!("invalid request body: {e}"))?;
        if chat.message.trim().is_empty() && chat.tiptap_json.is_none() {
            return Err("message is empty".into());
        }
        serde_json::to_value(palgraph_nodes::turn_input(chat)).map_err(|e| e.to_string())
    }

    fn turn_schema(&self) -> schemars::Schema {
        schemars::schema_for!(ChatTurn)
    }

    /// The documents a user mentions and PalAssist's prompts ask about, and their sets.
    fn panels(&self) -> Vec<String> {
        vec!["documents".into(), "document_sets".into()]
    }

    /// The fields [`PalAssistChat::response`] reads (not the conversation's history).
    fn response_fields(&self) -> Option<&'static [&'static str]> {
        Some(RESPONSE_FIELDS)
    }

    /// The `response` event: the confidences as `high|medium|low` (thresholds in
    /// [`palgraph_nodes::confidence`]), the 0..1 retrieval score as `confidence_score`.
    fn response(&self, values: &Value) -> Value {
        let pick = |k: &str, default: Value| values.get(k).cloned().unwrap_or(default);
        let number = |k: &str| values.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let retrieval = number("retrieval_confidence");
        json!({
            "type": "response",
            "response": pick("response", json!("")),
            "citations": pick("citations", json!([])),
            "action": pick("action", Value::Null),
            "inference_confidence": Confidence::of_inference(number("inference_confidence")),
            "retrieval_confidence": Confidence::of_retrieval(retrieval),
            "confidence_score": confidence::score(retrieval),
            "tokens_used": pick("tokens_used", json!(0)),
            "cost_usd": pick("cost_usd", json!(0.0)),
            "cancelled": pick("cancelled", json!(false)),
            "notices": pick("notices", json!([])),
            "answered_by": pick("answered_by", Value::Null),
        })
    }

    /// Records the abandoned prompt as an assistant message, first in the new turn's
    /// messages (history then shows it cancelled).
    fn abandon_prompt(&self, input: &mut Value, interrupt: &InterruptInfo) {
        let v = &interrupt.value;
        let record = json!({
            "type": "ai",
            "id": format!("prompt-{}", interrupt.id),
            "content": v.get("message").cloned().unwrap_or(Value::String(String::new())),
            "metadata": {
                "kind": "palassist_prompt",
                "interrupt_type": v.get("interrupt_type").cloned().unwrap_or(Value::Null),
                "answer": null,
                "cancelled": true
            }
        });
        if let Some(Value::Array(msgs)) = input.get_mut("messages") {
            msgs.insert(0, record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The response made from the listed fields alone is the response made from the whole
    /// state: `response` reads nothing else.
    #[test]
    fn the_response_fields_are_all_the_response_reads() {
        let whole = json!({
            "messages": [{"type": "human", "content": "hi", "id": "m1"}],
            "conversation_docs": {"d1": "Policy A"},
            "resolved_doc_ids": ["d1"],
            "response": "Here is the answer. [1]",
            "citations": [{"doc_id": "d1", "marker": 1, "quote": "q", "title": "Policy A"}],
            "action": "inquire",
            "inference_confidence": 0.6,
            "retrieval_confidence": 0.9,
            "tokens_used": 12,
            "cost_usd": 0.5,
            "cancelled": true,
            "notices": ["a notice"],
            "answered_by": {"kind": "llm", "model": "m"},
        });
        let only: Map<String, Value> = RESPONSE_FIELDS
            .iter()
            .filter_map(|f| whole.get(*f).map(|v| ((*f).to_string(), v.clone())))
            .collect();
        // Each is a field of PalAssist's state (a renamed field would drop out silently).
        for f in RESPONSE_FIELDS {
            assert!(
                <palgraph_nodes::state::AgentState as palgraph::State>::field_index(f).is_some(),
                "{f} is not a field of the state"
            );
        }
        let from_whole = PalAssistChat.response(&whole);
        assert_eq!(PalAssistChat.response(&Value::Object(only)), from_whole);
        // Every listed field shows in the response (none is listed for nothing).
        for f in RESPONSE_FIELDS {
            let mut without = whole.clone();
            without.as_object_mut().unwrap().remove(*f);
            assert_ne!(PalAssistChat.response(&without), from_whole, "{f}");
        }
    }

    #[test]
    fn confidences_are_levels_and_the_score_a_clean_number() {
        let r = PalAssistChat.response(&json!({
            "response": "x", "action": "inquire",
            "inference_confidence": 0.6, "retrieval_confidence": 0.36258161003552053
        }));
        assert_eq!(r["inference_confidence"], "medium");
        assert_eq!(r["retrieval_confidence"], "low");
        assert_eq!(r["confidence_score"], 0.363);
        let r = PalAssistChat.response(&json!({"retrieval_confidence": -0.0}));
        assert_eq!(r["retrieval_confidence"], "low");
        assert_eq!(r["inference_confidence"], "low");
        assert_eq!(
            serde_json::to_string(&r["confidence_score"]).unwrap(),
            "0.0"
        );
        let r = PalAssistChat
            .response(&json!({"retrieval_confidence": 1.0, "inference_confidence": 1.0}));
        assert_eq!(r["retrieval_confidence"], "high");
        assert_eq!(r["inference_confidence"], "high");
    }
}
