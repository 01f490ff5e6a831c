//! [`Scoped`]: one store seen through a hidden root label, so that many users (or tenants)
//! share a store without seeing each other's items.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::namespace::{check_stored_label, literal_head, validate_label, validate_namespace};
use super::{
    page_namespaces, Item, NamespaceQuery, PutOptions, SearchItem, SearchQuery, Store, StoreError,
};

/// A view of a store where every namespace is filed under `root`: `["memories"]` is stored
/// as `[root, "memories"]`, searches and listings see only `root`'s items, and namespaces
/// come back without it. Namespaces given to it are checked as a client's
/// ([`validate_namespace`]: no empty labels, no periods).
#[derive(Clone)]
pub struct Scoped {
    inner: Arc<dyn Store>,
    root: String,
}

impl Scoped {
    /// `inner` seen under `root` (e.g. a user id).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when `root` is empty or holds control characters.
    pub fn new(inner: Arc<dyn Store>, root: impl Into<String>) -> Result<Self, StoreError> {
        let root = root.into();
        check_stored_label(&root)?;
        Ok(Scoped { inner, root })
    }

    /// The root label.
    pub fn root(&self) -> &str {
        &self.root
    }

    fn full(&self, namespace: &[String]) -> Vec<String> {
        let mut ns = Vec::with_capacity(namespace.len() + 1);
        ns.push(self.root.clone());
        ns.extend_from_slice(namespace);
        ns
    }

    fn strip(&self, mut item: Item) -> Item {
        if item.namespace.first() == Some(&self.root) {
            item.namespace.remove(0);
        }
        item
    }
}

#[async_trait]
impl Store for Scoped {
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        options: PutOptions,
    ) -> Result<(), StoreError> {
        validate_namespace(namespace)?;
        self.inner
            .put(&self.full(namespace), key, value, options)
            .await
    }

    async fn get(
        &self,
        namespace: &[String],
        key: &str,
        refresh_ttl: bool,
    ) -> Result<Option<Item>, StoreError> {
        validate_namespace(namespace)?;
        Ok(self
            .inner
            .get(&self.full(namespace), key, refresh_ttl)
            .await?
            .map(|i| self.strip(i)))
    }

    async fn delete(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        validate_namespace(namespace)?;
        self.inner.delete(&self.full(namespace), key).await
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError> {
        query
            .namespace_prefix
            .iter()
            .try_for_each(|l| validate_label(l))?;
        let mut q = query.clone();
        q.namespace_prefix = self.full(&query.namespace_prefix);
        Ok(self
            .inner
            .search(&q)
            .await?
            .into_iter()
            .map(|mut hit| {
                hit.item = self.strip(hit.item);
                hit
            })
            .collect())
    }

    async fn list_namespaces(
        &self,
        query: &NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        // Everything under the root, then the caller's query on the namespaces as the
        // caller sees them (a suffix must not reach the hidden root label).
        let mut all = NamespaceQuery::new().limit(usize::MAX);
        all.prefix = Some(self.full(&literal_head(query.prefix.as_deref().unwrap_or_default())));
        let mine = self
            .inner
            .list_namespaces(&all)
            .await?
            .into_iter()
            .filter_map(|mut ns| {
                (ns.first() == Some(&self.root)).then(|| {
                    ns.remove(0);
                    ns
                })
            })
            .filter(|ns| !ns.is_empty());
        Ok(page_namespaces(mine, query))
    }

    async fn sweep_expired(&self) -> Result<u64, StoreError> {
        self.inner.sweep_expired().await
    }
}
