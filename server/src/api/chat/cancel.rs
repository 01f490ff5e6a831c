//! `POST /threads/{thread_id}/cancel`: stops the thread's active runs (idempotent).

use axum::extract::{Path, State};
use axum::Json;
use palgraph::CancelReason;

use super::models::Cancelled;
use crate::api::admission::own_thread;
use crate::api::auth::User;
use crate::api::error::ApiResult;
use crate::api::langgraph::common::ThreadPath;
use crate::api::AppState;
use crate::store::CancelAction;

/// `POST /threads/{thread_id}/cancel`.
pub async fn cancel_thread(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
) -> ApiResult<Json<Cancelled>> {
    own_thread(&state, &user, &thread_id).await?;
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
    Ok(Json(Cancelled {
        thread_id,
        cancelled,
    }))
}
