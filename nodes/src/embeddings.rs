//! [`OpenAiEmbedder`]: the long-term store's [`Embedder`] over any OpenAI-compatible
//! `/embeddings` endpoint, through async-openai. Configured from the environment by
//! [`EmbeddingsConfig::from_lookup`]: `PALGRAPH_EMBEDDINGS_MODEL` turns it on (e.g.
//! `text-embedding-3-small`); `PALGRAPH_EMBEDDINGS_BASE_URL` and
//! `PALGRAPH_EMBEDDINGS_API_KEY` default to `OPENAI_BASE_URL` and `OPENAI_API_KEY`;
//! `PALGRAPH_EMBEDDINGS_DIMS` asks the model for that many dimensions. Rate limits (429),
//! 5xx answers, timeouts and broken connections are tried again, three attempts in all.

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use async_openai::Client;
use async_trait::async_trait;
use palgraph::store::{EmbedError, Embedder};

const OPENAI_BASE: &str = "https://api.openai.com/v1";
const ATTEMPTS: u32 = 3;

/// Where embeddings come from.
#[derive(Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    /// The model.
    pub model: String,
    /// The server (`https://api.openai.com/v1` when unset).
    pub base_url: Option<String>,
    /// The API key.
    pub api_key: String,
    /// Dimensions to ask for (models that can shorten their vectors).
    pub dimensions: Option<u32>,
    /// Time for one request.
    pub request_timeout: Duration,
}

impl std::fmt::Debug for EmbeddingsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingsConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl EmbeddingsConfig {
    /// Embeddings from `model`, on OpenAI unless a base URL is set.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Self {
        EmbeddingsConfig {
            model: model.into(),
            base_url: None,
            api_key: api_key.into(),
            dimensions: None,
            request_timeout: Duration::from_secs(30),
        }
    }

    /// On another OpenAI-compatible server.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The configuration the variables `lookup` reads describe (see the module docs);
    /// `None` when no embeddings model is set. A `PALGRAPH_EMBEDDINGS_DIMS` that is not a
    /// positive number is ignored with a warning.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let model = set("PALGRAPH_EMBEDDINGS_MODEL")?;
        let api_key = set("PALGRAPH_EMBEDDINGS_API_KEY")
            .or_else(|| set("OPENAI_API_KEY"))
            .unwrap_or_default();
        let mut config = EmbeddingsConfig::new(model.trim(), api_key);
        config.base_url = set("PALGRAPH_EMBEDDINGS_BASE_URL").or_else(|| set("OPENAI_BASE_URL"));
        if let Some(d) = set("PALGRAPH_EMBEDDINGS_DIMS") {
            match d.trim().parse::<u32>() {
                Ok(n) if n > 0 => config.dimensions = Some(n),
                _ => {
                    tracing::warn!(value = %d, "PALGRAPH_EMBEDDINGS_DIMS is not a positive number; ignored")
                }
            }
        }
        Some(config)
    }
}

/// Embeds texts with an OpenAI-compatible `/embeddings` endpoint.
#[derive(Clone)]
pub struct OpenAiEmbedder {
    client: Client<OpenAIConfig>,
    config: EmbeddingsConfig,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`EmbedError::Request`] when the key cannot be sent as a header or the HTTP client
    /// cannot be built.
    pub fn new(config: EmbeddingsConfig) -> Result<Self, EmbedError> {
        reqwest::header::HeaderValue::from_str(&format!("Bearer {}", config.api_key)).map_err(
            |_| EmbedError::Request("the embeddings API key cannot be sent as a header".into()),
        )?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EmbedError::Request(format!("cannot build the HTTP client: {e}")))?;
        let base = config
            .base_url
            .as_deref()
            .unwrap_or(OPENAI_BASE)
            .trim_end_matches('/')
            .to_string();
        let api = OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key(config.api_key.clone())
            .with_org_id("")
            .with_project_id("");
        let transport = ReqwestService::new(http.clone());
        Ok(OpenAiEmbedder {
            client: Client::build(http, api).with_http_service(transport),
            config,
        })
    }

    async fn once(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, OpenAIError> {
        let request = CreateEmbeddingRequest {
            model: self.config.model.clone(),
            input: EmbeddingInput::StringArray(texts.to_vec()),
            encoding_format: None,
            user: None,
            dimensions: self.config.dimensions,
        };
        let mut answer = self.client.embeddings().create(request).await?;
        answer.data.sort_by_key(|e| e.index);
        Ok(answer.data.into_iter().map(|e| e.embedding).collect())
    }
}

/// Whether trying again may help.
fn transient(e: &OpenAIError) -> bool {
    match e {
        OpenAIError::ApiError(resp) => {
            let status = resp.status_code.as_u16();
            (status == 429 && resp.api_error.r#type.as_deref() != Some("insufficient_quota"))
                || status >= 500
        }
        OpenAIError::Reqwest(_) => true,
        _ => false,
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    #[tracing::instrument(level = "debug", skip_all, fields(texts = texts.len(), model = %self.config.model))]
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let err =
                match tokio::time::timeout(self.config.request_timeout, self.once(texts)).await {
                    Ok(Ok(vectors)) if vectors.len() == texts.len() => return Ok(vectors),
                    Ok(Ok(vectors)) => {
                        return Err(EmbedError::Malformed(format!(
                            "{} vectors for {} texts",
                            vectors.len(),
                            texts.len()
                        )))
                    }
                    Ok(Err(e)) if transient(&e) && attempt < ATTEMPTS => e.to_string(),
                    Ok(Err(OpenAIError::JSONDeserialize(e, _))) => {
                        return Err(EmbedError::Malformed(e.to_string()))
                    }
                    Ok(Err(e)) => return Err(EmbedError::Request(e.to_string())),
                    Err(_) if attempt < ATTEMPTS => "timed out".to_string(),
                    Err(_) => return Err(EmbedError::Request("timed out".into())),
                };
            let wait = Duration::from_millis(200 * u64::from(1u32 << attempt.min(6)));
            tracing::warn!(attempt, error = %err, ?wait, "embeddings call failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn config_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(EmbeddingsConfig::from_lookup(env(&[("OPENAI_API_KEY", "k")])).is_none());
        let c = EmbeddingsConfig::from_lookup(env(&[
            ("PALGRAPH_EMBEDDINGS_MODEL", "text-embedding-3-small"),
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://llm/v1"),
            ("PALGRAPH_EMBEDDINGS_DIMS", "256"),
        ]))
        .unwrap();
        assert_eq!(c.model, "text-embedding-3-small");
        assert_eq!(c.api_key, "k");
        assert_eq!(c.base_url.as_deref(), Some("http://llm/v1"));
        assert_eq!(c.dimensions, Some(256));
        let c = EmbeddingsConfig::from_lookup(env(&[
            ("PALGRAPH_EMBEDDINGS_MODEL", "m"),
            ("PALGRAPH_EMBEDDINGS_BASE_URL", "http://emb/v1"),
            ("PALGRAPH_EMBEDDINGS_API_KEY", "e"),
            ("OPENAI_BASE_URL", "http://llm/v1"),
            ("PALGRAPH_EMBEDDINGS_DIMS", "x"),
        ]))
        .unwrap();
        assert_eq!(
            (c.base_url.as_deref(), c.api_key.as_str(), c.dimensions),
            (Some("http://emb/v1"), "e", None)
        );
    }
}
