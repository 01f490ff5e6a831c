//! The scheduler every replica runs: each poll it takes the due ticks no live claim holds
//! (compare-and-set, under a lease), creates each tick's run through the run queue with the
//! idempotency key `cron:{cron_id}:{tick}` (a stateless cron's thread id is a UUIDv5 of the
//! cron and the tick), then advances the cron to its next tick (compare-and-set). A replica
//! killed between the claim and the advance leaves the tick to another once the lease
//! ends; the key makes its second attempt return the run the first one made. The runs are
//! then claimed by workers under the run queue's leases like any run.

use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use crate::api::error::ApiError;
use crate::api::langgraph::models::CreateRun;
use crate::api::AppState;
use crate::auth::User;
use crate::config::ServeConfig;
use crate::crons::{Cron, Schedule};
use crate::store::now_ms;

/// How often a replica looks for due ticks, and how long a claim on a tick holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchedulerSettings {
    /// Poll interval.
    pub poll: Duration,
    /// How long a tick's claim holds before another replica may take the tick.
    pub claim: Duration,
}

impl SchedulerSettings {
    /// The settings `cfg` gives.
    pub(crate) fn of(cfg: &ServeConfig) -> Self {
        SchedulerSettings {
            poll: Duration::from_millis(cfg.cron_poll_ms.max(10)),
            claim: Duration::from_secs(cfg.cron_claim_secs.max(1)),
        }
    }
}

/// Namespace of stateless crons' thread ids (UUIDv5 of `{cron_id}:{tick}`).
const THREAD_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6a1f_0c3e_8d2b_4f7a_9e51_c0de_c705_0001);

/// The thread a stateless cron's tick runs on: the same on every replica.
pub(crate) fn tick_thread(cron_id: &str, tick: i64) -> String {
    uuid::Uuid::new_v5(&THREAD_NAMESPACE, format!("{cron_id}:{tick}").as_bytes()).to_string()
}

/// Starts the scheduler; it stops at shutdown.
pub(crate) fn spawn(state: AppState, settings: SchedulerSettings) {
    tokio::spawn(
        async move {
            loop {
                tokio::select! {
                    () = state.shutdown.cancelled() => break,
                    () = tokio::time::sleep(settings.poll) => {}
                }
                if state.runs.is_draining() {
                    break;
                }
                if let Err(e) = poll_once(&state, settings).await {
                    tracing::warn!(error = %e, "cron scheduler: looking for due ticks failed");
                }
            }
        }
        .instrument(tracing::info_span!("cron_scheduler")),
    );
}

/// Runs every due tick this replica can claim.
async fn poll_once(
    state: &AppState,
    settings: SchedulerSettings,
) -> Result<(), crate::crons::CronError> {
    let claim_ms = i64::try_from(settings.claim.as_millis()).unwrap_or(i64::MAX / 2);
    for cron in state.crons.due(now_ms(), 100).await? {
        let Some(tick) = cron.next_run_at_ms else {
            continue;
        };
        let now = now_ms();
        let until = now + claim_ms;
        if !state.crons.claim(&cron.cron_id, tick, now, until).await? {
            continue;
        }
        // Each tick is a trace of its own, its run's span a child of this one.
        let span = tracing::info_span!(parent: None, "cron.tick", cron_id = %cron.cron_id, tick);
        match run_tick(state, &cron, tick, until).instrument(span).await {
            Ok(true) => {}
            // The claim ran out first: the tick is another's now.
            Ok(false) => continue,
            Err(e) if retriable(&e) => {
                // The claim runs out and this or another replica tries the tick again.
                tracing::warn!(cron_id = %cron.cron_id, tick, error = %e, "cron tick failed; retried after the claim");
                continue;
            }
            Err(e) => {
                tracing::warn!(cron_id = %cron.cron_id, tick, error = %e, "cron tick skipped");
            }
        }
        let next = Schedule::parse(&cron.schedule, cron.timezone.as_deref())
            .ok()
            .and_then(|s| s.next_until(tick.max(now), cron.end_time_ms));
        state.crons.advance(&cron.cron_id, tick, next).await?;
    }
    Ok(())
}

fn retriable(e: &ApiError) -> bool {
    matches!(e, ApiError::Unavailable(_) | ApiError::Internal(_))
}

/// Creates the tick's run (once: a repeat returns the run the first attempt made) while the
/// claim taken until `until` holds; `false` when it no longer did (a replica that stalled
/// past its claim may find the tick another's by now, whose run may even be over).
async fn run_tick(state: &AppState, cron: &Cron, tick: i64, until: i64) -> Result<bool, ApiError> {
    let mut req: CreateRun = serde_json::from_value(cron.payload.clone())
        .map_err(|e| ApiError::Invalid(format!("cron payload: {e}")))?;
    let mut meta = req.metadata.take().unwrap_or_default();
    meta.insert("cron_id".into(), Value::String(cron.cron_id.clone()));
    req.metadata = Some(meta);
    let user = User {
        id: cron.owner.clone(),
    };
    let key = format!("cron:{}:{tick}", cron.cron_id);
    let (thread_id, stateless) = match &cron.thread_id {
        Some(t) => (t.clone(), false),
        None => {
            req.if_not_exists = Some(crate::api::langgraph::models::IfNotExists::Create);
            (tick_thread(&cron.cron_id, tick), true)
        }
    };
    if !state
        .crons
        .holds(&cron.cron_id, tick, until, now_ms())
        .await?
    {
        return Ok(false);
    }
    let created =
        crate::api::langgraph::runs::start_keyed(state, &user, &thread_id, &req, Some(key)).await?;
    tracing::info!(cron_id = %cron.cron_id, tick, run_id = %created.run.run_id, existing = created.existing, "cron tick");
    if stateless && cron.on_run_completed.as_deref() != Some("keep") {
        crate::api::langgraph::stream::spawn_cleanup(state.clone(), created.run);
    }
    Ok(true)
}
