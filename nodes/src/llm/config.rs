//! How the OpenAI-compatible client is configured: key, base URL, a model per task,
//! timeouts, retries and prices.

use std::time::Duration;

use palgraph::RetryPolicy;

use super::pricing::Prices;
use super::LlmTask;

/// The model used when no other is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// A model per task; tasks without their own use `default`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskModels {
    /// The default model (`OPENAI_MODEL`, else `gpt-4o-mini`).
    pub default: String,
    /// Intent classification (`PALASSIST_MODEL_INTENT`).
    pub intent: Option<String>,
    /// Document resolution (`PALASSIST_MODEL_DOC_RESOLUTION`).
    pub doc_resolution: Option<String>,
    /// Summaries (`PALASSIST_MODEL_SUMMARIZE`).
    pub summarize: Option<String>,
    /// Questions (`PALASSIST_MODEL_INQUIRE`).
    pub inquire: Option<String>,
    /// Comparisons (`PALASSIST_MODEL_COMPARE`).
    pub compare: Option<String>,
    /// Audits (`PALASSIST_MODEL_AUDIT`).
    pub audit: Option<String>,
    /// A model that can search the web (`PALASSIST_MODEL_WEB_SEARCH`, e.g.
    /// `gpt-4o-mini-search-preview`); answers with web search on use it. Without one, web
    /// search is reported as unavailable in the answer.
    pub web_search: Option<String>,
}

impl Default for TaskModels {
    fn default() -> Self {
        TaskModels::all(DEFAULT_MODEL)
    }
}

impl TaskModels {
    /// One model for every task.
    pub fn all(model: impl Into<String>) -> Self {
        TaskModels {
            default: model.into(),
            intent: None,
            doc_resolution: None,
            summarize: None,
            inquire: None,
            compare: None,
            audit: None,
            web_search: None,
        }
    }

    /// The model for `task`.
    pub fn model_for(&self, task: LlmTask) -> &str {
        let specific = match task {
            LlmTask::Intent => &self.intent,
            LlmTask::DocResolution => &self.doc_resolution,
            LlmTask::Summarize => &self.summarize,
            LlmTask::Inquire => &self.inquire,
            LlmTask::Compare => &self.compare,
            LlmTask::Audit => &self.audit,
        };
        specific.as_deref().unwrap_or(&self.default)
    }
}

/// How an LLM call is retried by default: rate limits (429), 5xx, timeouts and broken
/// connections are tried again after a doubling, jittered wait (0.5 s up to 8 s), up to
/// four attempts in all. Which errors are retried is the client's to say; only the
/// policy's attempts and backoff apply.
pub fn default_retry() -> RetryPolicy {
    RetryPolicy::attempts(4)
        .initial_interval(Duration::from_millis(500))
        .max_interval(Duration::from_secs(8))
}

/// The OpenAI-compatible client's configuration.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// The API key.
    pub api_key: String,
    /// The base URL (`OPENAI_BASE_URL`, e.g. `http://127.0.0.1:11434/v1`); OpenAI's when
    /// `None`.
    pub base_url: Option<String>,
    /// The models.
    pub models: TaskModels,
    /// The longest wait for a whole structured answer, or for a stream's first chunk.
    pub request_timeout: Duration,
    /// The longest silence inside a streamed answer.
    pub idle_timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// Prices per model, for `cost_usd`.
    pub prices: Prices,
}

impl OpenAiConfig {
    /// A configuration with `api_key` and the defaults: OpenAI's URL, `gpt-4o-mini`, 60 s
    /// timeouts, 4 attempts.
    pub fn new(api_key: impl Into<String>) -> Self {
        OpenAiConfig {
            api_key: api_key.into(),
            base_url: None,
            models: TaskModels::default(),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            retry: default_retry(),
            prices: Prices::default(),
        }
    }

    /// The same with another base URL.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The same with other models.
    #[must_use]
    pub fn with_models(mut self, models: TaskModels) -> Self {
        self.models = models;
        self
    }

    /// The same with other retry settings.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same with other timeouts.
    #[must_use]
    pub fn with_timeouts(mut self, request: Duration, idle: Duration) -> Self {
        self.request_timeout = request;
        self.idle_timeout = idle;
        self
    }

    /// The same with other prices.
    #[must_use]
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = prices;
        self
    }

    /// Reads the configuration through `lookup` (e.g. the environment); `None` when
    /// `OPENAI_API_KEY` is unset or blank.
    ///
    /// Variables: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL` (default model),
    /// `PALASSIST_MODEL_{INTENT,DOC_RESOLUTION,SUMMARIZE,INQUIRE,COMPARE,AUDIT,WEB_SEARCH}`,
    /// and `PALASSIST_PRICE_INPUT_PER_MTOK` with `PALASSIST_PRICE_OUTPUT_PER_MTOK` (USD per
    /// million tokens, for every model) to override the built-in price list.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |key: &str| {
            lookup(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let key = get("OPENAI_API_KEY")?;
        let mut models =
            TaskModels::all(get("OPENAI_MODEL").unwrap_or_else(|| DEFAULT_MODEL.into()));
        models.intent = get("PALASSIST_MODEL_INTENT");
        models.doc_resolution = get("PALASSIST_MODEL_DOC_RESOLUTION");
        models.summarize = get("PALASSIST_MODEL_SUMMARIZE");
        models.inquire = get("PALASSIST_MODEL_INQUIRE");
        models.compare = get("PALASSIST_MODEL_COMPARE");
        models.audit = get("PALASSIST_MODEL_AUDIT");
        models.web_search = get("PALASSIST_MODEL_WEB_SEARCH");
        let mut config = OpenAiConfig::new(key).with_models(models);
        config.base_url = get("OPENAI_BASE_URL");
        let price = |k: &str| get(k).and_then(|v| v.parse::<f64>().ok());
        if let (Some(input), Some(output)) = (
            price("PALASSIST_PRICE_INPUT_PER_MTOK"),
            price("PALASSIST_PRICE_OUTPUT_PER_MTOK"),
        ) {
            config.prices = Prices::flat(input, output);
        }
        Some(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_has_its_model_or_the_default() {
        let cfg = OpenAiConfig::from_lookup(|k| match k {
            "OPENAI_API_KEY" => Some("k".into()),
            "OPENAI_MODEL" => Some("m-default".into()),
            "PALASSIST_MODEL_AUDIT" => Some("m-audit".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(cfg.models.model_for(LlmTask::Audit), "m-audit");
        assert_eq!(cfg.models.model_for(LlmTask::Intent), "m-default");
        assert_eq!(cfg.base_url, None);
    }

    #[test]
    fn a_call_is_tried_four_times_half_a_second_apart_doubling_to_eight() {
        let r = default_retry();
        assert_eq!(r.max_attempts, 4);
        let first = r.backoff(1);
        assert!(
            first >= Duration::from_millis(500) && first <= Duration::from_millis(750),
            "{first:?}"
        );
        assert!(r.backoff(40) <= Duration::from_secs(8));
    }
}
