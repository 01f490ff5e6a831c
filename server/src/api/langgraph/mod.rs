//! The LangGraph Agent Server API, as the official `langgraph-sdk` clients (Python and JS,
//! and the JS `useStream` hook) call it, one module per resource:
//!
//! - [`assistants`]: `/info`, `/assistants` (one per graph), graph drawings, schemas;
//! - [`threads`]: `/threads` create, search, count, get, patch, delete, prune, copy; its
//!   `thread_ttl` module applies threads' time to live;
//! - [`state`]: a thread's state and `update_state`; [`history`]: its history, streamed;
//! - [`runs`]: runs (background, streamed, awaited; on a thread or stateless), joins,
//!   cancels; [`stream`] streams and awaits them, [`translate`] turns engine events into
//!   the API's SSE events;
//! - [`thread_stream`]: a thread's runs as they come;
//! - [`store_items`]: the long-term store (`/store/*`), per user;
//! - [`protocol`] and [`protocol_events`]: the v3 thread-centric streaming protocol
//!   (`POST /threads/{id}/commands`, `POST /threads/{id}/stream/events`);
//! - [`models`]: the request and response bodies; [`common`]: what they share.

pub(crate) mod assistants;
pub(crate) mod common;
pub(crate) mod cron_scheduler;
pub(crate) mod crons;
pub(crate) mod history;
pub(crate) mod models;
pub(crate) mod protocol;
pub(crate) mod protocol_events;
pub(crate) mod runs;
pub(crate) mod state;
pub(crate) mod store_items;
pub(crate) mod stream;
pub(crate) mod thread_runs;
pub(crate) mod thread_stream;
pub(crate) mod thread_ttl;
pub(crate) mod threads;
pub(crate) mod translate;
mod unsupported;

use aide::axum::routing::{delete_with, get_with, post_with, put_with};
use std::time::Duration;

use aide::axum::ApiRouter;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::openapi::sse;
use super::{AppState, BODY_LIMIT};

/// How long a request that only reads or writes records may take (a database that stalls
/// gets a 408, not a request hanging for ever). Streams, waits and joins last as long as
/// their runs and are not limited.
const RESOURCE_TIMEOUT: Duration = Duration::from_secs(60);

/// The LangGraph routes, documented.
pub(crate) fn routes() -> ApiRouter<AppState> {
    resources()
        .layer(axum::middleware::from_fn(resource_deadline))
        .merge(runs())
}

/// Answers a resource request that is not done within [`RESOURCE_TIMEOUT`] with a JSON 408
/// (its work is dropped where it stands: these requests only read, or write in one
/// transaction).
async fn resource_deadline(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match tokio::time::timeout(RESOURCE_TIMEOUT, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({
                "detail": format!(
                    "the request was not done within {} s; retry, or narrow it",
                    RESOURCE_TIMEOUT.as_secs()
                ),
                "code": "timeout",
            })),
        )
            .into_response(),
    }
}

/// Assistants, threads and their state.
fn resources() -> ApiRouter<AppState> {
    let runs_body = || DefaultBodyLimit::max(BODY_LIMIT);
    ApiRouter::new()
        .api_route(
            "/info",
            get_with(assistants::info, |o| {
                o.summary("Server information").tag("system")
            }),
        )
        .api_route(
            "/threads/{thread_id}/commands",
            post_with(protocol::command, |o| {
                o.summary("A command of the thread streaming protocol (run.start, input.respond, state.get, ...)")
                    .tag("threads")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/assistants",
            post_with(assistants::create, |o| {
                o.summary(
                    "Create an assistant (each graph has one; `if_exists: do_nothing` returns it)",
                )
                .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/search",
            post_with(assistants::search, |o| {
                o.summary("Search assistants").tag("assistants")
            }),
        )
        .api_route(
            "/assistants/count",
            post_with(assistants::count, |o| {
                o.summary("Count assistants").tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}",
            get_with(assistants::get, |o| {
                o.summary("An assistant").tag("assistants")
            })
            .patch_with(assistants::change, |o| {
                o.summary("Change an assistant (not supported: 501)")
                    .tag("assistants")
            })
            .delete_with(assistants::change, |o| {
                o.summary("Delete an assistant (not supported: 501)")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}/graph",
            get_with(assistants::graph, |o| {
                o.summary("The assistant's graph: nodes, edges, Mermaid")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}/schemas",
            get_with(assistants::schemas, |o| {
                o.summary("The assistant's input, output, state, config and context schemas")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}/subgraphs",
            get_with(assistants::subgraphs, |o| {
                o.summary("The assistant's subgraphs and their schemas, by namespace")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}/subgraphs/{namespace}",
            get_with(assistants::subgraph, |o| {
                o.summary("A subgraph of the assistant (and with recurse the ones inside it)")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/assistants/{id}/versions",
            post_with(assistants::versions, |o| {
                o.summary("The assistant's versions (one)")
                    .tag("assistants")
            }),
        )
        .api_route(
            "/threads",
            post_with(threads::create, |o| {
                o.summary("Create a thread (optionally with supersteps of updates)")
                    .tag("threads")
            }),
        )
        .api_route(
            "/threads/search",
            post_with(threads::search, |o| {
                o.summary("Search the caller's threads").tag("threads")
            }),
        )
        .api_route(
            "/threads/count",
            post_with(threads::count, |o| {
                o.summary("Count the caller's threads").tag("threads")
            }),
        )
        .api_route(
            "/threads/prune",
            post_with(threads::prune, |o| {
                o.summary("Delete threads, or keep only their latest checkpoint")
                    .tag("threads")
            }),
        )
        .api_route(
            "/threads/{thread_id}",
            get_with(threads::get, |o| {
                o.summary("A thread with its latest values").tag("threads")
            })
            .patch_with(threads::patch, |o| {
                o.summary("Merge metadata into a thread").tag("threads")
            })
            .delete_with(threads::delete, |o| {
                o.summary("Delete a thread with its runs, events and checkpoints")
                    .tag("threads")
            }),
        )
        .api_route(
            "/threads/{thread_id}/copy",
            post_with(threads::copy, |o| {
                o.summary("Copy a thread with its history").tag("threads")
            }),
        )
        .api_route(
            "/threads/{thread_id}/state",
            get_with(state::get, |o| {
                o.summary("A thread's latest state").tag("state")
            })
            .post_with(state::update, |o| {
                o.summary("Update a thread's state (update_state)")
                    .tag("state")
            })
            .layer(runs_body())
            .patch_with(state::patch, |o| {
                o.summary("Change a checkpoint's metadata (not supported: 501)")
                    .tag("state")
            }),
        )
        .api_route(
            "/threads/{thread_id}/state/checkpoint",
            post_with(state::at, |o| {
                o.summary("A thread's state at a checkpoint").tag("state")
            }),
        )
        .api_route(
            "/threads/{thread_id}/state/{checkpoint_id}",
            get_with(state::get_at, |o| {
                o.summary("A thread's state at a checkpoint").tag("state")
            }),
        )
        .api_route(
            "/threads/{thread_id}/history",
            get_with(history::get_history, |o| {
                o.summary("A thread's states, newest first").tag("state")
            })
            .post_with(history::post_history, |o| {
                o.summary("A thread's states, newest first, filtered")
                    .tag("state")
            }),
        )
}

/// Runs: created, streamed, awaited, joined, cancelled.
fn runs() -> ApiRouter<AppState> {
    let runs_body = || DefaultBodyLimit::max(BODY_LIMIT);
    ApiRouter::new()
        .api_route(
            "/threads/{thread_id}/stream/events",
            post_with(protocol_events::stream_events, |o| {
                sse(o
                    .summary(
                        "The thread's events on the channels asked for (thread streaming protocol)",
                    )
                    .tag("threads"))
            }),
        )
        .api_route(
            "/threads/{thread_id}/runs",
            get_with(thread_runs::list, |o| {
                o.summary("A thread's runs, newest first").tag("runs")
            })
            .post_with(runs::create, |o| {
                o.summary("Start a background run on a thread").tag("runs")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/threads/{thread_id}/runs/stream",
            post_with(runs::stream, |o| {
                sse(o
                    .summary("Start a run on a thread and stream it")
                    .tag("runs"))
            })
            .layer(runs_body()),
        )
        .api_route(
            "/threads/{thread_id}/runs/wait",
            post_with(runs::wait, |o| {
                o.summary("Start a run on a thread and wait for its final values")
                    .tag("runs")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/threads/{thread_id}/runs/crons",
            post_with(crons::create_for_thread, |o| {
                o.summary("Schedule runs on a thread (a cron)").tag("crons")
            }),
        )
        .api_route(
            "/threads/{thread_id}/runs/{run_id}",
            get_with(thread_runs::get, |o| o.summary("A run").tag("runs"))
                .delete_with(thread_runs::delete, |o| {
                    o.summary("Delete a finished run").tag("runs")
                }),
        )
        .api_route(
            "/threads/{thread_id}/stream",
            get_with(thread_stream::thread_stream, |o| {
                sse(o
                    .summary("Follow a thread's runs as they come")
                    .tag("threads"))
            }),
        )
        .api_route(
            "/threads/{thread_id}/runs/{run_id}/join",
            get_with(thread_runs::join, |o| {
                o.summary("Wait for a run and return the thread's values")
                    .tag("runs")
            }),
        )
        .api_route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get_with(thread_runs::join_stream, |o| {
                sse(o
                    .summary("Join a run's stream (Last-Event-ID resumes it)")
                    .tag("runs"))
            }),
        )
        .api_route(
            "/threads/{thread_id}/runs/{run_id}/cancel",
            post_with(thread_runs::cancel, |o| {
                o.summary("Cancel a run (idempotent)").tag("runs")
            }),
        )
        .api_route(
            "/runs",
            post_with(runs::create_stateless, |o| {
                o.summary("Start a stateless background run").tag("runs")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/runs/stream",
            post_with(runs::stream_stateless, |o| {
                sse(o.summary("Start a stateless run and stream it").tag("runs"))
            })
            .layer(runs_body()),
        )
        .api_route(
            "/runs/wait",
            post_with(runs::wait_stateless, |o| {
                o.summary("Start a stateless run and wait for its final values")
                    .tag("runs")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/runs/batch",
            post_with(runs::create_batch, |o| {
                o.summary("Start several stateless background runs")
                    .tag("runs")
            })
            .layer(runs_body()),
        )
        .api_route(
            "/runs/cancel",
            post_with(thread_runs::cancel_many, |o| {
                o.summary("Cancel runs of a thread, or every active run of the caller")
                    .tag("runs")
            }),
        )
        .api_route(
            "/runs/{run_id}/stream",
            get_with(thread_runs::join_stream_by_run, |o| {
                sse(o.summary("Join a run's stream by its id").tag("runs"))
            }),
        )
        .api_route(
            "/runs/crons",
            post_with(crons::create, |o| {
                o.summary("Schedule stateless runs (a cron: a new thread each tick)")
                    .tag("crons")
            }),
        )
        .api_route(
            "/runs/crons/search",
            post_with(crons::search, |o| {
                o.summary("Search the caller's crons").tag("crons")
            }),
        )
        .api_route(
            "/runs/crons/count",
            post_with(crons::count, |o| {
                o.summary("Count the caller's crons").tag("crons")
            }),
        )
        .api_route(
            "/runs/crons/{cron_id}",
            delete_with(crons::delete, |o| o.summary("Delete a cron").tag("crons")).patch_with(
                crons::update,
                |o| {
                    o.summary("Change a cron (its next tick is worked out again)")
                        .tag("crons")
                },
            ),
        )
        .api_route(
            "/store/items",
            put_with(store_items::put_item, |o| {
                o.summary("Put an item in the caller's long-term store")
                    .tag("store")
            })
            .get_with(store_items::get_item, |o| {
                o.summary("Get an item of the caller's long-term store (null when absent)")
                    .tag("store")
            })
            .delete_with(store_items::delete_item, |o| {
                o.summary("Delete an item of the caller's long-term store")
                    .tag("store")
            }),
        )
        .api_route(
            "/store/items/search",
            post_with(store_items::search_items, |o| {
                o.summary("Search the caller's long-term store (filter, text or meaning)")
                    .tag("store")
            }),
        )
        .api_route(
            "/store/namespaces",
            post_with(store_items::list_namespaces, |o| {
                o.summary("List the namespaces of the caller's long-term store")
                    .tag("store")
            }),
        )
}
