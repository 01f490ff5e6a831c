//! The web chat page: `/`, `/app.css`, its JavaScript modules under `/js/{file}` and the
//! libraries it vendors (Markdown rendering, HTML sanitizing, graph drawing) under
//! `/vendor/{file}`; and the run inspector, `/inspect?thread=<id>[&checkpoint=<id>]` with
//! `/inspect.css` (a thread's graph with the path its runs took, the timeline of its steps,
//! the state at each checkpoint, and forks and state edits from any checkpoint; its modules
//! are the `inspect*.js` of `/js/`).
//!
//! The files live in the top-level `web/` folder and are embedded in the binary, so
//! `palgraph serve` is self-contained. The page is plain HTML, CSS and native JavaScript
//! modules (no framework, no build step); it talks to the chat contract ([`super::chat`])
//! with `fetch` and reads the event streams itself.
//!
//! A new file in `web/js/` is served once it is listed in `JS` (a test checks that every
//! file of the folder is).
//!
//! Extensions add to the page with [`WebModule`]s ([`modules`]): their files are served at
//! `/ext/{id}/{file}` and the index names their entry modules, which the page imports at
//! start; `/js/page.js` is the page's interface for them.

mod modules;

use std::sync::Arc;

pub(crate) use modules::Page;
pub use modules::{WebModule, WebModuleError};

use aide::axum::routing::get_with;

use super::openapi::text_response;
use aide::axum::ApiRouter;
use aide::transform::TransformOperation;
use axum::extract::Path;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

const INDEX_HTML: &str = include_str!("../../../web/index.html");
const APP_CSS: &str = include_str!("../../../web/app.css");
const INSPECT_HTML: &str = include_str!("../../../web/inspect.html");
const INSPECT_CSS: &str = include_str!("../../../web/inspect.css");

/// `(name, content)` of each embedded file of `web/<dir>/`.
macro_rules! embed {
    ($dir:literal: $($name:literal),+ $(,)?) => {
        &[$(($name, include_str!(concat!("../../../web/", $dir, "/", $name)))),+]
    };
}

/// The page's modules, `web/js/*.js`, served at `/js/{name}`.
const JS: &[(&str, &str)] = embed!("js":
    "answer.js",
    "api.js",
    "clipboard.js",
    "composer.js",
    "config.js",
    "contract.js",
    "conversation.js",
    "dialogs.js",
    "dom.js",
    "editor.js",
    "el.js",
    "errors.js",
    "extensions.js",
    "events.js",
    "graphs.js",
    "highlight.js",
    "inspect-actions.js",
    "inspect-detail.js",
    "inspect-graph.js",
    "inspect-json.js",
    "inspect-load.js",
    "inspect-steps.js",
    "inspect-timeline.js",
    "inspect.js",
    "live.js",
    "main.js",
    "markdown.js",
    "mentions.js",
    "messages.js",
    "notice.js",
    "notices.js",
    "page.js",
    "prompt.js",
    "reasoning.js",
    "runs.js",
    "sse.js",
    "state.js",
    "stop.js",
    "stream.js",
    "threadlist.js",
    "threads.js",
    "titles.js",
    "turn.js",
);

/// Third-party files the page imports (`web/vendor/`, see its README: versions, licenses),
/// served at `/vendor/{name}` with their license files.
const VENDOR: &[(&str, &str)] = embed!("vendor":
    "DOMPurify.LICENSE",
    "DOMPurify.LICENSE-MPL",
    "README.md",
    "marked.LICENSE.md",
    "marked.esm.js",
    "mermaid.LICENSE",
    "mermaid.min.js",
    "purify.es.mjs",
);

/// What the page may load and call: only this origin.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The inspector's policy: the page's, except that styles may be inline (Mermaid writes the
/// graph's SVG with a `<style>` element and style attributes). Scripts stay this origin's.
const INSPECT_CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The routes of the page and its files (merged into the API router).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(page: Arc<Page>) -> ApiRouter<S> {
    fn doc<'a>(
        o: TransformOperation<'a>,
        summary: &str,
        content_types: &[&str],
    ) -> TransformOperation<'a> {
        text_response(o.summary(summary).tag("page"), content_types, summary)
    }
    ApiRouter::new()
        .api_route(
            "/",
            get_with(
                {
                    let page = page.clone();
                    move || index(page)
                },
                |o| doc(o, "The chat page (HTML)", &["text/html; charset=utf-8"]),
            ),
        )
        .api_route(
            "/app.css",
            get_with(app_css, |o| {
                doc(o, "The page's styles", &["text/css; charset=utf-8"])
            }),
        )
        .api_route(
            "/inspect",
            get_with(inspect, |o| {
                doc(o, "The run inspector (HTML)", &["text/html; charset=utf-8"])
            }),
        )
        .api_route(
            "/inspect.css",
            get_with(inspect_css, |o| {
                doc(
                    o,
                    "The run inspector's styles",
                    &["text/css; charset=utf-8"],
                )
            }),
        )
        .api_route(
            "/js/{file}",
            get_with(js, |o| {
                doc(o, "One of the page's JavaScript modules", &[JS_TYPE])
            }),
        )
        .api_route(
            "/ext/{module}/{file}",
            get_with(
                move |Path(ModuleFile { module, file }): Path<ModuleFile>| {
                    extension_file(page, module, file)
                },
                |o| {
                    doc(
                        o,
                        "A file of an extension's page module",
                        &[JS_TYPE, CSS_TYPE],
                    )
                },
            ),
        )
        .api_route(
            "/vendor/{file}",
            get_with(vendor, |o| {
                doc(
                    o,
                    "A library the page vendors, or its license",
                    &[JS_TYPE, MARKDOWN_TYPE, TEXT_TYPE],
                )
            }),
        )
}

const JS_TYPE: &str = "text/javascript; charset=utf-8";
const CSS_TYPE: &str = "text/css; charset=utf-8";
const MARKDOWN_TYPE: &str = "text/markdown; charset=utf-8";
const TEXT_TYPE: &str = "text/plain; charset=utf-8";

/// The path of an embedded file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FilePath {
    /// The file's name.
    file: String,
}

fn asset(body: impl IntoResponse, content_type: &'static str) -> Response {
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

/// The path of an extension module's file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ModuleFile {
    /// The module's id.
    module: String,
    /// The file's name.
    file: String,
}

/// The embedded file `name` of `table`, or 404.
fn lookup(table: &[(&str, &'static str)], dir: &str, name: &str) -> Result<&'static str, ApiError> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, body)| *body)
        .ok_or_else(|| ApiError::NotFound(format!("`/{dir}/{name}`")))
}

/// An HTML page under the content security policy `csp`.
fn html(body: impl IntoResponse, csp: &'static str) -> Response {
    let mut resp = asset(body, "text/html; charset=utf-8");
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// `GET /`: the chat page (naming its extensions' modules).
async fn index(page: Arc<Page>) -> Response {
    html(page.index().to_string(), CSP)
}

/// `GET /ext/{module}/{file}`: a file of an extension's module.
async fn extension_file(
    page: Arc<Page>,
    module: String,
    file: String,
) -> Result<Response, ApiError> {
    let (body, content_type) = page
        .file(&module, &file)
        .ok_or_else(|| ApiError::NotFound(format!("`/ext/{module}/{file}`")))?;
    Ok(asset(body, content_type))
}

/// `GET /inspect`: the run inspector (its thread is in the query: `?thread=<id>`).
async fn inspect() -> Response {
    html(INSPECT_HTML, INSPECT_CSP)
}

/// `GET /inspect.css`: the inspector's styles.
async fn inspect_css() -> Response {
    asset(INSPECT_CSS, "text/css; charset=utf-8")
}

/// `GET /app.css`: the page's styles.
async fn app_css() -> Response {
    asset(APP_CSS, CSS_TYPE)
}

/// `GET /js/{file}`: one of the page's modules.
async fn js(Path(FilePath { file }): Path<FilePath>) -> Result<Response, ApiError> {
    let body = lookup(JS, "js", &file)?;
    Ok(asset(body, JS_TYPE))
}

/// `GET /vendor/{file}`: a vendored library or its license.
async fn vendor(Path(FilePath { file }): Path<FilePath>) -> Result<Response, ApiError> {
    let body = lookup(VENDOR, "vendor", &file)?;
    let content_type = if file.ends_with(".js") || file.ends_with(".mjs") {
        JS_TYPE
    } else if file.ends_with(".md") {
        MARKDOWN_TYPE
    } else {
        TEXT_TYPE
    };
    Ok(asset(body, content_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_of(dir: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("web")
            .join(dir);
        let mut names: Vec<String> = std::fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn names(table: &[(&str, &str)]) -> Vec<String> {
        let mut names: Vec<String> = table.iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn every_file_of_web_js_and_web_vendor_is_embedded() {
        assert_eq!(
            names(JS),
            files_of("js"),
            "list each file of web/js in `JS`"
        );
        assert_eq!(
            names(VENDOR),
            files_of("vendor"),
            "list each file of web/vendor in `VENDOR`"
        );
    }

    #[test]
    fn every_relative_import_names_an_embedded_module() {
        for (name, body) in JS {
            for (dir, table) in [("./", JS), ("../vendor/", VENDOR)] {
                let from = format!("from '{dir}");
                for (at, _) in body.match_indices(&from) {
                    let rest = &body[at + from.len()..];
                    let target = rest.split_once('\'').map_or(rest, |(t, _)| t);
                    assert!(
                        table.iter().any(|(n, _)| *n == target),
                        "{name} imports {dir}{target}, which is not embedded"
                    );
                }
            }
        }
    }
}
