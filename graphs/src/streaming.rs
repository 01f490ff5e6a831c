//! A streaming graph: `write` answers word by word, streaming each word as a message
//! delta, and stops early when the run is cancelled, keeping the partial answer marked as
//! PalAssist marks one (`interrupted: true`, `interrupted_reason`, `stream_run_id`,
//! `client_turn_id` when the run's context has one, `finished_reason: "cancelled"`; a
//! complete answer has `finished_reason: "stop"`). It shows how a node streams and honours cancellation;
//! tests use it for runs that take a while (`delay_ms` per word).
//!
//! ```text
//! START -> write -> END
//! ```

use std::sync::Arc;
use std::time::Duration;

use palgraph::{
    AddMessages, CompiledGraph, GraphError, Message, MessageKind, NodeContext, NodeError, State,
    StateGraph, END, START,
};
use serde::{Deserialize, Serialize};

/// The streaming graph's state.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
pub struct StreamingState {
    /// The conversation.
    #[state(reducer = AddMessages)]
    pub messages: Vec<Message>,
    /// Milliseconds to wait before each word (per turn).
    #[state(transient)]
    pub delay_ms: u64,
    /// How many words to write (per turn; default: echo the question 5 times).
    #[state(transient)]
    pub words: Option<usize>,
    /// Fail after writing this many words (per turn), to exercise failure paths: the run
    /// ends with an error and the words written so far were streamed but not saved.
    #[state(transient)]
    pub fail_after: Option<usize>,
}

async fn write(
    state: Arc<StreamingState>,
    ctx: NodeContext,
) -> Result<StreamingStateUpdate, NodeError> {
    let question = state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Human)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let source: Vec<String> = question.split_whitespace().map(str::to_string).collect();
    let n = state.words.unwrap_or(source.len() * 5).max(1);
    let id = format!("answer-{}", ctx.task_id());
    let mut text = String::new();
    for i in 0..n {
        if state.fail_after == Some(i) {
            return Err(NodeError::fatal(format!(
                "the writer failed after {i} words, as the input asked"
            )));
        }
        let word = source
            .get(i % source.len().max(1))
            .cloned()
            .unwrap_or_else(|| "word".into());
        if ctx.is_cancelled() {
            break;
        }
        // `sleep(0)` still waits for the next timer tick (about 1 ms): no delay, no sleep.
        if state.delay_ms > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(state.delay_ms)) => {}
                _ = ctx.cancelled() => break,
            }
        }
        let piece = if i == 0 { word } else { format!(" {word}") };
        ctx.message_delta(&id, piece.clone());
        text.push_str(&piece);
    }
    let mut reply = Message::ai(text).with_id(id);
    match ctx.cancel_reason() {
        Some(reason) => {
            reply = reply
                .with_metadata("interrupted", true)
                .with_metadata("interrupted_reason", reason.as_str())
                .with_metadata("stream_run_id", ctx.run_id())
                .with_metadata("finished_reason", "cancelled");
            if let Some(turn) = ctx.context().get("client_turn_id").filter(|v| !v.is_null()) {
                reply = reply.with_metadata("client_turn_id", turn.clone());
            }
        }
        None => reply = reply.with_metadata("finished_reason", "stop"),
    }
    Ok(StreamingStateUpdate::default().messages(vec![reply]))
}

/// Builds the streaming graph.
///
/// # Errors
/// Never for this graph; the signature is the builder's.
pub fn graph() -> Result<CompiledGraph<StreamingState>, GraphError> {
    let mut g = StateGraph::<StreamingState>::new();
    g.add_node("write", write).status("Writing...");
    g.add_edge(START, "write");
    g.add_edge("write", END);
    g.compile()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use palgraph::{
        CancelReason, Cancellation, Event, RunConfig, RunInput, RunStatus, StreamModes,
    };

    #[tokio::test]
    async fn streams_words_and_keeps_partial_text_when_cancelled() {
        let g = graph().unwrap();
        let turn = StreamingStateUpdate::default()
            .messages(vec![Message::human("one two")])
            .delay_ms(0)
            .words(Some(4));
        let out = g
            .invoke(RunConfig::new("s1"), RunInput::Turn(turn))
            .await
            .unwrap();
        assert_eq!(out.state.messages[1].content, "one two one two");
        assert_eq!(out.state.messages[1].metadata["finished_reason"], "stop");

        let cancel = Cancellation::new();
        let turn = StreamingStateUpdate::default()
            .messages(vec![Message::human("slow words")])
            .delay_ms(20)
            .words(Some(1000));
        let mut s = g.stream(
            RunConfig::new("s2")
                .cancel(cancel.clone())
                .context("client_turn_id", "turn-7")
                .stream_modes(StreamModes::ALL),
            RunInput::Turn(turn),
        );
        let mut deltas = 0;
        while let Some(e) = s.next().await {
            if matches!(e.event, Event::MessageDelta { .. }) {
                deltas += 1;
                if deltas == 3 {
                    cancel.cancel(CancelReason::UserCancelled);
                }
            }
        }
        let out = s.outcome().await.unwrap();
        assert_eq!(
            out.status,
            RunStatus::Cancelled(CancelReason::UserCancelled)
        );
        let last = out.state.messages.last().unwrap();
        assert_eq!(last.content, "slow words slow");
        assert_eq!(last.metadata["interrupted"], true);
        assert_eq!(last.metadata["interrupted_reason"], "user_cancelled");
        assert_eq!(last.metadata["finished_reason"], "cancelled");
        assert_eq!(last.metadata["client_turn_id"], "turn-7");
        assert_eq!(last.metadata["stream_run_id"], out.run_id.as_str());
        assert!(last.metadata.get("reason").is_none());
    }
}
