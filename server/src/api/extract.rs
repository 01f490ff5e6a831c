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
    serde_json::from_slice(bytes).map_err(|e| {
        // serde_json calls some shape errors syntax (a number where an enum's name goes):
        // what decides is whether the text is JSON at all.
        let well_formed = e.classify() == serde_json::error::Category::Data
            || serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        if !well_formed {
            return ApiError::Invalid(format!("malformed JSON: {e}"));
        }
        match field_of_error::<T>(bytes) {
            Some(path) => ApiError::Invalid(format!("invalid request body: `{path}`: {e}")),
            None => ApiError::Invalid(format!("invalid request body: {e}")),
        }
    })
}

/// Where in a body of well-formed JSON the value that does not fit `T` is (`command.goto`),
/// read again only for the message of a refusal; `None` for the body as a whole.
fn field_of_error<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let path = serde_path_to_error::deserialize::<_, T>(doc)
        .err()?
        .path()
        .to_string();
    (path != ".").then_some(path)
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
    use super::{has_escaped_nul, parse, ApiError};
    use crate::api::langgraph::models::CreateRun;

    fn refusal(body: &str) -> String {
        match parse::<CreateRun>(body.as_bytes()) {
            Err(ApiError::Invalid(m)) => m,
            other => panic!("expected a refusal of {body}, got {other:?}"),
        }
    }

    #[test]
    fn a_refused_body_names_the_field_that_does_not_fit() {
        let m = refusal(r#"{"assistant_id": "a", "durability": "later"}"#);
        assert!(
            m.starts_with("invalid request body: `durability`: unknown variant `later`"),
            "{m}"
        );
        assert!(m.contains("`sync`, `async`, `exit`"), "{m}");
        let m = refusal(r#"{"command": {"goto": ["a"]}, "if_not_exists": "make"}"#);
        assert!(m.contains("`if_not_exists`: unknown variant `make`"), "{m}");
        // Fields of more than one shape are read the same way, with their own words.
        let m = refusal(r#"{"command": {"goto": 1}}"#);
        assert!(m.contains("`command.goto`: must be a node name"), "{m}");
        let m = refusal(r#"{"stream_mode": ["values", "nope"]}"#);
        assert!(
            m.contains("`stream_mode`: unknown stream_mode `nope`"),
            "{m}"
        );
        let m = refusal(r#"{"config": {"recursion_limit": 0}}"#);
        assert!(
            m.contains("`config.recursion_limit`: must be a positive integer"),
            "{m}"
        );
        let m = refusal(r#"{"interrupt_before": "review"}"#);
        assert!(m.contains("`interrupt_before`: expected \"*\""), "{m}");
        let m = refusal(r#"{"multitask_strategy": 3}"#);
        assert!(
            m.starts_with("invalid request body: `multitask_strategy`"),
            "{m}"
        );
        let m = refusal(r#"{"stream_subgraphs": "yes"}"#);
        assert!(m.contains("`stream_subgraphs`: invalid type"), "{m}");
        // The document as a whole, and bad JSON, say so without a path.
        assert!(refusal(r#""text""#).starts_with("invalid request body: invalid type"));
        assert!(refusal(r#"{"a": 1} x"#).starts_with("malformed JSON: trailing characters"));
        assert!(refusal(r#"{"a": "#).starts_with("malformed JSON"));
        let ok = parse::<CreateRun>(br#"{"durability": "exit", "on_completion": "keep"}"#);
        assert!(ok.is_ok(), "{ok:?}");
    }

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
