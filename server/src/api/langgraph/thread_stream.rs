//! `GET /threads/{id}/stream`: a thread's runs, one after another, as they come.

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::Event as SseEvent;
use axum::response::Response;
use futures_util::StreamExt;

use super::common::{one_of, Params, ThreadPath};
use super::models::ThreadStreamParams;
use super::stream::{last_seq, lg_stream, run_modes, RunGuard};
use super::translate::Mode;
use crate::api::admission::own_thread;
use crate::api::error::ApiResult;
use crate::api::sse::{last_event_id, sse_response};
use crate::api::AppState;
use crate::auth::User;

/// How often an idle thread stream looks for runs without being told: a safety net only,
/// since a new run wakes it (in this process, or by NOTIFY from another, and every waiter
/// when the listener reconnects).
const THREAD_RECHECK: Duration = Duration::from_secs(30);

/// `GET /threads/{id}/stream`: follows a thread's runs (`stream_mode` `run_modes`, each run
/// with its own modes, or `state_update`, values only), until the client leaves.
/// `Last-Event-ID: -` (or `-1`) includes the active run from its start.
pub(crate) async fn thread_stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    params: Params<ThreadStreamParams>,
) -> ApiResult<Response> {
    own_thread(&state, &user, &id).await?;
    let mode = params
        .get("stream_mode")
        .or_else(|| params.get("stream_modes"))
        .unwrap_or("run_modes")
        .to_string();
    one_of("stream_mode", Some(&mode), &["run_modes", "state_update"])?;
    let from_start = matches!(last_event_id(&headers).as_deref(), Some("-") | Some("-1"));
    let since = crate::store::now_ms();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(64);
    let st = state.clone();
    tokio::spawn(async move {
        let mut done: HashSet<String> = HashSet::new();
        let mut first = true;
        // Woken when a run is created on the thread (here or, via NOTIFY, by another
        // replica); the slow re-check only covers a missed announcement.
        let news = st.runs.threads.guard(&id);
        loop {
            if tx.is_closed() || st.shutdown.is_cancelled() {
                break;
            }
            let woken = news.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let mut candidates = st.store.active_runs(&id).await.unwrap_or_default();
            candidates.extend(
                st.store
                    .list_runs(&id, 50, 0)
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|r| r.created_at_ms >= since),
            );
            candidates.retain(|r| !done.contains(&r.run_id));
            candidates.sort_by_key(|r| r.thread_seq);
            let Some(run) = candidates.into_iter().next() else {
                first = false;
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep(THREAD_RECHECK) => {}
                    _ = tx.closed() => break,
                    _ = st.shutdown.cancelled() => break,
                }
                continue;
            };
            done.insert(run.run_id.clone());
            let modes = if mode == "state_update" {
                vec![Mode::Values]
            } else {
                run_modes(&run)
            };
            let skip = if first && !from_start && run.created_at_ms < since {
                Some(last_seq(&st, &run.run_id).await.unwrap_or(0) * 1000 + 999)
            } else {
                None
            };
            first = false;
            let guard = RunGuard {
                state: st.clone(),
                run,
                cancel_armed: false,
                cleanup: false,
            };
            let mut s = Box::pin(lg_stream(st.clone(), modes, skip, skip.is_none(), guard));
            while let Some(ev) = s.next().await {
                if tx.send(ev).await.is_err() {
                    break;
                }
            }
        }
    });
    let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(sse_response(&state, events, &[]))
}
