//! Who is calling: bearer JWTs (HS256, `sub` = user; Supabase tokens work), API keys, a
//! trusted header (only when configured), or, with no auth configured, the one local user
//! (the server then listens on loopback only).
//!
//! Settings fail closed: [`AuthConfig::new`] refuses an empty or short JWT secret; an API
//! key entry that is empty, has no `=`, or repeats a key; and a trusted header name that is
//! empty, invalid, or one of the [`CREDENTIAL_HEADERS`]; so a typo in the environment can
//! never turn authentication off, or hand a key to the wrong user, while the server believes
//! it is on.
//!
//! JWTs: HS256 only; `exp` is required unless [`JwtSettings::require_exp`] is off; `exp` and
//! `nbf` are checked with [`JwtSettings::leeway_secs`] of leeway (default 60 s); `aud` and
//! `iss`, when configured, are required and must be one of the configured values.

use std::collections::HashMap;

use jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// The user of the local, auth-less mode.
pub const LOCAL_USER: &str = "local";

/// The shortest HS256 secret accepted, in bytes (a 256-bit key, as RFC 7518 requires).
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// The request header a bearer token (or an API key) is read from.
pub(crate) const AUTHORIZATION: &str = "authorization";

/// The request header an API key is read from.
pub(crate) const API_KEY: &str = "x-api-key";

/// Headers that carry credentials: the two this server reads (`authorization`, `x-api-key`)
/// and the standard ones a client or browser sends its secrets in. None of them may be the
/// trusted user header: any token or key a client sent would be taken as a user id.
pub const CREDENTIAL_HEADERS: [&str; 4] = [AUTHORIZATION, API_KEY, "proxy-authorization", "cookie"];

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
    /// An API key entry without `=` (its position, from 1, among the comma-separated
    /// entries): a key alone names no user.
    #[error("PALGRAPH_API_KEYS entry {0} has no `=`: write `key=user` pairs separated by commas; a key alone names no user")]
    ApiKeyWithoutUser(usize),
    /// One key given twice (the entries' positions, from 1, and the users they name).
    #[error("PALGRAPH_API_KEYS gives one key twice, in entries {first} (user `{first_user}`) and {second} (user `{second_user}`): a key must name exactly one user")]
    DuplicateApiKey {
        /// The first entry with the key.
        first: usize,
        /// Its user.
        first_user: String,
        /// The entry that repeats it.
        second: usize,
        /// Its user.
        second_user: String,
    },
    /// The trusted header name is empty or not a valid header name.
    #[error("PALGRAPH_TRUSTED_USER_HEADER `{0}` is not a valid header name")]
    BadHeader(String),
    /// The trusted header is one of the [`CREDENTIAL_HEADERS`].
    #[error("PALGRAPH_TRUSTED_USER_HEADER `{0}` is a credential header: any token or key a client sends in it would be taken as a user id; name the header your proxy sets with the authenticated user, e.g. x-forwarded-user")]
    CredentialHeader(String),
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
                // A configured audience or issuer is required, not only checked when the
                // token happens to carry the claim.
                let required: Vec<&str> = [
                    ("sub", true),
                    ("exp", j.require_exp),
                    ("aud", !j.audience.is_empty()),
                    ("iss", !j.issuer.is_empty()),
                ]
                .into_iter()
                .filter_map(|(claim, wanted)| wanted.then_some(claim))
                .collect();
                v.set_required_spec_claims(&required);
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
        let trusted_header = trusted_header.map(Self::parse_header).transpose()?;
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

    /// The header trusted as the user id, when one is configured.
    pub fn trusted_header(&self) -> Option<&str> {
        self.trusted_header.as_ref().map(|h| h.as_str())
    }

    /// Checks a trusted header name: a valid header name, not a credential header (compared
    /// without regard to case, as header names are).
    fn parse_header(name: &str) -> Result<axum::http::HeaderName, AuthSettingError> {
        let header = axum::http::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| AuthSettingError::BadHeader(name.to_string()))?;
        if CREDENTIAL_HEADERS.contains(&header.as_str()) {
            return Err(AuthSettingError::CredentialHeader(header.as_str().into()));
        }
        Ok(header)
    }

    /// Parses `key=user,key2=user2`. The last `=` of an entry separates its key from its
    /// user, so a key may end in base64's `=` padding; a user cannot hold a `=`.
    ///
    /// # Errors
    /// An entry with an empty key or user or without `=`, a key given twice, or no entry at
    /// all.
    pub fn parse_api_keys(spec: &str) -> Result<HashMap<String, String>, AuthSettingError> {
        // Key -> (entry position, user).
        let mut out: HashMap<String, (usize, String)> = HashMap::new();
        for (i, pair) in spec.split(',').map(str::trim).enumerate() {
            let entry = i + 1;
            if pair.is_empty() {
                continue;
            }
            let (key, user) = pair
                .rsplit_once('=')
                .map(|(k, u)| (k.trim().to_string(), u.trim().to_string()))
                .ok_or(AuthSettingError::ApiKeyWithoutUser(entry))?;
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
            if let Some((first, first_user)) = out.get(&key) {
                return Err(AuthSettingError::DuplicateApiKey {
                    first: *first,
                    first_user: first_user.clone(),
                    second: entry,
                    second_user: user,
                });
            }
            out.insert(key, (entry, user));
        }
        if out.is_empty() {
            return Err(AuthSettingError::EmptyApiKey("key"));
        }
        Ok(out.into_iter().map(|(k, (_, user))| (k, user)).collect())
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

/// A credential's value, trimmed; a blank one is none.
fn given(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|v| !v.is_empty())
}

/// The credentials a request carries, as its headers give them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Credentials<'a> {
    /// The bearer token of `authorization: Bearer ...`.
    pub bearer: Option<&'a str>,
    /// The `x-api-key` header.
    pub api_key: Option<&'a str>,
    /// The trusted user header's value, when one is configured.
    pub trusted: Option<&'a str>,
}

impl AuthConfig {
    /// Who `credentials` authenticate: with no authentication configured, the local user;
    /// otherwise an API key (sent as `x-api-key` or as the bearer token), then a bearer JWT,
    /// then the trusted header. Blank values count as absent.
    ///
    /// # Errors
    /// Why the caller is refused (for the 401's detail): a JWT that does not verify, or no
    /// credential this server accepts.
    pub fn identify(&self, credentials: &Credentials<'_>) -> Result<User, String> {
        if !self.enabled() {
            return Ok(User {
                id: LOCAL_USER.into(),
            });
        }
        let (bearer, api_key) = (given(credentials.bearer), given(credentials.api_key));
        for key in [api_key, bearer].into_iter().flatten() {
            if let Some(user) = self.api_keys.get(key) {
                return Ok(User { id: user.clone() });
            }
        }
        if let (Some(token), Some(_)) = (bearer, &self.jwt) {
            return self.verify_jwt(token).map(|id| User { id });
        }
        if let (Some(_), Some(v)) = (&self.trusted_header, given(credentials.trusted)) {
            return Ok(User { id: v.to_string() });
        }
        Err("missing or invalid credentials: send a bearer token or an x-api-key header".into())
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

    #[test]
    fn a_key_without_a_user_or_given_twice_is_refused_naming_the_entries() {
        for (keys, entry) in [("ka", 1), ("ka=alice,kb", 2), ("ka=alice,,kb", 3)] {
            match AuthConfig::new(None, Some(keys), None) {
                Err(e @ AuthSettingError::ApiKeyWithoutUser(n)) => {
                    assert_eq!(n, entry, "{keys:?}");
                    assert!(e.to_string().contains(&format!("entry {entry} has no `=`")));
                }
                other => panic!("{keys:?}: {other:?}"),
            }
        }
        let e = AuthConfig::new(None, Some("ka=alice,kb=carol,ka=bob"), None).unwrap_err();
        assert!(
            matches!(
                &e,
                AuthSettingError::DuplicateApiKey {
                    first: 1,
                    second: 3,
                    ..
                }
            ),
            "{e:?}"
        );
        let said = e.to_string();
        assert!(
            said.contains("entries 1 (user `alice`) and 3 (user `bob`)"),
            "{said}"
        );
        assert!(!said.contains("ka"), "the key itself is not shown: {said}");
        // The same key for the same user is still a key given twice.
        assert!(matches!(
            AuthConfig::new(None, Some("ka=alice, ka = alice"), None),
            Err(AuthSettingError::DuplicateApiKey { .. })
        ));
        // A base64 key keeps its `=` padding: the last `=` names the user.
        let keys = AuthConfig::parse_api_keys("c2VjcmV0IGtleQ===alice,b64=key==bob").unwrap();
        assert_eq!(
            keys.get("c2VjcmV0IGtleQ==").map(String::as_str),
            Some("alice")
        );
        assert_eq!(keys.get("b64=key=").map(String::as_str), Some("bob"));
        // Two keys for one user (a key being rotated) are fine.
        assert_eq!(
            AuthConfig::parse_api_keys("old=alice,new=alice")
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_credential_header_is_never_the_trusted_user_header() {
        for h in [
            "authorization",
            "Authorization",
            "X-API-Key",
            "x-api-key",
            "cookie",
            "COOKIE",
            "proxy-authorization",
            " Proxy-Authorization ",
        ] {
            match AuthConfig::new(None, None, Some(h)) {
                Err(e @ AuthSettingError::CredentialHeader(_)) => {
                    assert!(e.to_string().contains("credential header"), "{e}")
                }
                other => panic!("{h:?}: {other:?}"),
            }
        }
        let auth = AuthConfig::new(None, None, Some("X-Forwarded-User")).unwrap();
        assert_eq!(auth.trusted_header(), Some("x-forwarded-user"));
    }

    #[test]
    fn a_configured_audience_or_issuer_is_required() {
        let both = jwt(JwtSettings {
            audience: vec!["authenticated".into()],
            issuer: vec!["https://auth.example".into()],
            ..JwtSettings::new(SECRET)
        });
        let exp = now() + 600;
        // A token without both is refused for either.
        let err = both
            .verify_jwt(&sign(serde_json::json!({"sub": "u", "exp": exp}), SECRET))
            .unwrap_err();
        assert!(err.contains("`aud`") || err.contains("`iss`"), "{err}");
        let cases = [
            (
                serde_json::json!({"sub": "u", "exp": exp, "iss": "https://auth.example"}),
                "aud",
            ),
            (
                serde_json::json!({"sub": "u", "exp": exp, "aud": "authenticated"}),
                "iss",
            ),
            (
                serde_json::json!({"sub": "u", "exp": exp, "aud": [], "iss": "https://auth.example"}),
                "aud",
            ),
            (
                serde_json::json!({"sub": "u", "exp": exp, "aud": "authenticated", "iss": ""}),
                "iss",
            ),
        ];
        for (claims, missing) in cases {
            let err = both.verify_jwt(&sign(claims.clone(), SECRET)).unwrap_err();
            assert!(err.contains(missing), "{claims}: {err}");
        }
        // Only the audience configured: the issuer is neither required nor checked.
        let aud_only = jwt(JwtSettings {
            audience: vec!["authenticated".into()],
            ..JwtSettings::new(SECRET)
        });
        let no_aud = sign(serde_json::json!({"sub": "u", "exp": exp}), SECRET);
        assert!(aud_only.verify_jwt(&no_aud).unwrap_err().contains("aud"));
        let with_aud = sign(
            serde_json::json!({"sub": "u", "exp": exp, "aud": "authenticated"}),
            SECRET,
        );
        assert_eq!(aud_only.verify_jwt(&with_aud).unwrap(), "u");
        // Only the issuer configured: a token without `iss` is refused, `aud` is not needed.
        let iss_only = jwt(JwtSettings {
            issuer: vec!["https://auth.example".into()],
            ..JwtSettings::new(SECRET)
        });
        assert!(iss_only.verify_jwt(&no_aud).unwrap_err().contains("iss"));
        let with_iss = sign(
            serde_json::json!({"sub": "u", "exp": exp, "iss": "https://auth.example"}),
            SECRET,
        );
        assert_eq!(iss_only.verify_jwt(&with_iss).unwrap(), "u");
        // Neither configured: neither required.
        assert_eq!(
            jwt(JwtSettings::new(SECRET)).verify_jwt(&no_aud).unwrap(),
            "u"
        );
    }

    #[test]
    fn credentials_identify_the_local_user_a_key_a_token_then_the_trusted_header() {
        let who = |auth: &AuthConfig, c: Credentials<'_>| auth.identify(&c).map(|u| u.id);
        let off = AuthConfig::new(None, None, None).unwrap();
        assert_eq!(who(&off, Credentials::default()).unwrap(), LOCAL_USER);

        let token = sign(
            serde_json::json!({"sub": "jane", "exp": now() + 60}),
            SECRET,
        );
        let auth = AuthConfig::new(
            Some(JwtSettings::new(SECRET.to_vec())),
            Some("ka=alice"),
            Some("x-forwarded-user"),
        )
        .unwrap();
        let key = Credentials {
            api_key: Some(" ka "),
            bearer: Some(&token),
            trusted: Some("mallory"),
        };
        assert_eq!(who(&auth, key).unwrap(), "alice", "a key comes first");
        let key_as_bearer = Credentials {
            bearer: Some("ka"),
            ..Credentials::default()
        };
        assert_eq!(who(&auth, key_as_bearer).unwrap(), "alice");
        let jwt = Credentials {
            bearer: Some(&token),
            trusted: Some("mallory"),
            ..Credentials::default()
        };
        assert_eq!(
            who(&auth, jwt).unwrap(),
            "jane",
            "a token before the header"
        );
        let bad = Credentials {
            bearer: Some("not-a-jwt"),
            trusted: Some("mallory"),
            ..Credentials::default()
        };
        assert!(who(&auth, bad).is_err(), "a refused token is not bypassed");
        let header = Credentials {
            trusted: Some(" bob "),
            ..Credentials::default()
        };
        assert_eq!(who(&auth, header).unwrap(), "bob");
        let blank = Credentials {
            api_key: Some("  "),
            bearer: Some(""),
            trusted: Some(" "),
        };
        assert!(who(&auth, blank).is_err());

        let keys_only = AuthConfig::new(None, Some("ka=alice"), None).unwrap();
        let header_only = Credentials {
            trusted: Some("bob"),
            ..Credentials::default()
        };
        assert!(
            who(&keys_only, header_only).is_err(),
            "no trusted header unless one is configured"
        );
    }
}
