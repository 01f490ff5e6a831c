//! API errors: one enum, each variant a status; internal errors are logged and shown as a
//! generic message. Bodies are `{"detail": "...", "code": "..."}` (`detail` is what the
//! LangGraph SDKs read).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::store::StoreError;

/// An error answered with a JSON body and a 4xx/5xx status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Malformed request (400).
    #[error("{0}")]
    BadRequest(String),
    /// Well-formed but invalid content (422).
    #[error("{0}")]
    Invalid(String),
    /// Missing or bad credentials (401).
    #[error("{0}")]
    Unauthorized(String),
    /// Unknown, or belongs to someone else (404).
    #[error("{0} not found")]
    NotFound(String),
    /// A conflict (409) with a machine-readable code.
    #[error("{message}")]
    Conflict {
        /// `thread_busy`, `exists`, ...
        code: &'static str,
        /// For people.
        message: String,
    },
    /// Body too large (413).
    #[error("request body too large")]
    TooLarge,
    /// Not now (503, with `Retry-After`): the server is shutting down or its database is
    /// unreachable for the moment.
    #[error("{0}")]
    Unavailable(String),
    /// A failure on our side (500): the error is logged with its sources, not shown.
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A failure on our side (500), keeping `error` (and what caused it) for the log.
    pub fn internal(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ApiError::Internal(error.into())
    }

    fn parts(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict { code, .. } => (StatusCode::CONFLICT, code),
            ApiError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let detail = match &self {
            ApiError::Internal(error) => {
                tracing::error!(error = %chain(error.as_ref()), "internal error");
                "internal server error".to_string()
            }
            other => other.to_string(),
        };
        let mut resp = (status, Json(json!({"detail": detail, "code": code}))).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("2"),
            );
        }
        resp
    }
}

/// An error and each of its sources, `: `-separated (a source whose text its error already
/// shows is not repeated).
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Busy(t) => ApiError::Conflict {
                code: "thread_busy",
                message: StoreError::Busy(t).to_string(),
            },
            StoreError::Exists(what) => ApiError::Conflict {
                code: "exists",
                message: format!("{what} already exists"),
            },
            StoreError::NotFound(what) => ApiError::NotFound(what),
            StoreError::OtherGraph(t) => ApiError::Conflict {
                code: "graph_mismatch",
                message: StoreError::OtherGraph(t).to_string(),
            },
            StoreError::ShuttingDown => ApiError::Unavailable(StoreError::ShuttingDown.to_string()),
            e if e.is_transient() => ApiError::Unavailable(format!(
                "the database is unreachable for the moment; retry shortly ({e})"
            )),
            other => ApiError::internal(other),
        }
    }
}

impl From<palgraph::RunError> for ApiError {
    fn from(e: palgraph::RunError) -> Self {
        use palgraph::RunError as E;
        match e {
            E::NothingToResume { .. }
            | E::AmbiguousResume { .. }
            | E::UnknownInterrupt { .. }
            | E::ResumeNotAtHead { .. } => ApiError::BadRequest(e.to_string()),
            E::UnknownCheckpoint { .. } => ApiError::NotFound(e.to_string()),
            E::UnknownNode(_) | E::InvalidInput(_) | E::Reduce(_) | E::SendLimit { .. } => {
                ApiError::Invalid(e.to_string())
            }
            E::Checkpoint(c) => c.into(),
            other => ApiError::internal(other),
        }
    }
}

impl From<palgraph::checkpoint::CheckpointError> for ApiError {
    fn from(e: palgraph::checkpoint::CheckpointError) -> Self {
        if e.is_transient() {
            ApiError::Unavailable(format!(
                "the database is unreachable for the moment; retry shortly ({e})"
            ))
        } else {
            ApiError::internal(e)
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        match r {
            JsonRejection::JsonDataError(e) => {
                ApiError::Invalid(format!("invalid request body: {}", e.body_text()))
            }
            JsonRejection::JsonSyntaxError(e) => {
                ApiError::Invalid(format!("malformed JSON: {}", e.body_text()))
            }
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::BadRequest("expected a JSON body (Content-Type: application/json)".into())
            }
            JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::TooLarge
            }
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::BadRequest(r.body_text())
    }
}

/// `Result` with [`ApiError`].
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the thread's rows could not be read")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_internal_error_keeps_its_sources_for_the_log() {
        let e = ApiError::internal(Outer(std::io::Error::other("disk I/O error")));
        let ApiError::Internal(inner) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            chain(inner.as_ref()),
            "the thread's rows could not be read: disk I/O error"
        );
        let resp = e.into_response();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
