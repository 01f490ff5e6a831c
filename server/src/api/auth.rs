//! The caller of a request: [`User`] from its credentials, as the [`crate::auth`] settings
//! say (a bearer JWT, an API key, a trusted header, or the local user when auth is off).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::ApiError;
use super::AppState;
use crate::auth::{Credentials, User, API_KEY, AUTHORIZATION};

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

impl FromRequestParts<AppState> for User {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // Already authenticated on this request (by the rate limiter).
        if let Some(user) = parts.extensions.get::<User>() {
            return Ok(user.clone());
        }
        let bearer = header(parts, AUTHORIZATION).and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
        let credentials = Credentials {
            bearer,
            api_key: header(parts, API_KEY),
            trusted: state.auth.trusted_header().and_then(|h| header(parts, h)),
        };
        state
            .auth
            .identify(&credentials)
            .map_err(ApiError::Unauthorized)
    }
}
