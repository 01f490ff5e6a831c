//! How the store's rows and values meet SQL, on either database: rows read through
//! [`FromRow`] (written generically rather than derived, so sqlx's macros stay out of the
//! build), JSON columns through [`Json`] (Postgres `jsonb`, SQLite `TEXT`), and JSON binds
//! that Postgres accepts.

use std::borrow::Cow;

use serde::{Serialize, Serializer};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, FromRow, Row, Type};

use super::dialect::Dialect;
use super::{EventRow, Renewed, Run, Thread};

/// A JSON value to bind, as `DB` stores it (see [`Dialect::REFUSES_NUL`]).
pub(crate) fn json<DB: Dialect>(value: &Value) -> Json<StoredJson<'_>> {
    Json(StoredJson {
        value,
        without_nul: DB::REFUSES_NUL,
    })
}

/// See [`json`].
pub(crate) struct StoredJson<'a> {
    value: &'a Value,
    without_nul: bool,
}

impl Serialize for StoredJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn without_nul(text: &str) -> Cow<'_, str> {
            if text.contains('\0') {
                Cow::Owned(text.replace('\0', "\u{fffd}"))
            } else {
                Cow::Borrowed(text)
            }
        }
        if !self.without_nul {
            return self.value.serialize(s);
        }
        let inner = |value| StoredJson {
            value,
            without_nul: true,
        };
        match self.value {
            Value::String(text) => s.serialize_str(&without_nul(text)),
            Value::Array(items) => s.collect_seq(items.iter().map(inner)),
            Value::Object(map) => {
                s.collect_map(map.iter().map(|(k, v)| (without_nul(k), inner(v))))
            }
            other => other.serialize(s),
        }
    }
}

impl<'r, R> FromRow<'r, R> for Thread
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Json<Value>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Thread {
            thread_id: row.try_get("thread_id")?,
            owner: row.try_get("owner")?,
            metadata: row.try_get::<Json<Value>, _>("metadata")?.0,
            status: row.try_get("status")?,
            created_at_ms: row.try_get("created_at_ms")?,
            updated_at_ms: row.try_get("updated_at_ms")?,
        })
    }
}

impl<'r, R> FromRow<'r, R> for Run
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Json<Value>: Decode<'r, R::Database> + Type<R::Database>,
    &'r str: Decode<'r, R::Database>,
    str: Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Run {
            run_id: row.try_get("run_id")?,
            thread_id: row.try_get("thread_id")?,
            thread_seq: row.try_get("thread_seq")?,
            owner: row.try_get("owner")?,
            assistant_id: row.try_get("assistant_id")?,
            graph_id: row.try_get("graph_id")?,
            status: row.try_get("status")?,
            kwargs: row.try_get::<Json<Value>, _>("kwargs")?.0,
            metadata: row.try_get::<Json<Value>, _>("metadata")?.0,
            multitask_strategy: row.try_get("multitask_strategy")?,
            idempotency_key: row.try_get("idempotency_key")?,
            cancel_action: row.try_get("cancel_action")?,
            cancel_reason: row.try_get("cancel_reason")?,
            worker_id: row.try_get("worker_id")?,
            lease_until_ms: row.try_get("lease_until_ms")?,
            attempt: row.try_get("attempt")?,
            error: row.try_get("error")?,
            created_at_ms: row.try_get("created_at_ms")?,
            updated_at_ms: row.try_get("updated_at_ms")?,
            trace_context: row.try_get("trace_context")?,
        })
    }
}

impl<'r, R> FromRow<'r, R> for EventRow
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Json<Value>: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        let event = row.try_get::<Option<Json<Value>>, _>("event")?.map(|j| j.0);
        let packed: Option<Vec<u8>> = row.try_get("packed")?;
        let event = super::stored_event(event, packed.as_deref()).map_err(|e| {
            sqlx::Error::ColumnDecode {
                index: "packed".into(),
                source: e.into(),
            }
        })?;
        Ok(EventRow {
            run_id: row.try_get("run_id")?,
            seq: row.try_get("seq")?,
            thread_id: row.try_get("thread_id")?,
            event,
            // The claim that wrote an event is checked when it is written, not stored.
            attempt: 0,
        })
    }
}

impl<'r, R> FromRow<'r, R> for Renewed
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    &'r str: Decode<'r, R::Database>,
    str: Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Renewed {
            run_id: row.try_get("run_id")?,
            cancel_action: row.try_get("cancel_action")?,
            cancel_reason: row.try_get("cancel_reason")?,
        })
    }
}

/// A claimed run and the status it had before the claim (`running`: its lease had lapsed,
/// and the claim took it over).
pub(crate) struct Claimed {
    /// The run as claimed.
    pub(crate) run: Run,
    /// Its status before.
    pub(crate) was_status: super::RunState,
}

impl<'r, R> FromRow<'r, R> for Claimed
where
    R: Row,
    &'static str: ColumnIndex<R>,
    Run: FromRow<'r, R>,
    &'r str: Decode<'r, R::Database>,
    str: Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Claimed {
            run: Run::from_row(row)?,
            was_status: row.try_get("was_status")?,
        })
    }
}
