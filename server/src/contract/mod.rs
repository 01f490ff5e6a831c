//! The chat contract's shapes and the adapters that speak it: what a chat request, a
//! resume, a history and a prompt's answer look like ([`models`]), and how a graph's state
//! and prompts become them ([`ChatAdapter`], with [`MessagesChat`] for graphs that keep a
//! `messages` list). The HTTP routes that serve it are `api::chat`; the run worker uses the
//! same adapters for an answer a failed turn keeps.

pub mod adapter;
pub mod models;

pub use adapter::{
    check_prompt_answer, messages_failed_turn, messages_history, ChatAdapter, MessagesChat,
    PartialAnswer, TurnRequest,
};
pub use models::{
    Cancelled, ChatGraph, ChatGraphs, ChatRequest, History, HistoryMessage, OnDisconnect,
    ResumeRequest, ResumeValue,
};
