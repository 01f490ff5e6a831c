//! Documents, per user: `POST /documents` (JSON `{title, content}` or a multipart upload of
//! `.txt` / `.md` files, titled by their first `#` heading, else by their file name), `GET /documents`, `GET /documents/{id}`, `DELETE /documents/{id}`.
//! Another user's document is 404.

use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use palgraph_nodes::documents::{Document, DocumentError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::auth::User;
use super::error::{ApiError, ApiResult};
use super::time::iso;
use super::AppState;

/// A new document.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct NewDocument {
    /// Its title.
    pub title: String,
    /// Its text (plain text or Markdown).
    pub content: String,
}

impl From<DocumentError> for ApiError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Invalid(m) => ApiError::Invalid(m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

fn full(d: &Document) -> Value {
    json!({"id": d.id, "title": d.title, "content": d.content, "created_at": iso(d.created_at_ms), "size": d.content.len()})
}

fn summary(d: &Document) -> Value {
    json!({"id": d.id, "title": d.title, "created_at": iso(d.created_at_ms), "size": d.content.len()})
}

fn store(
    state: &AppState,
) -> ApiResult<&std::sync::Arc<dyn palgraph_nodes::documents::DocumentStore>> {
    state
        .docs
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("the document store".into()))
}

/// The uploaded files of a multipart body: (title, content) per `.txt` / `.md` file.
async fn uploads(mut form: Multipart) -> ApiResult<Vec<NewDocument>> {
    let mut out = Vec::new();
    let mut title: Option<String> = None;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| ApiError::BadRequest(format!("bad multipart body: {e}")))?
    {
        let name = field.name().unwrap_or_default().to_string();
        if name == "title" {
            title = Some(
                field
                    .text()
                    .await
                    .map_err(|e| ApiError::BadRequest(e.to_string()))?,
            );
            continue;
        }
        let Some(file_name) = field.file_name().map(str::to_string) else {
            continue;
        };
        let lower = file_name.to_lowercase();
        if !(lower.ends_with(".txt") || lower.ends_with(".md") || lower.ends_with(".markdown")) {
            return Err(ApiError::Invalid(format!(
                "`{file_name}`: only .txt and .md files can be uploaded"
            )));
        }
        let bytes = field.bytes().await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge
            } else {
                ApiError::BadRequest(format!("could not read `{file_name}`: {e}"))
            }
        })?;
        let content = String::from_utf8(Vec::from(bytes))
            .map_err(|_| ApiError::Invalid(format!("`{file_name}` is not UTF-8 text")))?;
        if content.contains('\0') {
            return Err(ApiError::Invalid(format!(
                "`{file_name}` holds NUL characters; upload plain text"
            )));
        }
        // The first `# Heading` is the title (and leaves the body); else the file name.
        let (title, content) = palgraph_nodes::documents::title_and_body(&file_name, &content);
        out.push(NewDocument { title, content });
    }
    if let (Some(t), 1) = (title, out.len()) {
        out[0].title = t;
    }
    if out.is_empty() {
        return Err(ApiError::Invalid(
            "no .txt or .md file in the upload (field `file`)".into(),
        ));
    }
    Ok(out)
}

/// `POST /documents`.
pub async fn create(
    State(state): State<AppState>,
    user: User,
    req: Request,
) -> ApiResult<impl IntoResponse> {
    let store = store(&state)?.clone();
    let is_multipart = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let docs = if is_multipart {
        let form = Multipart::from_request(req, &state)
            .await
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        uploads(form).await?
    } else {
        let super::extract::ApiJson(d) =
            super::extract::ApiJson::<NewDocument>::from_request(req, &state).await?;
        vec![d]
    };
    // The answer describes what was stored without echoing the content back (a large
    // upload would cost its size again); `GET /documents/{id}` returns the text.
    let mut created = Vec::new();
    for d in docs {
        let doc = store.create(&user.id, &d.title, &d.content).await?;
        drop(d);
        created.push(summary(&doc));
    }
    let body = if created.len() == 1 {
        created.swap_remove(0)
    } else {
        Value::Array(created)
    };
    Ok((StatusCode::CREATED, Json(body)))
}

/// `GET /documents`.
pub async fn list(State(state): State<AppState>, user: User) -> ApiResult<Json<Value>> {
    let docs = store(&state)?.list(&user.id).await?;
    Ok(Json(Value::Array(docs.iter().map(summary).collect())))
}

/// `GET /documents/{id}`.
pub async fn get(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    store(&state)?
        .get(&user.id, &id)
        .await?
        .map(|d| Json(full(&d)))
        .ok_or_else(|| ApiError::NotFound(format!("document `{id}`")))
}

/// `DELETE /documents/{id}`.
pub async fn delete(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    if store(&state)?.delete(&user.id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("document `{id}`")))
    }
}
