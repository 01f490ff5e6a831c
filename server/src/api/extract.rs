//! `ApiJson<T>`: a JSON body whose rejections are [`ApiError`]s (400 for malformed JSON,
//! 422 for a body of the wrong shape, 413 when too large).

use axum::extract::{FromRequest, Request};
use axum::Json;

use super::error::ApiError;

/// A JSON request body.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(v) = Json::<T>::from_request(req, state).await?;
        Ok(ApiJson(v))
    }
}

/// An optional JSON body: an empty body is `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: serde::de::DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::TooLarge)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(OptionalJson)
            .map_err(|e| match e.classify() {
                serde_json::error::Category::Data => {
                    ApiError::Invalid(format!("invalid request body: {e}"))
                }
                _ => ApiError::BadRequest(format!("malformed JSON: {e}")),
            })
    }
}
