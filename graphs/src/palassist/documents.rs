//! PalAssist's documents over HTTP, per user: `POST /documents` (JSON `{title, content}`,
//! or a multipart upload of `.txt` / `.md` files titled by their first `#` heading, else by
//! their file name), `GET /documents`, `GET /documents/{id}`, `DELETE /documents/{id}`
//! (which also takes the document out of its sets). Another user's document is a 404. The
//! document sets' routes are [`super::document_sets`]. Registered with PalAssist as a server extension, which
//! also gives the local user of the auth-less mode the sample documents.
//!
//! Each user's documents are bounded ([`Limits`]: `PALGRAPH_MAX_DOCUMENT_BYTES`, 8 MiB of
//! text a document by default, and `PALGRAPH_MAX_DOCUMENTS`, 1,000 documents a user): an
//! upload with a text over the size is a 413 (`too_large`), one that would take the user
//! past the count a 409 (`too_many_documents`), and either stores none of its documents.
//! A document is analysed as it is stored, so the upload answers once its analysis is
//! done (about half a second of CPU a MiB) and no chat turn analyses it again.

use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use palgraph_nodes::documents::{
    seed_samples, Document, DocumentError, DocumentStore, Limits, PostgresDocumentStore,
    SqliteDocumentStore, MIGRATIONS,
};
use palgraph_server::aide::axum::routing::{get_with, post_with};
use palgraph_server::aide::axum::ApiRouter;
use palgraph_server::aide::openapi::{
    MediaType, Operation, ReferenceOr, RequestBody, SchemaObject,
};
use palgraph_server::aide::OperationInput;
use palgraph_server::axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Path, Request};
use palgraph_server::axum::http::{header, StatusCode};
use palgraph_server::axum::{Extension, Json};
use palgraph_server::{
    iso, ApiError, ApiJson, ApiResult, AppState, BoxError, Database, ServeContext, User,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A new document.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct NewDocument {
    /// Its title.
    pub title: String,
    /// Its text (plain text or Markdown).
    pub content: String,
}

/// A document without its text.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DocumentSummary {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it was created.
    pub created_at: String,
    /// Its size in bytes.
    pub size: usize,
}

/// A document with its text.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DocumentOut {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its text.
    pub content: String,
    /// When it was created.
    pub created_at: String,
    /// Its size in bytes.
    pub size: usize,
}

/// What `POST /documents` made: one document, or one per uploaded file.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Created {
    /// A single document.
    One(DocumentSummary),
    /// Several uploaded files.
    Many(Vec<DocumentSummary>),
}

/// The path of a document.
#[derive(Deserialize, JsonSchema)]
pub struct DocumentPath {
    /// The document's id.
    id: String,
}

fn summary(d: &Document) -> DocumentSummary {
    DocumentSummary {
        id: d.id.clone(),
        title: d.title.clone(),
        created_at: iso(d.created_at_ms),
        size: d.content.len(),
    }
}

fn store_error(e: DocumentError) -> ApiError {
    match e {
        DocumentError::Invalid(m) => ApiError::Invalid(m),
        DocumentError::Conflict(message) => ApiError::Conflict {
            code: "exists",
            message,
        },
        DocumentError::TooLarge(_) => ApiError::TooLarge,
        DocumentError::TooMany(message) => ApiError::Conflict {
            code: TOO_MANY,
            message,
        },
        other => ApiError::internal(other),
    }
}

type Store = Extension<Arc<dyn DocumentStore>>;

/// A document upload: a JSON document, or a multipart form of `.txt` / `.md` files (an
/// optional `title` field names a single file's document).
pub struct Upload(Vec<NewDocument>);

impl<S: Send + Sync> FromRequest<S> for Upload {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_multipart = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("multipart/form-data"));
        if !is_multipart {
            let ApiJson(d) = ApiJson::<NewDocument>::from_request(req, state).await?;
            return Ok(Upload(vec![d]));
        }
        let form = Multipart::from_request(req, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        uploads(form).await.map(Upload)
    }
}

impl OperationInput for Upload {
    fn operation_input(
        ctx: &mut palgraph_server::aide::generate::GenContext,
        operation: &mut Operation,
    ) {
        let json = ctx.schema.subschema_for::<NewDocument>();
        let form = schemars::json_schema!({
            "type": "object",
            "properties": {
                "file": {"type": "string", "format": "binary", "description": "A .txt or .md file (repeatable)"},
                "title": {"type": "string", "description": "The title of a single file's document"}
            },
            "required": ["file"]
        });
        let media = |schema| MediaType {
            schema: Some(SchemaObject {
                json_schema: schema,
                example: None,
                external_docs: None,
            }),
            ..Default::default()
        };
        operation.request_body = Some(ReferenceOr::Item(RequestBody {
            description: Some("A document as JSON, or files as a multipart form".into()),
            content: IndexMap::from_iter([
                ("application/json".into(), media(json)),
                ("multipart/form-data".into(), media(form)),
            ]),
            required: true,
            extensions: IndexMap::default(),
        }));
    }
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

/// The code of the 409 for an upload past the user's document count.
const TOO_MANY: &str = "too_many_documents";

/// `POST /documents`: the answer describes what was stored without echoing the content
/// back (a large upload would cost its size again); `GET /documents/{id}` returns the text.
/// An upload over the limits ([`Limits`]) is refused whole before anything is stored.
async fn create(
    user: User,
    Extension(store): Store,
    Upload(docs): Upload,
) -> ApiResult<(StatusCode, Json<Created>)> {
    let limits = store.limits();
    if docs.iter().any(|d| d.content.len() > limits.max_bytes) {
        return Err(ApiError::TooLarge);
    }
    let have = store.catalog(&user.id).await.map_err(store_error)?.len();
    if have + docs.len() > limits.max_documents {
        return Err(ApiError::Conflict {
            code: TOO_MANY,
            message: format!(
                "you have {have} documents and the upload holds {}: one user may keep at most {}",
                docs.len(),
                limits.max_documents
            ),
        });
    }
    let mut created = Vec::new();
    for d in docs {
        let doc = store
            .create(&user.id, &d.title, &d.content)
            .await
            .map_err(store_error)?;
        drop(d);
        created.push(summary(&doc));
    }
    let created = if created.len() == 1 {
        Created::One(created.swap_remove(0))
    } else {
        Created::Many(created)
    };
    Ok((StatusCode::CREATED, Json(created)))
}

/// `GET /documents`: the library without its texts.
async fn list(user: User, Extension(store): Store) -> ApiResult<Json<Vec<DocumentSummary>>> {
    let docs = store.catalog(&user.id).await.map_err(store_error)?;
    Ok(Json(
        docs.into_iter()
            .map(|d| DocumentSummary {
                created_at: iso(d.created_at_ms),
                id: d.id,
                title: d.title,
                size: d.size,
            })
            .collect(),
    ))
}

/// `GET /documents/{id}`.
async fn get(
    user: User,
    Extension(store): Store,
    Path(DocumentPath { id }): Path<DocumentPath>,
) -> ApiResult<Json<DocumentOut>> {
    let d = store
        .get(&user.id, &id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::NotFound(format!("document `{id}`")))?;
    Ok(Json(DocumentOut {
        id: d.id.clone(),
        title: d.title.clone(),
        created_at: iso(d.created_at_ms),
        size: d.content.len(),
        content: d.content,
    }))
}

/// `DELETE /documents/{id}`.
async fn delete(
    user: User,
    Extension(store): Store,
    Path(DocumentPath { id }): Path<DocumentPath>,
) -> ApiResult<StatusCode> {
    if store.delete(&user.id, &id).await.map_err(store_error)? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("document `{id}`")))
    }
}

/// The most a document upload may carry: the default content limit and room for the form.
pub const UPLOAD_LIMIT: usize = upload_limit(palgraph_nodes::documents::MAX_CONTENT_BYTES);

/// The most an upload may carry for documents of at most `max_bytes` of text: that and
/// room for the form (several files of an upload together are within it too).
pub const fn upload_limit(max_bytes: usize) -> usize {
    max_bytes.saturating_add(64 * 1024)
}

/// The document store on the server's database (its tables made by [`Documents`]' start).
/// On Postgres it keeps each user's library between chat turns, told of every change by
/// the database ([`PostgresDocumentStore::with_change_feed`]): a turn whose user's documents
/// did not change since the last one reads nothing.
pub fn store_on(db: &Database) -> Arc<dyn DocumentStore> {
    store_with_limits(db, Limits::default())
}

/// [`store_on`], with these limits on each user's documents.
pub fn store_with_limits(db: &Database, limits: Limits) -> Arc<dyn DocumentStore> {
    match db {
        Database::Sqlite(p) => Arc::new(SqliteDocumentStore::new(p.clone()).with_limits(limits)),
        Database::Postgres(p) => Arc::new(
            PostgresDocumentStore::new(p.clone())
                .with_change_feed()
                .with_limits(limits),
        ),
        _ => Arc::new(palgraph_nodes::documents::MemoryDocumentStore::new().with_limits(limits)),
    }
}

/// PalAssist's documents as a server extension (on the server's database). Its routes, the
/// samples it seeds and the graph ([`Documents::store`]) share one store, so a change made
/// through the routes moves the library the graph keeps between turns before the route
/// answers.
#[derive(Clone, Default)]
pub struct Documents {
    store: Arc<std::sync::OnceLock<Arc<dyn DocumentStore>>>,
    limits: Limits,
}

impl Documents {
    /// The extension, with these limits on each user's documents.
    pub fn with_limits(limits: Limits) -> Self {
        Documents {
            store: Arc::default(),
            limits,
        }
    }

    /// The store on `db`, made on first use ([`store_with_limits`]) and shared from then on.
    pub fn store(&self, db: &Database) -> Arc<dyn DocumentStore> {
        self.store
            .get_or_init(|| store_with_limits(db, self.limits))
            .clone()
    }
}

impl std::fmt::Debug for Documents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Documents")
            .field("store_made", &self.store.get().is_some())
            .finish()
    }
}

#[async_trait]
impl palgraph_server::Extension for Documents {
    fn name(&self) -> &str {
        "palassist documents"
    }

    async fn start(&self, ctx: &ServeContext) -> Result<(), BoxError> {
        match &ctx.database {
            Database::Sqlite(p) => {
                MIGRATIONS.apply_sqlite(p).await?;
            }
            Database::Postgres(p) => {
                MIGRATIONS.apply_postgres(p).await?;
            }
            _ => {}
        }
        if let Some(user) = ctx.local_user {
            let added = seed_samples(self.store(&ctx.database).as_ref(), user).await?;
            if added > 0 {
                tracing::info!(
                    documents = added,
                    "added the sample documents for the local user"
                );
            }
        }
        Ok(())
    }

    fn web(&self) -> Option<palgraph_server::WebModule> {
        Some(super::web::module())
    }

    fn routes(&self, ctx: &ServeContext) -> ApiRouter<AppState> {
        let store = self.store(&ctx.database);
        ApiRouter::new()
            .api_route(
                "/documents",
                post_with(create, |o| {
                    o.summary("Add documents (JSON, or .txt / .md files)")
                        .description(
                            "Each document is analysed as it is stored. A text over the server's \
                             `PALGRAPH_MAX_DOCUMENT_BYTES` (8 MiB by default) is refused with 413 \
                             `too_large`, an upload that would take the caller past \
                             `PALGRAPH_MAX_DOCUMENTS` (1,000 by default) with 409 \
                             `too_many_documents`; either stores nothing.",
                        )
                        .tag("documents")
                })
                .layer(DefaultBodyLimit::max(upload_limit(self.limits.max_bytes)))
                .get_with(list, |o| {
                    o.summary("The caller's documents").tag("documents")
                }),
            )
            .api_route(
                "/documents/{id}",
                get_with(get, |o| {
                    o.summary("A document with its text").tag("documents")
                })
                .delete_with(delete, |o| o.summary("Delete a document").tag("documents")),
            )
            .layer(Extension(store.clone()))
            .merge(super::document_sets::routes(store))
    }
}
