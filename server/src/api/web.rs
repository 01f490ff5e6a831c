//! The web chat page: `/`, `/app.js`, `/app.css`.
//!
//! The files live in the top-level `web/` folder and are embedded in the binary, so
//! `palgraph serve` is self-contained. The page is plain HTML, CSS and JavaScript (no
//! framework, no build step); it talks to the chat contract ([`super::chat`]) with `fetch`
//! and reads the event streams itself.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../../../web/index.html");
const APP_JS: &str = include_str!("../../../web/app.js");
const APP_CSS: &str = include_str!("../../../web/app.css");

/// What the page may load and call: only this origin.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidate on every load so a new binary's page is picked up at once.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `GET /`: the chat page.
pub async fn index() -> Response {
    let mut resp = asset(INDEX_HTML, "text/html; charset=utf-8");
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// `GET /app.js`: the page's script.
pub async fn app_js() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

/// `GET /app.css`: the page's styles.
pub async fn app_css() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}
