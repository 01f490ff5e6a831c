//! PalAssist's document sets over HTTP, per user: named folders of the caller's documents,
//! which a chat request tags (`tagged_set_ids`, or a set mention) to put every document of
//! the set in scope.
//!
//! - `POST /document-sets` `{name, document_ids?}` → 201 with the set;
//! - `GET /document-sets` → the caller's sets, oldest first;
//! - `GET /document-sets/{set_id}` → one set;
//! - `PATCH /document-sets/{set_id}` `{name}` → the renamed set;
//! - `POST /document-sets/{set_id}/documents` `{document_ids}` → the set, with them added;
//! - `DELETE /document-sets/{set_id}/documents/{document_id}` → 204;
//! - `DELETE /document-sets/{set_id}` → 204 (its documents stay).
//!
//! A set is shown as `{id, name, documents: [{id, title}], document_count, created_at,
//! updated_at}`. Another user's set, or an unknown one, is a 404; an id that is not a UUID
//! a 422; a name the caller already uses a 409 (`exists`); a document that is not the
//! caller's, an empty or over-long name, and going over the limits (100 sets, 500
//! documents a set, names of 100 characters) a 422. Deleting a document takes it out of
//! its sets.

use std::sync::Arc;

use palgraph_nodes::documents::{is_id, DocumentError, DocumentSet, DocumentStore, Removal};
use palgraph_nodes::DocRef;
use palgraph_server::aide::axum::routing::{delete_with, get_with, post_with};
use palgraph_server::aide::axum::ApiRouter;
use palgraph_server::axum::extract::Path;
use palgraph_server::axum::http::StatusCode;
use palgraph_server::axum::{Extension, Json};
use palgraph_server::{iso, ApiError, ApiJson, ApiResult, AppState, User};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A new document set.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct NewDocumentSet {
    /// Its name: 1 to 100 characters, unique among the caller's sets.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
    /// The caller's documents it starts with (each once; at most 500).
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub document_ids: Vec<String>,
}

/// A set's new name.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct RenameDocumentSet {
    /// Its name: 1 to 100 characters, unique among the caller's sets.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

/// Documents to add to a set.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AddToDocumentSet {
    /// The caller's documents to add (at least one; those already in the set stay once).
    #[schemars(length(min = 1, max = 500))]
    pub document_ids: Vec<String>,
}

/// A document set.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DocumentSetOut {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its documents, oldest first.
    pub documents: Vec<DocRef>,
    /// How many documents it holds.
    pub document_count: usize,
    /// When it was created.
    pub created_at: String,
    /// When it was last renamed or its documents changed.
    pub updated_at: String,
}

/// The path of a set.
#[derive(Deserialize, JsonSchema)]
pub struct SetPath {
    /// The set's id.
    #[schemars(extend("format" = "uuid"))]
    set_id: String,
}

/// The path of a document in a set.
#[derive(Deserialize, JsonSchema)]
pub struct SetDocumentPath {
    /// The set's id.
    #[schemars(extend("format" = "uuid"))]
    set_id: String,
    /// The document's id.
    #[schemars(extend("format" = "uuid"))]
    document_id: String,
}

type Store = Extension<Arc<dyn DocumentStore>>;

fn out(s: DocumentSet) -> DocumentSetOut {
    DocumentSetOut {
        id: s.id,
        name: s.name,
        document_count: s.documents.len(),
        documents: s.documents,
        created_at: iso(s.created_at_ms),
        updated_at: iso(s.updated_at_ms),
    }
}

fn store_error(e: DocumentError) -> ApiError {
    match e {
        DocumentError::Invalid(m) => ApiError::Invalid(m),
        DocumentError::Conflict(message) => ApiError::Conflict {
            code: "exists",
            message,
        },
        DocumentError::Storage(s) if palgraph::db::is_transient(&s) => {
            ApiError::Unavailable("the database is unreachable for the moment".into())
        }
        other => ApiError::internal(other),
    }
}

/// A path id, which must be a UUID (422 otherwise).
fn uuid(what: &str, id: &str) -> ApiResult<()> {
    if is_id(id) {
        Ok(())
    } else {
        Err(ApiError::Invalid(format!(
            "`{}` is not a {what} id (a UUID)",
            id.escape_debug()
        )))
    }
}

fn no_set(id: &str) -> ApiError {
    ApiError::NotFound(format!("document set `{id}`"))
}

/// `POST /document-sets`.
async fn create(
    user: User,
    Extension(store): Store,
    ApiJson(body): ApiJson<NewDocumentSet>,
) -> ApiResult<(StatusCode, Json<DocumentSetOut>)> {
    let set = store
        .create_set(&user.id, &body.name, &body.document_ids)
        .await
        .map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(out(set))))
}

/// `GET /document-sets`.
async fn list(user: User, Extension(store): Store) -> ApiResult<Json<Vec<DocumentSetOut>>> {
    let sets = store.sets(&user.id).await.map_err(store_error)?;
    Ok(Json(sets.into_iter().map(out).collect()))
}

/// `GET /document-sets/{set_id}`.
async fn get(
    user: User,
    Extension(store): Store,
    Path(SetPath { set_id }): Path<SetPath>,
) -> ApiResult<Json<DocumentSetOut>> {
    uuid("set", &set_id)?;
    let set = store.set(&user.id, &set_id).await.map_err(store_error)?;
    set.map(|s| Json(out(s))).ok_or_else(|| no_set(&set_id))
}

/// `PATCH /document-sets/{set_id}`.
async fn rename(
    user: User,
    Extension(store): Store,
    Path(SetPath { set_id }): Path<SetPath>,
    ApiJson(body): ApiJson<RenameDocumentSet>,
) -> ApiResult<Json<DocumentSetOut>> {
    uuid("set", &set_id)?;
    let set = store
        .rename_set(&user.id, &set_id, &body.name)
        .await
        .map_err(store_error)?;
    set.map(|s| Json(out(s))).ok_or_else(|| no_set(&set_id))
}

/// `POST /document-sets/{set_id}/documents`.
async fn add(
    user: User,
    Extension(store): Store,
    Path(SetPath { set_id }): Path<SetPath>,
    ApiJson(body): ApiJson<AddToDocumentSet>,
) -> ApiResult<Json<DocumentSetOut>> {
    uuid("set", &set_id)?;
    let set = store
        .add_to_set(&user.id, &set_id, &body.document_ids)
        .await
        .map_err(store_error)?;
    set.map(|s| Json(out(s))).ok_or_else(|| no_set(&set_id))
}

/// `DELETE /document-sets/{set_id}/documents/{document_id}`.
async fn remove(
    user: User,
    Extension(store): Store,
    Path(SetDocumentPath {
        set_id,
        document_id,
    }): Path<SetDocumentPath>,
) -> ApiResult<StatusCode> {
    uuid("set", &set_id)?;
    uuid("document", &document_id)?;
    match store
        .remove_from_set(&user.id, &set_id, &document_id)
        .await
        .map_err(store_error)?
    {
        Removal::Removed => Ok(StatusCode::NO_CONTENT),
        Removal::NotInSet => Err(ApiError::NotFound(format!(
            "document `{document_id}` in document set `{set_id}`"
        ))),
        Removal::NoSuchSet => Err(no_set(&set_id)),
    }
}

/// `DELETE /document-sets/{set_id}`.
async fn delete(
    user: User,
    Extension(store): Store,
    Path(SetPath { set_id }): Path<SetPath>,
) -> ApiResult<StatusCode> {
    uuid("set", &set_id)?;
    if store
        .delete_set(&user.id, &set_id)
        .await
        .map_err(store_error)?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(no_set(&set_id))
    }
}

/// The document-set routes, on `store` (the server's document store).
pub fn routes(store: Arc<dyn DocumentStore>) -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/document-sets",
            post_with(create, |o| {
                o.summary("Make a document set (a named folder of your documents)")
                    .tag("documents")
            })
            .get_with(list, |o| {
                o.summary("The caller's document sets").tag("documents")
            }),
        )
        .api_route(
            "/document-sets/{set_id}",
            get_with(get, |o| {
                o.summary("A document set with its documents")
                    .tag("documents")
            })
            .patch_with(rename, |o| {
                o.summary("Rename a document set").tag("documents")
            })
            .delete_with(delete, |o| {
                o.summary("Delete a document set (its documents stay)")
                    .tag("documents")
            }),
        )
        .api_route(
            "/document-sets/{set_id}/documents",
            post_with(add, |o| {
                o.summary("Add documents to a document set")
                    .tag("documents")
            }),
        )
        .api_route(
            "/document-sets/{set_id}/documents/{document_id}",
            delete_with(remove, |o| {
                o.summary("Take a document out of a document set (the document stays)")
                    .tag("documents")
            }),
        )
        .layer(Extension(store))
}
