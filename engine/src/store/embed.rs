//! Search by meaning: an [`Embedder`] turns texts into vectors; a store configured with an
//! [`IndexConfig`] embeds the chosen fields of every item it writes and ranks a search's
//! query by cosine similarity to them.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::text::text_of;
use super::Index;

/// Why embedding failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The endpoint could not be reached or answered an error.
    #[error("embeddings request failed: {0}")]
    Request(String),
    /// The endpoint answered something else than one vector per text.
    #[error("embeddings answer is malformed: {0}")]
    Malformed(String),
}

/// Turns texts into vectors (an OpenAI-compatible `/embeddings` endpoint, a local model, a
/// test double).
#[async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// How a store embeds its items.
#[derive(Clone)]
pub struct IndexConfig {
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
    /// The fields embedded by default (dotted paths; `$`, the default, is the whole value's
    /// text).
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// Embeds the whole value of every item with `embedder`.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        IndexConfig {
            embedder,
            fields: vec!["$".into()],
        }
    }

    /// Embeds these fields by default.
    #[must_use]
    pub fn fields(mut self, fields: Vec<String>) -> Self {
        self.fields = fields;
        self
    }

    /// The vector of an item written with `index` (`None`: not embedded).
    pub(crate) async fn embed_item(
        &self,
        value: &Value,
        index: &Index,
    ) -> Result<Option<Vec<f32>>, EmbedError> {
        let fields = match index {
            Index::Off => return Ok(None),
            Index::Default => &self.fields,
            Index::Fields(f) => f,
        };
        let text = text_of(value, fields);
        if text.trim().is_empty() {
            return Ok(None);
        }
        self.embed_one(text).await.map(Some)
    }

    /// The vector of a text.
    pub(crate) async fn embed_one(&self, text: String) -> Result<Vec<f32>, EmbedError> {
        let mut out = self.embedder.embed(&[text]).await?;
        match (out.pop(), out.is_empty()) {
            (Some(v), true) if !v.is_empty() => Ok(v),
            _ => Err(EmbedError::Malformed(
                "expected exactly one non-empty vector".into(),
            )),
        }
    }
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexConfig")
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

/// The Euclidean norm of a vector.
pub(crate) fn norm(v: &[f32]) -> f64 {
    v.iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt()
}

/// The cosine similarity of two vectors (0 when either is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let n = norm(a) * norm(b);
    if n == 0.0 {
        0.0
    } else {
        dot / n
    }
}
