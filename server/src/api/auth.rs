//! Who is calling: bearer JWTs (HS256, `sub` = user; Supabase tokens work), API keys, a
//! trusted header (only when configured), or, with no auth configured, the one local user
//! (the server then listens on loopback only).
//!
//! Settings fail closed: [`AuthConfig::new`] refuses an empty or short JWT secret, an API
//! key or user that is empty, and an empty or invalid trusted header name, so a typo in
//! the environment can never turn authentication off while the server believes it is on.
//!
//! JWTs: HS256 only; `exp` is required unless [`JwtSettings::require_exp`] is off; `exp` and
//! `nbf` are checked with [`JwtSettings::leeway_secs`] of leeway (default 60 s); `aud` and
//! `iss` are checked when configured.

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::error::ApiError;
use super::AppState;

/// The user of the local, auth-less mode.
pub const LOCAL_USER: &str = "local";

/// The shortest HS256 secret accepted, in bytes (a 256-bit key, as RFC 7518 requires).
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// Why an authentication setting was refused at start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSettingError {
    /// The JWT secret is empty or too short.
    #[error("PALGRAPH_JWT_SECRET is {0} bytes long; HS256 needs a secret of at least {MIN_JWT_SECRET_BYTES} bytes (use a random 256-bit key, e.g. `openssl rand -base64 32`), or leave the variable unset")]
    ShortSecret(usize),
    /// An API key entry with an empty key or user.
    #[error("PALGRAPH_API_KEYS has an entry with an empty {0}: write `key=user` pairs separated by commas, each key and user non-empty")]
    EmptyApiKey(&'static str),
    /// The trusted header name is empty or not a valid header name.
    #[error("PALGRAPH_TRUSTED_USER_HEADER `{0}` is not a valid header name")]
    BadHeader(String),
}

/// How bearer JWTs are checked.
#[derive(Clone, Debug)]
pub struct JwtSettings {
    /// The HS256 secret.
    pub secret: Vec<u8>,
    /// Refuse tokens without `exp` (default: yes).
    pub require_exp: bool,
    /// Leeway for `exp` and `nbf`, in seconds (default 60).
    pub leeway_secs: u64,
    /// Accepted audiences (`aud`); none configured: `aud` is not checked.
    pub audience: Vec<String>,
    /// Accepted issuers (`iss`); none configured: `iss` is not checked.
    pub issuer: Vec<String>,
}

impl JwtSettings {
    /// Settings with the defaults for a secret.
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        JwtSettings {
            secret: secret.into(),
            require_exp: true,
            leeway_secs: 60,
            audience: Vec::new(),
            issuer: Vec::new(),
        }
    }
}

/// How requests are authenticated (built by [`AuthConfig::new`], which checks it).
#[derive(Clone, Default)]
pub struct AuthConfig {
    jwt: Option<(DecodingKey, Validation)>,
    /// API key -> user.
    api_keys: HashMap<String, String>,
    /// A header whose value is trusted as the user id (behind a proxy that sets it).
    trusted_header: Option<axum::http::HeaderName>,
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("jwt", &self.jwt.is_some())
            .field("api_keys", &self.api_keys.len())
            .field("trusted_header", &self.trusted_header)
            .finish()
    }
}

impl AuthConfig {
    /// Checks and builds the settings.
    ///
    /// # Errors
    /// See [`AuthSettingError`].
    pub fn new(
        jwt: Option<JwtSettings>,
        api_keys: Option<&str>,
        trusted_header: Option<&str>,
    ) -> Result<Self, AuthSettingError> {
        let jwt = match jwt {
            Some(j) if j.secret.len() < MIN_JWT_SECRET_BYTES => {
                return Err(AuthSettingError::ShortSecret(j.secret.len()))
            }
            Some(j) => {
                let mut v = Validation::new(Algorithm::HS256);
                v.leeway = j.leeway_secs;
                v.validate_exp = true;
                v.validate_nbf = true;
                v.required_spec_claims = if j.require_exp {
                    ["exp", "sub"].iter().map(|s| s.to_string()).collect()
                } else {
                    ["sub"].iter().map(|s| s.to_string()).collect()
                };
                if j.audience.is_empty() {
                    v.validate_aud = false;
                } else {
                    v.set_audience(&j.audience);
                }
                if !j.issuer.is_empty() {
                    v.set_issuer(&j.issuer);
                }
                Some((DecodingKey::from_secret(&j.secret), v))
            }
            None => None,
        };
        let api_keys = match api_keys {
            Some(spec) => Self::parse_api_keys(spec)?,
            None => HashMap::new(),
        };
        let trusted_header = match trusted_header {
            Some(name) => Some(
                axum::http::HeaderName::from_bytes(name.trim().as_bytes())
                    .map_err(|_| AuthSettingError::BadHeader(name.to_string()))?,
            ),
            None => None,
        };
        Ok(AuthConfig {
            jwt,
            api_keys,
            trusted_header,
        })
    }

    /// Whether any authentication is configured (otherwise: local mode).
    pub fn enabled(&self) -> bool {
        self.jwt.is_some() || !self.api_keys.is_empty() || self.trusted_header.is_some()
    }

    /// Parses `key=user,key2=user2` (a key alone maps to a user named after it).
    ///
    /// # Errors
    /// An entry with an empty key or user, or no entry at all.
    pub fn parse_api_keys(spec: &str) -> Result<HashMap<String, String>, AuthSettingError> {
        let mut out = HashMap::new();
        for pair in spec.split(',').map(str::trim) {
            if pair.is_empty() {
                continue;
            }
            let (key, user) = match pair.split_once('=') {
                Some((k, u)) => (k.trim().to_string(), u.trim().to_string()),
                None => (
                    pair.to_string(),
                    format!("apikey:{}", pair.chars().take(6).collect::<String>()),
                ),
            };
            if key.is_empty() {
                return Err(AuthSettingError::EmptyApiKey("key"));
            }
            if user.is_empty() {
                return Err(AuthSettingError::EmptyApiKey("user"));
            }
            if key.len() < 16 {
                tracing::warn!(
                    "an API key in PALGRAPH_API_KEYS is shorter than 16 characters; use long random keys"
                );
            }
            out.insert(key, user);
        }
        if out.is_empty() {
            return Err(AuthSettingError::EmptyApiKey("key"));
        }
        Ok(out)
    }

    /// Verifies a bearer JWT and returns its subject.
    ///
    /// # Errors
    /// Why the token is refused (for the 401's detail).
    pub fn verify_jwt(&self, token: &str) -> Result<String, String> {
        let Some((key, validation)) = &self.jwt else {
            return Err("bearer tokens are not accepted by this server".into());
        };
        let data = decode::<Claims>(token, key, validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => "JWT expired".to_string(),
                K::ImmatureSignature => "JWT not valid yet (nbf)".to_string(),
                K::InvalidSignature => "JWT signature does not match".to_string(),
                K::InvalidAlgorithm => "JWT algorithm is not accepted (HS256 only)".to_string(),
                K::InvalidAudience => "JWT audience (aud) is not accepted".to_string(),
                K::InvalidIssuer => "JWT issuer (iss) is not accepted".to_string(),
                K::MissingRequiredClaim(c) => format!("JWT has no `{c}` claim"),
                _ => format!("invalid JWT: {e}"),
            }
        })?;
        data.claims
            .sub
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| "JWT has no subject (sub)".into())
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
}

/// The authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user id (JWT `sub`, API key's user, trusted header value, or `local`).
    pub id: String,
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
            .map(str::trim)
            .filter(|v| !v.is_empty());
        let api_key = header(parts, "x-api-key")
            .map(str::trim)
            .filter(|v| !v.is_empty());
        for key in [api_key, bearer].into_iter().flatten() {
            if let Some(user) = auth.api_keys.get(key) {
                return Ok(User { id: user.clone() });
            }
        }
        if let (Some(token), Some(_)) = (bearer, &auth.jwt) {
            return auth
                .verify_jwt(token)
                .map(|id| User { id })
                .map_err(ApiError::Unauthorized);
        }
        if let Some(h) = &auth.trusted_header {
            if let Some(v) = header(parts, h.as_str())
                .map(str::trim)
                .filter(|v| !v.is_empty())
            {
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
    use jsonwebtoken::{encode, EncodingKey, Header};

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn sign(claims: serde_json::Value, secret: &[u8]) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    fn now() -> i64 {
        palgraph::checkpoint::now_ms() / 1000
    }

    fn jwt(settings: JwtSettings) -> AuthConfig {
        AuthConfig::new(Some(settings), None, None).unwrap()
    }

    #[test]
    fn a_valid_supabase_style_token_gives_its_subject() {
        let auth = jwt(JwtSettings::new(SECRET));
        let t = sign(
            serde_json::json!({"sub": "user-1", "aud": "authenticated", "role": "authenticated", "exp": now() + 600}),
            SECRET,
        );
        assert_eq!(auth.verify_jwt(&t).unwrap(), "user-1");
    }

    #[test]
    fn wrong_secret_expired_unsigned_and_exp_less_tokens_are_refused() {
        let auth = jwt(JwtSettings::new(SECRET));
        let other = sign(
            serde_json::json!({"sub": "u", "exp": now() + 600}),
            b"another-secret-of-thirty-two-bytes!!",
        );
        assert!(auth.verify_jwt(&other).unwrap_err().contains("signature"));
        let expired = sign(serde_json::json!({"sub": "u", "exp": now() - 120}), SECRET);
        assert!(auth.verify_jwt(&expired).unwrap_err().contains("expired"));
        let no_exp = sign(serde_json::json!({"sub": "u"}), SECRET);
        assert!(auth.verify_jwt(&no_exp).unwrap_err().contains("exp"));
        let early = sign(
            serde_json::json!({"sub": "u", "exp": now() + 600, "nbf": now() + 600}),
            SECRET,
        );
        assert!(auth.verify_jwt(&early).unwrap_err().contains("nbf"));
        assert!(auth.verify_jwt("garbage").is_err());
        // `alg: none` with no signature.
        let none = format!(
            "{}.{}.",
            "eyJhbGciOiJub25lIn0", "eyJzdWIiOiJ1IiwiZXhwIjo5OTk5OTk5OTk5fQ"
        );
        assert!(auth.verify_jwt(&none).is_err());
    }

    #[test]
    fn leeway_exp_optional_audience_and_issuer_are_applied() {
        let lenient = jwt(JwtSettings {
            require_exp: false,
            ..JwtSettings::new(SECRET)
        });
        let no_exp = sign(serde_json::json!({"sub": "u"}), SECRET);
        assert_eq!(lenient.verify_jwt(&no_exp).unwrap(), "u");
        let just_expired = sign(serde_json::json!({"sub": "u", "exp": now() - 30}), SECRET);
        assert!(jwt(JwtSettings::new(SECRET))
            .verify_jwt(&just_expired)
            .is_ok());
        let strict = jwt(JwtSettings {
            leeway_secs: 0,
            audience: vec!["authenticated".into()],
            issuer: vec!["https://auth.example".into()],
            ..JwtSettings::new(SECRET)
        });
        assert!(strict.verify_jwt(&just_expired).is_err());
        let good = sign(
            serde_json::json!({"sub": "u", "exp": now() + 600, "aud": "authenticated", "iss": "https://auth.example"}),
            SECRET,
        );
        assert_eq!(strict.verify_jwt(&good).unwrap(), "u");
        let wrong_aud = sign(
            serde_json::json!({"sub": "u", "exp": now() + 600, "aud": "anon", "iss": "https://auth.example"}),
            SECRET,
        );
        assert!(strict.verify_jwt(&wrong_aud).unwrap_err().contains("aud"));
        let wrong_iss = sign(
            serde_json::json!({"sub": "u", "exp": now() + 600, "aud": "authenticated", "iss": "evil"}),
            SECRET,
        );
        assert!(strict.verify_jwt(&wrong_iss).unwrap_err().contains("iss"));
    }

    #[test]
    fn empty_or_short_secrets_keys_users_and_headers_are_refused() {
        for secret in [&b""[..], b"s3cret", &SECRET[..31]] {
            assert!(matches!(
                AuthConfig::new(Some(JwtSettings::new(secret)), None, None),
                Err(AuthSettingError::ShortSecret(_))
            ));
        }
        for keys in ["=alice", "key=", "", " , ", "k1=alice,=bob"] {
            assert!(
                matches!(
                    AuthConfig::new(None, Some(keys), None),
                    Err(AuthSettingError::EmptyApiKey(_))
                ),
                "{keys:?}"
            );
        }
        for h in ["", " ", "bad header"] {
            assert!(matches!(
                AuthConfig::new(None, None, Some(h)),
                Err(AuthSettingError::BadHeader(_))
            ));
        }
        let keys = AuthConfig::parse_api_keys("abc=alice, def=bob").unwrap();
        assert_eq!(keys.get("abc").map(String::as_str), Some("alice"));
        assert_eq!(keys.get("def").map(String::as_str), Some("bob"));
    }
}
