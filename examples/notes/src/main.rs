//! Notes: a chat graph that keeps what you tell it, with a route and a panel of its own.
//!
//! Each message is kept as a note in the user's long-term store (`ctx.store()`, a view of
//! the store scoped to the caller). The [`NotesPage`] extension adds `GET /notes` (the
//! caller's notes, newest first) and a "Notes" panel on the chat page (`web/notes.js`),
//! shown while the `notes` graph is the one talked to and reloaded after each answer.

use std::sync::Arc;

use palgraph::store::{PutOptions, SearchQuery, Store};
use palgraph::{AddMessages, Message, NodeContext, NodeError, State, StateGraph, END, START};
use palgraph_server::aide::axum::routing::get_with;
use palgraph_server::aide::axum::ApiRouter;
use palgraph_server::axum::{Extension as Layered, Json};
use palgraph_server::{
    ApiError, ApiResult, AppState, ChatAdapter, Extension, MessagesChat, ServeContext, Server,
    TurnRequest, User, WebModule,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The namespace of the notes in each user's store.
const NOTES: &str = "notes";

/// A conversation whose every message is kept as a note.
#[derive(Clone, Default, Debug, Serialize, Deserialize, State)]
struct Chat {
    /// What the user and the graph said.
    #[state(reducer = AddMessages)]
    messages: Vec<Message>,
}

/// Keeps the last message as a note (under its id: a node run again writes the same item).
async fn jot(state: Arc<Chat>, ctx: NodeContext) -> Result<ChatUpdate, NodeError> {
    let Some(said) = state.messages.last() else {
        return Ok(ChatUpdate::default());
    };
    let store = ctx
        .store()
        .ok_or_else(|| NodeError::fatal("the server gives runs a store"))?;
    let key = said.id.clone().unwrap_or_else(|| said.content.clone());
    store
        .put(
            &[NOTES.to_string()],
            &key,
            json!({"text": said.content}),
            PutOptions::default(),
        )
        .await
        .map_err(|e| NodeError::retryable(e.to_string()))?;
    let reply = Message::ai(format!("Noted: {}", said.content));
    Ok(ChatUpdate::default().messages(vec![reply]))
}

/// The chat contract of `notes`: [`MessagesChat`]'s, with the page's `notes` panel.
struct NotesChat;

impl ChatAdapter for NotesChat {
    fn turn_input(&self, turn: TurnRequest<'_>) -> Result<Value, String> {
        MessagesChat.turn_input(turn)
    }

    fn response(&self, values: &Value) -> Value {
        MessagesChat.response(values)
    }

    fn panels(&self) -> Vec<String> {
        vec![NOTES.to_string()]
    }
}

/// `GET /notes`: the caller's notes, newest first (at most 100).
async fn list(user: User, Layered(store): Layered<Arc<dyn Store>>) -> ApiResult<Json<Vec<String>>> {
    let mine = palgraph::store::Scoped::new(store, &user.id)
        .map_err(|e| ApiError::Internal(Box::new(e)))?;
    let mut query = SearchQuery::new(vec![NOTES.to_string()]);
    query.limit = 100;
    let items = mine
        .search(&query)
        .await
        .map_err(|e| ApiError::Internal(Box::new(e)))?;
    let texts = items
        .into_iter()
        .filter_map(|i| i.item.value["text"].as_str().map(str::to_string))
        .collect();
    Ok(Json(texts))
}

/// The route and the page panel of the notes.
struct NotesPage;

impl Extension for NotesPage {
    fn name(&self) -> &str {
        NOTES
    }

    fn routes(&self, ctx: &ServeContext) -> ApiRouter<AppState> {
        ApiRouter::new()
            .api_route(
                "/notes",
                get_with(list, |o| o.summary("The caller's notes").tag("notes")),
            )
            .layer(Layered(ctx.long_term.clone()))
    }

    fn web(&self) -> Option<WebModule> {
        Some(
            WebModule::new("notes", "notes.js")
                .file("notes.js", include_str!("../web/notes.js"))
                .file("notes.css", include_str!("../web/notes.css")),
        )
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = palgraph_server::telemetry::init()?;
    let mut graph = StateGraph::<Chat>::new();
    graph.add_node("jot", jot);
    graph.add_edge(START, "jot");
    graph.add_edge("jot", END);
    Server::builder()
        .chat_graph_with(
            "notes",
            "Keeps what you tell it",
            graph.compile()?,
            NotesChat,
        )
        .extension(NotesPage)
        .serve_from_env()
        .await?;
    Ok(())
}
