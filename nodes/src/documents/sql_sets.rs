//! [`SqlDocumentStore`]'s document sets: the `document_sets` and `document_set_members`
//! tables, on SQLite and Postgres alike.
//!
//! Every change runs in one transaction whose first statement writes the set's row (or
//! inserts it): on Postgres that row lock puts concurrent changes to one set one after the
//! other, and on SQLite the first write takes the database's write lock (waiting out the
//! pool's busy timeout), so no transaction reads a state another is changing. A document
//! deleted while it is being added either goes first (the add then finds it missing, or
//! on Postgres fails its foreign key) or after (and takes its membership with it).

use std::collections::BTreeMap;

use async_trait::async_trait;
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};

use super::sets::{
    is_id, name_taken, not_yours, set_document_ids, set_name, too_many_documents, too_many_sets,
};
use super::{
    now_ms, DocumentError, DocumentSet, DocumentSetStore, Removal, SqlDocumentStore, MAX_SETS,
    MAX_SET_DOCUMENTS,
};
use crate::state::DocRef;

/// A set's row: id, name, created, updated.
type SetRow = (String, String, i64, i64);

/// Reads the owner's sets (all, or the one of `only`) with their documents.
async fn load<DB>(
    conn: &mut DB::Connection,
    owner: &str,
    only: Option<&str>,
) -> Result<Vec<DocumentSet>, sqlx::Error>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'r> SetRow: FromRow<'r, DB::Row>,
    for<'r> (String, String, String): FromRow<'r, DB::Row>,
{
    let mut q = QueryBuilder::<DB>::new(
        "SELECT id, name, created_at_ms, updated_at_ms FROM document_sets WHERE owner = ",
    );
    q.push_bind(owner);
    if let Some(id) = only {
        q.push(" AND id = ").push_bind(id);
    }
    q.push(" ORDER BY created_at_ms, id");
    let rows: Vec<SetRow> = q.build_query_as().fetch_all(&mut *conn).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = QueryBuilder::<DB>::new(
        "SELECT m.set_id, d.id, d.title FROM document_set_members m \
         JOIN document_sets s ON s.id = m.set_id \
         JOIN documents d ON d.id = m.document_id \
         WHERE s.owner = ",
    );
    q.push_bind(owner).push(" AND d.owner = ").push_bind(owner);
    if let Some(id) = only {
        q.push(" AND s.id = ").push_bind(id);
    }
    q.push(" ORDER BY d.created_at_ms, d.id");
    let members: Vec<(String, String, String)> = q.build_query_as().fetch_all(&mut *conn).await?;
    let mut by_set: BTreeMap<String, Vec<DocRef>> = BTreeMap::new();
    for (set_id, id, title) in members {
        by_set.entry(set_id).or_default().push(DocRef { id, title });
    }
    Ok(rows
        .into_iter()
        .map(|(id, name, created_at_ms, updated_at_ms)| DocumentSet {
            documents: by_set.remove(&id).unwrap_or_default(),
            id,
            owner: owner.to_string(),
            name,
            created_at_ms,
            updated_at_ms,
        })
        .collect())
}

/// Maps the database's refusals to what they mean for a set.
fn refused(e: sqlx::Error, name: &str) -> DocumentError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => name_taken(name),
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => DocumentError::Invalid(
            "a document was deleted while it was being added; nothing was changed".into(),
        ),
        _ => DocumentError::Storage(e),
    }
}

/// Adds `ids` (checked to be the owner's documents) to set `set_id`, inside the caller's
/// transaction, which has written the set's row.
async fn insert_members<DB>(
    conn: &mut DB::Connection,
    owner: &str,
    set_id: &str,
    ids: &[String],
    now: i64,
) -> Result<(), DocumentError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'r> (String,): FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
{
    if ids.is_empty() {
        return Ok(());
    }
    let mut q = QueryBuilder::<DB>::new("SELECT id FROM documents WHERE owner = ");
    q.push_bind(owner).push(" AND id IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id.as_str());
    }
    q.push(")");
    let found: Vec<(String,)> = q.build_query_as().fetch_all(&mut *conn).await?;
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !found.iter().any(|(f,)| f == *id))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(not_yours(&missing));
    }
    let mut q =
        QueryBuilder::<DB>::new("SELECT COUNT(*) FROM document_set_members WHERE set_id = ");
    q.push_bind(set_id).push(" AND document_id NOT IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id.as_str());
    }
    q.push(")");
    let (others,): (i64,) = q.build_query_as().fetch_one(&mut *conn).await?;
    if usize::try_from(others).unwrap_or(usize::MAX) + ids.len() > MAX_SET_DOCUMENTS {
        return Err(too_many_documents());
    }
    let mut q = QueryBuilder::<DB>::new(
        "INSERT INTO document_set_members (set_id, document_id, added_at_ms) ",
    );
    q.push_values(ids, |mut row, id| {
        row.push_bind(set_id).push_bind(id.as_str()).push_bind(now);
    });
    q.push(" ON CONFLICT DO NOTHING");
    q.build()
        .execute(&mut *conn)
        .await
        .map_err(|e| refused(e, ""))?;
    Ok(())
}

/// Writes the owner's set row's `updated_at_ms` (taking its lock); false when the owner has
/// no such set.
async fn touch<DB>(
    conn: &mut DB::Connection,
    owner: &str,
    id: &str,
    now: i64,
) -> Result<bool, sqlx::Error>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'r> (String,): FromRow<'r, DB::Row>,
{
    let mut q = QueryBuilder::<DB>::new("UPDATE document_sets SET updated_at_ms = ");
    q.push_bind(now)
        .push(" WHERE owner = ")
        .push_bind(owner)
        .push(" AND id = ")
        .push_bind(id)
        .push(" RETURNING id");
    let row: Option<(String,)> = q.build_query_as().fetch_optional(&mut *conn).await?;
    Ok(row.is_some())
}

#[async_trait]
impl<DB> DocumentSetStore for SqlDocumentStore<DB>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'r> (String,): FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> SetRow: FromRow<'r, DB::Row>,
    for<'r> (String, String, String): FromRow<'r, DB::Row>,
{
    async fn create_set(
        &self,
        owner: &str,
        name: &str,
        document_ids: &[String],
    ) -> Result<DocumentSet, DocumentError> {
        let name = set_name(name)?;
        let ids = set_document_ids(document_ids)?;
        if owner.trim().is_empty() {
            return Err(DocumentError::Invalid("the owner is empty".into()));
        }
        let id = uuid::Uuid::now_v7().to_string();
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let mut q = QueryBuilder::<DB>::new(
            "INSERT INTO document_sets (id, owner, name, created_at_ms, updated_at_ms) VALUES (",
        );
        q.separated(", ")
            .push_bind(id.as_str())
            .push_bind(owner)
            .push_bind(name.as_str())
            .push_bind(now)
            .push_bind(now);
        q.push(")");
        q.build()
            .execute(&mut *tx)
            .await
            .map_err(|e| refused(e, &name))?;
        let mut q = QueryBuilder::<DB>::new("SELECT COUNT(*) FROM document_sets WHERE owner = ");
        q.push_bind(owner);
        let (count,): (i64,) = q.build_query_as().fetch_one(&mut *tx).await?;
        if usize::try_from(count).unwrap_or(usize::MAX) > MAX_SETS {
            return Err(too_many_sets());
        }
        insert_members::<DB>(&mut tx, owner, &id, &ids, now).await?;
        let set = load::<DB>(&mut tx, owner, Some(&id)).await?.pop();
        tx.commit().await?;
        set.ok_or_else(|| DocumentError::Storage(sqlx::Error::RowNotFound))
    }

    async fn sets(&self, owner: &str) -> Result<Vec<DocumentSet>, DocumentError> {
        let mut conn = self.pool.acquire().await?;
        Ok(load::<DB>(&mut conn, owner, None).await?)
    }

    async fn set(&self, owner: &str, id: &str) -> Result<Option<DocumentSet>, DocumentError> {
        if !is_id(id) {
            return Ok(None);
        }
        let mut conn = self.pool.acquire().await?;
        Ok(load::<DB>(&mut conn, owner, Some(id)).await?.pop())
    }

    async fn rename_set(
        &self,
        owner: &str,
        id: &str,
        name: &str,
    ) -> Result<Option<DocumentSet>, DocumentError> {
        let name = set_name(name)?;
        if !is_id(id) {
            return Ok(None);
        }
        let mut tx = self.pool.begin().await?;
        let mut q = QueryBuilder::<DB>::new("UPDATE document_sets SET name = ");
        q.push_bind(name.as_str())
            .push(", updated_at_ms = ")
            .push_bind(now_ms())
            .push(" WHERE owner = ")
            .push_bind(owner)
            .push(" AND id = ")
            .push_bind(id)
            .push(" RETURNING id");
        let row: Option<(String,)> = q
            .build_query_as()
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| refused(e, &name))?;
        if row.is_none() {
            return Ok(None);
        }
        let set = load::<DB>(&mut tx, owner, Some(id)).await?.pop();
        tx.commit().await?;
        Ok(set)
    }

    async fn add_to_set(
        &self,
        owner: &str,
        id: &str,
        document_ids: &[String],
    ) -> Result<Option<DocumentSet>, DocumentError> {
        let ids = set_document_ids(document_ids)?;
        if ids.is_empty() {
            return Err(DocumentError::Invalid("no document ids to add".into()));
        }
        if !is_id(id) {
            return Ok(None);
        }
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        if !touch::<DB>(&mut tx, owner, id, now).await? {
            return Ok(None);
        }
        insert_members::<DB>(&mut tx, owner, id, &ids, now).await?;
        let set = load::<DB>(&mut tx, owner, Some(id)).await?.pop();
        tx.commit().await?;
        Ok(set)
    }

    async fn remove_from_set(
        &self,
        owner: &str,
        id: &str,
        document_id: &str,
    ) -> Result<Removal, DocumentError> {
        if !is_id(id) {
            return Ok(Removal::NoSuchSet);
        }
        let mut tx = self.pool.begin().await?;
        if !touch::<DB>(&mut tx, owner, id, now_ms()).await? {
            return Ok(Removal::NoSuchSet);
        }
        if !is_id(document_id) {
            return Ok(Removal::NotInSet);
        }
        let mut q = QueryBuilder::<DB>::new("DELETE FROM document_set_members WHERE set_id = ");
        q.push_bind(id)
            .push(" AND document_id = ")
            .push_bind(document_id)
            .push(" RETURNING document_id");
        let row: Option<(String,)> = q.build_query_as().fetch_optional(&mut *tx).await?;
        if row.is_none() {
            // Nothing changed: the rollback keeps the set's `updated_at_ms` too.
            return Ok(Removal::NotInSet);
        }
        tx.commit().await?;
        Ok(Removal::Removed)
    }

    async fn delete_set(&self, owner: &str, id: &str) -> Result<bool, DocumentError> {
        if !is_id(id) {
            return Ok(false);
        }
        let mut tx = self.pool.begin().await?;
        let mut q = QueryBuilder::<DB>::new("DELETE FROM document_sets WHERE owner = ");
        q.push_bind(owner)
            .push(" AND id = ")
            .push_bind(id)
            .push(" RETURNING id");
        let row: Option<(String,)> = q.build_query_as().fetch_optional(&mut *tx).await?;
        if row.is_none() {
            return Ok(false);
        }
        let mut q = QueryBuilder::<DB>::new("DELETE FROM document_set_members WHERE set_id = ");
        q.push_bind(id);
        q.build().execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }
}
