//! Scheduled runs (`/runs/crons`, `/threads/{id}/runs/crons`) in the Agent Server API's
//! shapes: create (stateless or on a thread), search, count, update, delete; each user sees
//! only their own. The scheduler that runs them is [`super::cron_scheduler`].

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{assistant, one_of, project, values, ThreadPath};
use super::models::CreateRun;
use crate::api::admission::own_thread;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::time::iso;
use crate::api::AppState;
use crate::auth::User;
use crate::crons::{Cron, CronError, CronFilter, Schedule};
use crate::store::{now_ms, MultitaskStrategy};

impl From<CronError> for ApiError {
    fn from(e: CronError) -> Self {
        match e {
            CronError::Database(e) if palgraph::db::is_transient(&e) => {
                ApiError::Unavailable(e.to_string())
            }
            other => ApiError::internal(other),
        }
    }
}

/// The run fields a cron keeps in its `payload` and sends with each tick's run.
const RUN_FIELDS: &[&str] = &[
    "assistant_id",
    "input",
    "command",
    "config",
    "context",
    "metadata",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
    "checkpoint_during",
    "multitask_strategy",
];

/// `POST /runs/crons` and `POST /threads/{id}/runs/crons`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct CreateCron {
    /// The cron expression (5 fields, or 6 with seconds first).
    pub schedule: String,
    /// IANA time zone of the expression (UTC when absent).
    pub timezone: Option<String>,
    /// No tick after this instant (RFC 3339; no offset: UTC).
    pub end_time: Option<String>,
    /// Whether ticks run (default true).
    pub enabled: Option<bool>,
    /// A stateless cron's thread after each run: `delete` (default) or `keep`.
    pub on_run_completed: Option<String>,
    /// Everything else is the run each tick makes: `assistant_id` (required), `input`,
    /// `config`, `context`, `metadata` (also the cron's), `stream_mode`, ...
    #[serde(flatten)]
    pub run: Map<String, Value>,
}

/// A scheduled run, as the Agent Server API shows it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CronOut {
    /// Its id.
    pub cron_id: String,
    /// The assistant it runs.
    pub assistant_id: String,
    /// Its thread (`null`: a new thread per tick).
    pub thread_id: Option<String>,
    /// A stateless cron's thread after each run.
    pub on_run_completed: Option<String>,
    /// No tick after this.
    pub end_time: Option<String>,
    /// The cron expression.
    pub schedule: String,
    /// Its time zone.
    pub timezone: Option<String>,
    /// Created.
    pub created_at: String,
    /// Updated.
    pub updated_at: String,
    /// The run each tick makes.
    pub payload: Value,
    /// The owner.
    pub user_id: Option<String>,
    /// The next tick (`null` once the schedule has ended).
    pub next_run_date: Option<String>,
    /// Metadata.
    pub metadata: Value,
    /// Whether ticks run.
    pub enabled: bool,
}

impl From<&Cron> for CronOut {
    fn from(c: &Cron) -> Self {
        CronOut {
            cron_id: c.cron_id.clone(),
            assistant_id: c.assistant_id.clone(),
            thread_id: c.thread_id.clone(),
            on_run_completed: c.on_run_completed.clone(),
            end_time: c.end_time_ms.map(iso),
            schedule: c.schedule.clone(),
            timezone: c.timezone.clone(),
            created_at: iso(c.created_at_ms),
            updated_at: iso(c.updated_at_ms),
            payload: c.payload.clone(),
            user_id: Some(c.owner.clone()),
            next_run_date: c.next_run_at_ms.map(iso),
            metadata: c.metadata.clone(),
            enabled: c.enabled,
        }
    }
}

/// `POST /runs/crons/search` and `/count`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SearchCrons {
    /// Only this assistant's.
    pub assistant_id: Option<String>,
    /// Only this thread's.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) ones.
    pub enabled: Option<bool>,
    /// Metadata entries that must all match.
    pub metadata: Option<Map<String, Value>>,
    /// Page size (default 10, at most 1,000).
    pub limit: Option<i64>,
    /// Page offset.
    pub offset: Option<i64>,
    /// `cron_id`, `assistant_id`, `thread_id`, `created_at` (default), `updated_at`,
    /// `next_run_date`, `end_time`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (default).
    pub sort_order: Option<String>,
    /// Fields to return.
    pub select: Option<Vec<String>>,
}

/// The cron path.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct CronPath {
    /// The cron's id.
    pub cron_id: String,
}

/// An instant as the SDKs send it (`datetime.isoformat()`: no offset means UTC).
fn parse_time(field: &str, s: &str) -> ApiResult<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|t| t.and_utc().timestamp_millis())
        .map_err(|_| ApiError::Invalid(format!("{field} must be an ISO 8601 date-time, not `{s}`")))
}

/// The run request a payload makes, checked now rather than at each tick.
fn checked_payload(state: &AppState, payload: &Map<String, Value>) -> ApiResult<CreateRun> {
    let req: CreateRun = serde_json::from_value(Value::Object(payload.clone()))
        .map_err(|e| ApiError::Invalid(format!("invalid run fields: {e}")))?;
    super::runs::check_later(state, &req)?;
    Ok(req)
}

/// The schedule's next tick from now, checking the expression and time zone.
fn next_tick(c: &Cron, now: i64) -> ApiResult<Option<i64>> {
    let s = Schedule::parse(&c.schedule, c.timezone.as_deref())
        .map_err(|e| ApiError::Invalid(e.to_string()))?;
    Ok(s.next_until(now, c.end_time_ms))
}

async fn create_cron(
    state: &AppState,
    user: &User,
    thread_id: Option<String>,
    body: CreateCron,
) -> ApiResult<Json<CronOut>> {
    if body.schedule.trim().is_empty() {
        return Err(ApiError::Invalid("schedule is required".into()));
    }
    one_of(
        "on_run_completed",
        body.on_run_completed.as_deref(),
        &["delete", "keep"],
    )?;
    let mut payload: Map<String, Value> = body
        .run
        .into_iter()
        .filter(|(k, v)| RUN_FIELDS.contains(&k.as_str()) && !v.is_null())
        .collect();
    if thread_id.is_some() && !payload.contains_key("multitask_strategy") {
        // A tick that finds its thread busy waits its turn rather than being lost.
        payload.insert(
            "multitask_strategy".into(),
            serde_json::to_value(MultitaskStrategy::Enqueue).unwrap_or(Value::Null),
        );
    }
    let req = checked_payload(state, &payload)?;
    let assistant_id = req.assistant_id.clone().unwrap_or_default();
    assistant(state, &assistant_id)?;
    if let Some(t) = &thread_id {
        own_thread(state, user, t).await?;
    }
    let now = now_ms();
    let mut cron = Cron {
        cron_id: uuid::Uuid::new_v4().to_string(),
        owner: user.id.clone(),
        assistant_id,
        on_run_completed: match thread_id {
            None => Some(body.on_run_completed.unwrap_or_else(|| "delete".into())),
            Some(_) => body.on_run_completed,
        },
        thread_id,
        schedule: body.schedule.trim().to_string(),
        timezone: body.timezone.filter(|t| !t.is_empty()),
        end_time_ms: body
            .end_time
            .as_deref()
            .map(|s| parse_time("end_time", s))
            .transpose()?,
        enabled: body.enabled.unwrap_or(true),
        metadata: Value::Object(req.metadata.clone().unwrap_or_default()),
        payload: Value::Object(payload),
        next_run_at_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
    };
    cron.next_run_at_ms = next_tick(&cron, now)?;
    state.crons.insert(&cron).await?;
    Ok(Json(CronOut::from(&cron)))
}

/// `POST /runs/crons`: a stateless cron (a new thread each tick).
pub(crate) async fn create(
    State(state): State<AppState>,
    user: User,
    ApiJson(body): ApiJson<CreateCron>,
) -> ApiResult<Json<CronOut>> {
    create_cron(&state, &user, None, body).await
}

/// `POST /threads/{id}/runs/crons`: a cron on a thread.
pub(crate) async fn create_for_thread(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
    ApiJson(body): ApiJson<CreateCron>,
) -> ApiResult<Json<CronOut>> {
    create_cron(&state, &user, Some(thread_id), body).await
}

async fn find(state: &AppState, user: &User, q: &SearchCrons) -> ApiResult<Vec<Cron>> {
    let filter = CronFilter {
        assistant_id: q.assistant_id.clone(),
        thread_id: q.thread_id.clone(),
        enabled: q.enabled,
    };
    let mut found = state.crons.list(&user.id, &filter).await?;
    if let Some(m) = q.metadata.as_ref().filter(|m| !m.is_empty()) {
        found.retain(|c| m.iter().all(|(k, v)| c.metadata.get(k) == Some(v)));
    }
    Ok(found)
}

/// `POST /runs/crons/search`.
pub(crate) async fn search(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchCrons>,
) -> ApiResult<Json<Vec<Value>>> {
    one_of(
        "sort_by",
        q.sort_by.as_deref(),
        &[
            "cron_id",
            "assistant_id",
            "thread_id",
            "created_at",
            "updated_at",
            "next_run_date",
            "end_time",
        ],
    )?;
    one_of("sort_order", q.sort_order.as_deref(), &["asc", "desc"])?;
    // A page of at most 1,000, as the other searches.
    let limit = q.limit.unwrap_or(10).min(1000);
    let offset = q.offset.unwrap_or(0);
    if limit < 0 || offset < 0 {
        return Err(ApiError::Invalid(
            "limit and offset must not be negative".into(),
        ));
    }
    let mut found = find(&state, &user, &q).await?;
    match q.sort_by.as_deref().unwrap_or("created_at") {
        "cron_id" => found.sort_by(|a, b| a.cron_id.cmp(&b.cron_id)),
        "assistant_id" => found.sort_by(|a, b| a.assistant_id.cmp(&b.assistant_id)),
        "thread_id" => found.sort_by(|a, b| a.thread_id.cmp(&b.thread_id)),
        "updated_at" => found.sort_by_key(|c| c.updated_at_ms),
        "next_run_date" => found.sort_by_key(|c| c.next_run_at_ms),
        "end_time" => found.sort_by_key(|c| c.end_time_ms),
        _ => found.sort_by_key(|c| c.created_at_ms),
    }
    if q.sort_order.as_deref() != Some("asc") {
        found.reverse();
    }
    let page = found
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .map(CronOut::from);
    Ok(Json(project(values(page), &q.select)))
}

/// `POST /runs/crons/count`.
pub(crate) async fn count(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchCrons>,
) -> ApiResult<Json<usize>> {
    Ok(Json(find(&state, &user, &q).await?.len()))
}

/// `DELETE /runs/crons/{cron_id}`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: User,
    Path(CronPath { cron_id }): Path<CronPath>,
) -> ApiResult<StatusCode> {
    if state.crons.delete(&user.id, &cron_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("cron `{cron_id}`")))
    }
}

/// `PATCH /runs/crons/{cron_id}`: changes the given fields; `end_time: null` clears it.
/// The next tick is worked out again from now.
pub(crate) async fn update(
    State(state): State<AppState>,
    user: User,
    Path(CronPath { cron_id }): Path<CronPath>,
    OptionalJson(patch): OptionalJson<Map<String, Value>>,
) -> ApiResult<Json<CronOut>> {
    let Some(mut cron) = state.crons.get(&user.id, &cron_id).await? else {
        return Err(ApiError::NotFound(format!("cron `{cron_id}`")));
    };
    let text = |k: &str, v: &Value| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| ApiError::Invalid(format!("{k} must be a string")))
    };
    let mut payload = cron.payload.as_object().cloned().unwrap_or_default();
    for (k, v) in &patch {
        match k.as_str() {
            "schedule" => cron.schedule = text(k, v)?,
            "timezone" => cron.timezone = (!v.is_null()).then(|| text(k, v)).transpose()?,
            "end_time" => {
                cron.end_time_ms = match v {
                    Value::Null => None,
                    v => Some(parse_time(k, &text(k, v)?)?),
                }
            }
            "enabled" => {
                cron.enabled = v
                    .as_bool()
                    .ok_or_else(|| ApiError::Invalid("enabled must be true or false".into()))?
            }
            "on_run_completed" => {
                let s = text(k, v)?;
                one_of(k, Some(&s), &["delete", "keep"])?;
                cron.on_run_completed = Some(s);
            }
            "metadata" => {
                if !v.is_object() {
                    return Err(ApiError::Invalid("metadata must be an object".into()));
                }
                cron.metadata = v.clone();
                payload.insert(k.clone(), v.clone());
            }
            k if RUN_FIELDS.contains(&k) && k != "assistant_id" => {
                if v.is_null() {
                    payload.remove(k);
                } else {
                    payload.insert(k.to_string(), v.clone());
                }
            }
            other => {
                return Err(ApiError::Invalid(format!(
                    "`{other}` cannot be changed on a cron"
                )))
            }
        }
    }
    checked_payload(&state, &payload)?;
    cron.payload = Value::Object(payload);
    let now = now_ms();
    cron.updated_at_ms = now;
    cron.next_run_at_ms = next_tick(&cron, now)?;
    if !state.crons.update(&cron).await? {
        return Err(ApiError::NotFound(format!("cron `{cron_id}`")));
    }
    Ok(Json(CronOut::from(&cron)))
}
