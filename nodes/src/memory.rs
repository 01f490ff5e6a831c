//! The `memory` node: PalAssist remembers what a user asks it to, across conversations, in
//! the run's long-term store ([`NodeContext::store`]; the server gives each run its user's
//! own view). Three requests, recognised by their wording, so they work with the offline
//! model too:
//!
//! - "remember that I prefer short answers" stores the fact (the same fact twice is kept
//!   once);
//! - "what do you remember?" lists the remembered facts, oldest first;
//! - "forget that I prefer short answers" removes the remembered fact closest to it (by
//!   meaning when the store embeds, by words otherwise); "forget everything" removes all.
//!
//! Every answer is an assistant message and the turn's `response`. Writes are keyed by the
//! fact, so a node that runs again writes the same item again, harmlessly.

use std::sync::Arc;

use palgraph::store::{PutOptions, SearchQuery, Store};
use palgraph::{Message, NodeContext, NodeError};
use serde_json::json;

use crate::deps::PalAssistDeps;
use crate::state::{AgentState, AgentStateUpdate};

/// The namespace of PalAssist's memories in a user's store.
pub const NAMESPACE: [&str; 2] = ["palassist", "memories"];

/// The most memories listed or searched at once.
const MAX_MEMORIES: usize = 200;

/// What the user asked about memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryRequest {
    /// Keep this fact.
    Remember(String),
    /// List what is kept.
    Recall,
    /// Drop the fact closest to this.
    Forget(String),
    /// Drop everything.
    ForgetAll,
}

const REMEMBER: &[&str] = &[
    "please remember that ",
    "please remember ",
    "remember that ",
    "remember: ",
    "remember ",
    "keep in mind that ",
    "don't forget that ",
];

const FORGET: &[&str] = &[
    "please forget that ",
    "please forget about ",
    "please forget ",
    "forget that ",
    "forget about ",
    "forget ",
];

const RECALL: &[&str] = &[
    "what do you remember",
    "what do you know about me",
    "what have you remembered",
    "what did i ask you to remember",
    "list my memories",
    "list your memories",
    "show my memories",
    "show your memories",
];

const EVERYTHING: &[&str] = &["everything", "all", "all of it", "everything you remember"];

fn strip_end(s: &str) -> &str {
    s.trim().trim_end_matches(['.', '!', '?']).trim()
}

/// The memory request in a message, if it makes one.
pub fn memory_request(message: &str) -> Option<MemoryRequest> {
    let text = strip_end(message);
    let lower = text.to_lowercase();
    // Prefixes are ASCII, so a prefix's byte length in `lower` is its length in `text`.
    let rest = |prefixes: &[&str]| {
        prefixes
            .iter()
            .find(|p| lower.starts_with(*p) && text.is_char_boundary(p.len()))
            .map(|p| strip_end(&text[p.len()..]).to_string())
            .filter(|r| !r.is_empty())
    };
    if RECALL.iter().any(|p| lower.starts_with(p)) {
        return Some(MemoryRequest::Recall);
    }
    if let Some(fact) = rest(FORGET) {
        if EVERYTHING.contains(&fact.to_lowercase().as_str()) {
            return Some(MemoryRequest::ForgetAll);
        }
        return Some(MemoryRequest::Forget(fact));
    }
    rest(REMEMBER).map(MemoryRequest::Remember)
}

fn namespace() -> Vec<String> {
    NAMESPACE.iter().map(|s| s.to_string()).collect()
}

/// A fact's key: the same fact (case and spacing aside) has the same key.
fn key_of(fact: &str) -> String {
    let normal: Vec<String> = palgraph::store::tokens(fact);
    uuid::Uuid::new_v5(&KEY_NAMESPACE, normal.join(" ").as_bytes())
        .simple()
        .to_string()
}

const KEY_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x2f0c_9a4e_51b7_4d1a_8c3e_7b5d_0e92_a6f3);

fn store_failed(e: palgraph::store::StoreError) -> NodeError {
    use palgraph::store::StoreError as E;
    let message = format!("the memory store failed: {e}");
    match e {
        E::Unavailable(_) => NodeError::unavailable(message),
        E::Embed(_) => NodeError::retryable(message),
        _ => NodeError::fatal(message),
    }
}

fn shares_a_word(a: &str, b: &str) -> bool {
    let significant = |t: &str| -> Vec<String> {
        palgraph::store::tokens(t)
            .into_iter()
            .filter(|w| w.chars().count() >= 3)
            .collect()
    };
    let (a, b) = (significant(a), significant(b));
    a.iter().any(|x| {
        b.iter().any(|y| {
            x == y
                || (x.len() >= 4 && y.starts_with(x.as_str()))
                || (y.len() >= 4 && x.starts_with(y.as_str()))
        })
    })
}

async fn remembered(store: &dyn Store) -> Result<Vec<String>, NodeError> {
    let mut hits = store
        .search(&SearchQuery::new(namespace()).limit(MAX_MEMORIES))
        .await
        .map_err(store_failed)?;
    hits.sort_by_key(|h| h.item.created_at_ms);
    Ok(hits
        .into_iter()
        .filter_map(|h| {
            h.item
                .value
                .get("text")
                .and_then(|t| t.as_str())
                .map(str::to_string)
        })
        .collect())
}

async fn answer(
    store: &dyn Store,
    request: MemoryRequest,
    thread: &str,
) -> Result<String, NodeError> {
    let ns = namespace();
    match request {
        MemoryRequest::Remember(fact) => {
            store
                .put(
                    &ns,
                    &key_of(&fact),
                    json!({"text": fact, "thread_id": thread}),
                    PutOptions::default(),
                )
                .await
                .map_err(store_failed)?;
            Ok(format!("Got it. I'll remember that {fact}."))
        }
        MemoryRequest::Recall => {
            let facts = remembered(store).await?;
            if facts.is_empty() {
                return Ok("I don't remember anything for you yet. Tell me \"remember that ...\" and I will.".into());
            }
            let lines: Vec<String> = facts.iter().map(|f| format!("- {f}")).collect();
            Ok(format!("Here is what I remember:\n{}", lines.join("\n")))
        }
        MemoryRequest::ForgetAll => {
            let hits = store
                .search(&SearchQuery::new(ns.clone()).limit(MAX_MEMORIES))
                .await
                .map_err(store_failed)?;
            for h in &hits {
                store.delete(&ns, &h.item.key).await.map_err(store_failed)?;
            }
            Ok(match hits.len() {
                0 => "There was nothing to forget.".into(),
                1 => "Done: I forgot the one thing I remembered.".into(),
                n => format!("Done: I forgot all {n} things I remembered."),
            })
        }
        MemoryRequest::Forget(what) => {
            // The exact fact first, else the closest one.
            let exact = store
                .get(&ns, &key_of(&what), false)
                .await
                .map_err(store_failed)?;
            let target = match exact {
                Some(item) => Some(item),
                None => store
                    .search(
                        &SearchQuery::new(ns.clone())
                            .query(what.clone())
                            .limit(1)
                            .refresh_ttl(false),
                    )
                    .await
                    .map_err(store_failed)?
                    .into_iter()
                    .next()
                    .filter(|h| {
                        let text = h
                            .item
                            .value
                            .get("text")
                            .and_then(|t| t.as_str())
                            .unwrap_or("");
                        shares_a_word(text, &what) || h.score.is_some_and(|s| s >= 0.75)
                    })
                    .map(|h| h.item),
            };
            let Some(item) = target else {
                return Ok(format!("I don't remember anything about {what}."));
            };
            store.delete(&ns, &item.key).await.map_err(store_failed)?;
            let text = item
                .value
                .get("text")
                .and_then(|t| t.as_str())
                .unwrap_or(&what)
                .to_string();
            Ok(format!("Done: I forgot that {text}."))
        }
    }
}

/// The `memory` node: answers a [`MemoryRequest`] (the turn's message makes one; the graph
/// routes here only then).
///
/// # Errors
/// When the store fails (unavailable: the run stops and continues later; an embeddings
/// failure: retryable).
pub async fn memory(
    _deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    let text = match (memory_request(state.current_message()), ctx.store()) {
        (None, _) => "I didn't understand what to remember or forget.".to_string(),
        (Some(_), None) => {
            "I can't remember things here: this server has no long-term store.".to_string()
        }
        (Some(request), Some(store)) => answer(store.as_ref(), request, ctx.thread_id()).await?,
    };
    let message = Message::ai(text.clone())
        .with_id(format!("{}:answer", ctx.task_id()))
        .with_metadata("action", "memory");
    Ok(AgentStateUpdate::default()
        .response(text)
        .messages(vec![message])
        .inference_confidence(1.0)
        .retrieval_confidence(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_recognised_by_their_wording() {
        use MemoryRequest::*;
        assert_eq!(
            memory_request("Remember that I prefer short answers."),
            Some(Remember("I prefer short answers".into()))
        );
        assert_eq!(
            memory_request("please remember my team is Compliance"),
            Some(Remember("my team is Compliance".into()))
        );
        assert_eq!(memory_request("What do you remember?"), Some(Recall));
        assert_eq!(memory_request("what do you know about me"), Some(Recall));
        assert_eq!(
            memory_request("Forget that I prefer short answers"),
            Some(Forget("I prefer short answers".into()))
        );
        assert_eq!(memory_request("forget everything!"), Some(ForgetAll));
        assert_eq!(memory_request("remember"), None);
        assert_eq!(memory_request("Summarize the GDPR policy"), None);
        assert_eq!(memory_request("Do you remember the audit?"), None);
        assert_eq!(
            key_of("I prefer  Short answers"),
            key_of("i prefer short answers.")
        );
        assert!(shares_a_word("I prefer short answers", "short answers"));
        assert!(!shares_a_word("I prefer short answers", "my dog"));
    }
}
