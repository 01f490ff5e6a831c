//! Request bodies and paths, checked before a handler sees them: `ApiJson<T>` (422 for
//! malformed JSON, the wrong shape or a NUL character in any string, 413 when too large),
//! `OptionalJson<T>` (an empty body is `T::default()`), and [`reject_nul`], the
//! middleware that refuses a NUL character (`%00`) in a path or query with 422: a NUL
//! cannot be stored in a Postgres text or jsonb value, so it is refused on every backend
//! alike before anything is written.
//!
//! A body is read as JSON whatever its `Content-Type` says, as the official Agent Server
//! does: proxies (agent-chat-ui's Next.js passthrough) forward bodies without the header.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Whether JSON text holds a `\u0000` escape (a NUL character in a string or key).
pub(crate) fn has_escaped_nul(json: &[u8]) -> bool {
    let mut i = 0;
    while let Some(pos) = json[i..].windows(6).position(|w| w == b"\\u0000") {
        let at = i + pos;
        // A real escape when the backslash is not itself escaped: an odd run of
        // backslashes ends at it.
        let run = json[..=at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if run % 2 == 1 {
            return true;
        }
        i = at + 1;
    }
    false
}

const NUL_IN_BODY: &str =
    "NUL characters (\\u0000) are not allowed in request bodies; remove them and retry";

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if has_escaped_nul(bytes) {
        return Err(ApiError::Invalid(NUL_IN_BODY.into()));
    }
    serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            ApiError::Invalid(format!("invalid request body: {e}"))
        }
        _ => ApiError::Invalid(format!("malformed JSON: {e}")),
    })
}

async fn body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge
        } else {
            ApiError::BadRequest(e.body_text())
        }
    })
}

/// A JSON request body (read as JSON with or without a `Content-Type`).
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body(req, state).await?;
        parse(&bytes).map(ApiJson)
    }
}

/// An optional JSON body: an empty body is `T::default()`.
pub(crate) struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: serde::de::DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        parse(&bytes).map(OptionalJson)
    }
}

/// Refuses a request whose path or query holds a NUL character (`%00`), with 422.
pub(crate) async fn reject_nul(req: Request, next: Next) -> Response {
    let uri = req.uri();
    let nul = |s: &str| s.as_bytes().windows(3).any(|w| w == b"%00");
    if nul(uri.path()) || uri.query().is_some_and(nul) {
        return ApiError::Invalid(
            "NUL characters (%00) are not allowed in paths or query strings".into(),
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::has_escaped_nul;

    #[test]
    fn finds_nul_escapes_and_only_them() {
        assert!(has_escaped_nul(br#"{"a":"x\u0000y"}"#));
        assert!(has_escaped_nul(br#"{"\u0000":1}"#));
        assert!(
            has_escaped_nul(br#"{"a":"\\\u0000"}"#),
            "an escaped backslash, then NUL"
        );
        assert!(
            !has_escaped_nul(br#"{"a":"\\u0000"}"#),
            "a backslash, then the text u0000"
        );
        assert!(
            has_escaped_nul(br#"{"a":"\u00001"}"#),
            "NUL, then the digit 1"
        );
        assert!(!has_escaped_nul(br#"{"a":"u0000 and \u0001"}"#));
    }
}
