//! `POST /threads/{thread_id}/cancel`: stops the thread's active runs and answers once they
//! have stopped, so the next message is accepted at once. Idempotent: 200 with nothing
//! cancelled when nothing is active; 404 for an unknown thread or someone else's. A run that
//! has not stopped within [`CANCEL_WAIT`] is still stopping: the answer is then 202.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use palgraph::CancelReason;

use crate::api::admission::own_thread;
use crate::api::error::ApiResult;
use crate::api::langgraph::common::ThreadPath;
use crate::api::AppState;
use crate::auth::User;
use crate::contract::Cancelled;
use crate::store::CancelAction;

/// How long the endpoint waits for the runs it cancels to stop.
pub(crate) const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// `POST /threads/{thread_id}/cancel`.
pub(crate) async fn cancel_thread(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
) -> ApiResult<(StatusCode, Json<Cancelled>)> {
    own_thread(&state, &user, &thread_id).await?;
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    let mut cancelled = Vec::new();
    for run in state.store.active_runs(&thread_id).await? {
        state
            .runs
            .cancel(
                &run.run_id,
                CancelAction::Interrupt,
                CancelReason::UserCancelled,
            )
            .await?;
        cancelled.push(run.run_id);
    }
    let mut stopped = true;
    for run_id in &cancelled {
        let run = state.runs.wait_ended(run_id, deadline).await?;
        stopped &= run.is_none_or(|r| r.status.is_final());
    }
    let status = if stopped {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((
        status,
        Json(Cancelled {
            thread_id,
            cancelled,
            stopped,
        }),
    ))
}
