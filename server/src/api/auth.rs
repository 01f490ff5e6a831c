//! Who is calling: bearer JWTs (HS256, `sub` = user; Supabase tokens work), API keys, a
//! trusted header (only when configured), or, with no auth configured, the one local user
//! (the server then listens on loopback only).

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::error::ApiError;
use super::AppState;

/// The user of the local, auth-less mode.
pub const LOCAL_USER: &str = "local";

/// How requests are authenticated.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// HS256 secret for bearer JWTs.
    pub jwt_secret: Option<Vec<u8>>,
    /// API key -> user.
    pub api_keys: HashMap<String, String>,
    /// A header whose value is trusted as the user id (behind a proxy that sets it).
    pub trusted_header: Option<String>,
}

impl AuthConfig {
    /// Whether any authentication is configured (otherwise: local mode).
    pub fn enabled(&self) -> bool {
        self.jwt_secret.is_some() || !self.api_keys.is_empty() || self.trusted_header.is_some()
    }

    /// Parses `key=user,key2=user2` (a key alone maps to a user named after it).
    pub fn parse_api_keys(spec: &str) -> HashMap<String, String> {
        spec.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((k, u)) => (k.trim().to_string(), u.trim().to_string()),
                None => (
                    pair.to_string(),
                    format!("apikey:{}", &pair[..pair.len().min(6)]),
                ),
            })
            .collect()
    }
}

/// The authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user id (JWT `sub`, API key's user, trusted header value, or `local`).
    pub id: String,
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    exp: Option<f64>,
    nbf: Option<f64>,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
}

/// Verifies an HS256 JWT and returns its subject.
pub fn verify_jwt(token: &str, secret: &[u8]) -> Result<String, String> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a JWT".into());
    };
    let header: Header = serde_json::from_slice(&b64.decode(h).map_err(|_| "bad JWT header")?)
        .map_err(|_| "bad JWT header")?;
    if header.alg != "HS256" {
        return Err(format!(
            "JWT algorithm {} is not accepted (HS256 only)",
            header.alg
        ));
    }
    let sig = b64
        .decode(s.trim_end_matches('='))
        .map_err(|_| "bad JWT signature encoding")?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| "bad JWT secret")?;
    mac.update(h.as_bytes());
    mac.update(b".");
    mac.update(p.as_bytes());
    mac.verify_slice(&sig)
        .map_err(|_| "JWT signature does not match")?;
    let claims: Claims = serde_json::from_slice(&b64.decode(p).map_err(|_| "bad JWT payload")?)
        .map_err(|_| "bad JWT payload")?;
    let now = palgraph::checkpoint::now_ms() as f64 / 1000.0;
    if claims.exp.is_some_and(|exp| exp < now) {
        return Err("JWT expired".into());
    }
    if claims.nbf.is_some_and(|nbf| nbf > now + 60.0) {
        return Err("JWT not valid yet".into());
    }
    claims
        .sub
        .filter(|s| !s.is_empty())
        .ok_or_else(|| "JWT has no subject (sub)".into())
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

impl FromRequestParts<AppState> for User {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let auth = &state.auth;
        if !auth.enabled() {
            return Ok(User {
                id: LOCAL_USER.into(),
            });
        }
        let bearer = header(parts, "authorization")
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let api_key = header(parts, "x-api-key").map(str::trim);
        for key in [api_key, bearer].into_iter().flatten() {
            if let Some(user) = auth.api_keys.get(key) {
                return Ok(User { id: user.clone() });
            }
        }
        if let (Some(token), Some(secret)) = (bearer, &auth.jwt_secret) {
            return verify_jwt(token, secret)
                .map(|id| User { id })
                .map_err(ApiError::Unauthorized);
        }
        if let Some(h) = &auth.trusted_header {
            if let Some(v) = header(parts, h).filter(|v| !v.is_empty()) {
                return Ok(User { id: v.to_string() });
            }
        }
        Err(ApiError::Unauthorized(
            "missing or invalid credentials: send a bearer token or an x-api-key header".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(payload: &str, secret: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let h = b64.encode(r#"{"alg":"HS256","typ":"JWT"}"#);
        let p = b64.encode(payload);
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(format!("{h}.{p}").as_bytes());
        format!("{h}.{p}.{}", b64.encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn valid_supabase_style_token_gives_its_subject() {
        let t = sign(
            r#"{"sub":"user-1","aud":"authenticated","role":"authenticated","exp":9999999999}"#,
            b"s3cret",
        );
        assert_eq!(verify_jwt(&t, b"s3cret").unwrap(), "user-1");
    }

    #[test]
    fn wrong_secret_expired_and_unsigned_tokens_are_refused() {
        let t = sign(r#"{"sub":"u","exp":9999999999}"#, b"other");
        assert!(verify_jwt(&t, b"s3cret").unwrap_err().contains("signature"));
        let t = sign(r#"{"sub":"u","exp":1}"#, b"s3cret");
        assert!(verify_jwt(&t, b"s3cret").unwrap_err().contains("expired"));
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let none = format!(
            "{}.{}.",
            b64.encode(r#"{"alg":"none"}"#),
            b64.encode(r#"{"sub":"u"}"#)
        );
        assert!(verify_jwt(&none, b"s3cret").is_err());
        assert!(verify_jwt("garbage", b"s3cret").is_err());
    }

    #[test]
    fn api_keys_parse() {
        let k = AuthConfig::parse_api_keys("abc=alice, def=bob");
        assert_eq!(k.get("abc").map(String::as_str), Some("alice"));
        assert_eq!(k.get("def").map(String::as_str), Some("bob"));
    }
}
