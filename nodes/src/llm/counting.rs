//! [`CountingLlm`]: wraps an [`Llm`] and counts its calls per job, to check that a resume
//! never repeats a call, or to meter usage.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use crate::state::AnsweredBy;

use super::{
    AnswerRequest, AnswerStream, DocRequest, DocResolution, IntentDecision, IntentRequest, Llm,
    LlmError, Reply,
};

/// Calls made so far, per job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlmCalls {
    /// `classify_intent` calls.
    pub intent: usize,
    /// `resolve_documents` calls.
    pub doc_resolution: usize,
    /// `answer` calls.
    pub answer: usize,
}

impl LlmCalls {
    /// All calls.
    pub fn total(&self) -> usize {
        self.intent + self.doc_resolution + self.answer
    }

    /// Routing calls (intent and documents), not answers.
    pub fn routing(&self) -> usize {
        self.intent + self.doc_resolution
    }
}

/// An [`Llm`] that counts the calls it passes on.
pub struct CountingLlm {
    inner: Arc<dyn Llm>,
    intent: AtomicUsize,
    doc_resolution: AtomicUsize,
    answer: AtomicUsize,
}

impl std::fmt::Debug for CountingLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingLlm")
            .field("inner", &self.inner.describe())
            .field("calls", &self.calls())
            .finish()
    }
}

impl CountingLlm {
    /// Counts the calls made to `inner`.
    pub fn new(inner: Arc<dyn Llm>) -> Self {
        CountingLlm {
            inner,
            intent: AtomicUsize::new(0),
            doc_resolution: AtomicUsize::new(0),
            answer: AtomicUsize::new(0),
        }
    }

    /// The calls so far.
    pub fn calls(&self) -> LlmCalls {
        LlmCalls {
            intent: self.intent.load(Ordering::SeqCst),
            doc_resolution: self.doc_resolution.load(Ordering::SeqCst),
            answer: self.answer.load(Ordering::SeqCst),
        }
    }
}

#[async_trait]
impl Llm for CountingLlm {
    fn describe(&self) -> String {
        format!("counting {}", self.inner.describe())
    }

    fn is_local(&self) -> bool {
        self.inner.is_local()
    }

    async fn classify_intent(
        &self,
        request: &IntentRequest,
    ) -> Result<Reply<IntentDecision>, LlmError> {
        self.intent.fetch_add(1, Ordering::SeqCst);
        self.inner.classify_intent(request).await
    }

    async fn resolve_documents(
        &self,
        request: &DocRequest,
    ) -> Result<Reply<DocResolution>, LlmError> {
        self.doc_resolution.fetch_add(1, Ordering::SeqCst);
        self.inner.resolve_documents(request).await
    }

    async fn answer(&self, request: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        self.answer.fetch_add(1, Ordering::SeqCst);
        self.inner.answer(request).await
    }

    fn searches_web(&self) -> bool {
        self.inner.searches_web()
    }

    fn answered_by(&self, request: &AnswerRequest) -> AnsweredBy {
        self.inner.answered_by(request)
    }
}
