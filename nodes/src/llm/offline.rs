//! [`OfflineLlm`]: PalAssist with no LLM configured. Deterministic and local:
//!
//! - intent: the actions the message asks for ([`super::actions`]), question form, and,
//!   on the second pass, the action the recent conversation asked for;
//! - web search: wording that asks whether something is still in force;
//! - documents: the references of the message (names, kinds, pronouns) matched against
//!   the registry with strsim, pronouns resolved from the recent conversation;
//! - answers: extractive (the passages that match, side by side for compare, flagged
//!   sentences for audit), streamed in a few chunks.

use std::time::Instant;

use async_trait::async_trait;
use futures_util::stream;

use super::actions::requested_actions;
use super::{
    AnswerChunk, AnswerRequest, AnswerStream, ChatRole, DocRequest, DocResolution, IntentDecision,
    IntentRequest, Llm, LlmError, Reply, Usage,
};
use crate::extractive;
use crate::references::{self, Reference};
use crate::state::{Action, AnsweredBy, DocRef};
use crate::text::tokens;
use crate::title_match::{match_name, title_has_word, titles_in_text};

/// The model name offline usage reports.
pub const OFFLINE_MODEL: &str = "offline";

/// The deterministic offline resolver and extractive answerer.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineLlm {
    pace: std::time::Duration,
}

impl OfflineLlm {
    /// The offline resolver.
    pub fn new() -> Self {
        OfflineLlm::default()
    }

    /// The same resolver streaming its answers word by word, `pace` apart, the way a model
    /// types (for demos of streaming, and tests of runs that take a while).
    #[must_use]
    pub fn with_pace(mut self, pace: std::time::Duration) -> Self {
        self.pace = pace;
        self
    }
}

/// The text split into words, each keeping the whitespace after it.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if !c.is_whitespace()
            && cur.chars().last().is_some_and(char::is_whitespace)
            && cur.chars().any(|x| !x.is_whitespace())
        {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What an offline call costs (nothing), reported to the engine as a call of `started`.
fn free(started: Instant) -> Usage {
    let usage = Usage {
        model: OFFLINE_MODEL.into(),
        ..Usage::default()
    };
    usage.observe(started);
    usage
}

const QUESTION_STARTS: [&str; 17] = [
    "what", "how", "when", "who", "whom", "which", "why", "where", "does", "do", "is", "are",
    "can", "should", "must", "explain", "tell",
];

fn is_question(text: &str) -> bool {
    text.trim_end().ends_with('?')
        || tokens(text)
            .first()
            .is_some_and(|w| QUESTION_STARTS.contains(&w.as_str()))
}

/// Whether a message asks about the current status of a rule (an LLM's judgement, made
/// with keywords): "still", "in force", "enforced", "repealed", "news", "up to date", ...
pub(crate) fn asks_for_current_status(text: &str) -> bool {
    let words = tokens(text);
    let lower = text.to_lowercase();
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "still"
                | "enforced"
                | "repealed"
                | "superseded"
                | "amended"
                | "amendment"
                | "news"
                | "outdated"
        )
    }) || lower.contains("in force")
        || lower.contains("up to date")
        || lower.contains("up-to-date")
}

fn classify(request: &IntentRequest) -> IntentDecision {
    // The actions the user asks for, not those words of a practice they pasted to audit
    // name ("... decided to delay disclosure ... reviewed the changes").
    let requested = {
        let all = requested_actions(&request.message);
        let asked = requested_actions(&crate::validate_inputs::instruction(&request.message));
        if all.len() > 1 && all.contains(&Action::Audit) && !asked.is_empty() {
            asked
        } else {
            all
        }
    };
    let web = asks_for_current_status(&crate::validate_inputs::instruction(&request.message));
    let decide = |action, requested: Vec<Action>, confidence, reasoning: &str| IntentDecision {
        action,
        multi_action_detected: requested.len() > 1,
        requested_actions: requested,
        confidence,
        enable_web_search: web,
        reasoning: reasoning.to_string(),
    };
    match requested.as_slice() {
        [one] => decide(
            *one,
            requested.clone(),
            0.9,
            "The message names one action.",
        ),
        [first, ..] => decide(
            *first,
            requested.clone(),
            0.5,
            "The message asks for several actions.",
        ),
        [] if is_question(&request.message) => decide(
            Action::Inquire,
            vec![Action::Inquire],
            0.8,
            "The message is a question.",
        ),
        [] => {
            // Second pass: the action the recent conversation asked for.
            let earlier = request
                .history
                .iter()
                .rev()
                .filter(|l| l.role == ChatRole::User)
                .find_map(|l| requested_actions(&l.content).first().copied());
            match earlier {
                Some(a) => decide(
                    a,
                    vec![a],
                    0.7,
                    "The message continues the action asked for earlier in the conversation.",
                ),
                None => decide(
                    Action::Inquire,
                    Vec::new(),
                    0.4,
                    "The message names no action and is not a question.",
                ),
            }
        }
    }
}

fn resolve(request: &DocRequest) -> DocResolution {
    let registry = &request.registry;
    let mut ids: Vec<String> = Vec::new();
    let mut confidence: f64 = 1.0;
    let mut unresolved = Vec::new();
    let add = |found: &[DocRef], conf: f64, ids: &mut Vec<String>, confidence: &mut f64| {
        for d in found {
            if !ids.contains(&d.id) {
                ids.push(d.id.clone());
            }
        }
        *confidence = confidence.min(conf);
    };
    for s in titles_in_text(&request.message, registry) {
        add(&[s.doc], 0.95, &mut ids, &mut confidence);
    }
    for r in references::find(&request.message) {
        match r {
            Reference::Named { name, strong } => {
                let m = match_name(&name, registry);
                let docs: Vec<DocRef> = m.iter().map(|s| s.doc.clone()).collect();
                match docs.len() {
                    0 if strong => unresolved.push(name),
                    0 => {}
                    1 => add(&docs, m[0].score * 0.95, &mut ids, &mut confidence),
                    _ => add(&docs, 0.55, &mut ids, &mut confidence),
                }
            }
            Reference::Kind { noun, plural } => {
                let docs: Vec<DocRef> = registry
                    .iter()
                    .filter(|d| title_has_word(&d.title, &noun))
                    .cloned()
                    .collect();
                match docs.len() {
                    0 => {}
                    1 => add(&docs, 0.9, &mut ids, &mut confidence),
                    _ if plural => add(&docs, 0.85, &mut ids, &mut confidence),
                    _ => add(&docs, 0.55, &mut ids, &mut confidence),
                }
            }
            Reference::Version { newest } => {
                // "The older one" after an answer: that answer's first document, in the
                // version asked for (the caller moves it there).
                let recent = request
                    .history
                    .iter()
                    .rev()
                    .map(|l| (l, titles_in_text(&l.content, registry)))
                    .find(|(_, found)| !found.is_empty());
                if let Some((line, found)) = recent {
                    let first = found
                        .iter()
                        .min_by_key(|s| line.content.find(&s.doc.title).unwrap_or(usize::MAX));
                    if let Some(first) = first {
                        add(
                            std::slice::from_ref(&first.doc),
                            0.85,
                            &mut ids,
                            &mut confidence,
                        );
                        continue;
                    }
                }
                let dated: Vec<(u32, &DocRef)> = registry
                    .iter()
                    .filter_map(|d| title_year(&d.title).map(|y| (y, d)))
                    .collect();
                let pick = if newest {
                    dated.iter().max_by_key(|(y, _)| *y)
                } else {
                    dated.iter().min_by_key(|(y, _)| *y)
                };
                match pick {
                    Some((_, d)) if dated.len() >= 2 => {
                        add(&[(*d).clone()], 0.85, &mut ids, &mut confidence);
                    }
                    _ if !registry.is_empty() => add(registry, 0.55, &mut ids, &mut confidence),
                    _ => {}
                }
            }
            Reference::Pronoun { plural } => {
                if registry.is_empty() {
                    continue;
                }
                let recent = request
                    .history
                    .iter()
                    .rev()
                    .map(|l| titles_in_text(&l.content, registry))
                    .find(|found| !found.is_empty());
                match recent {
                    Some(found) if !plural => {
                        add(&[found[0].doc.clone()], 0.8, &mut ids, &mut confidence);
                    }
                    Some(found) => {
                        let docs: Vec<DocRef> = found.into_iter().map(|s| s.doc).collect();
                        add(&docs, 0.8, &mut ids, &mut confidence);
                    }
                    None if registry.len() == 1 => add(registry, 0.85, &mut ids, &mut confidence),
                    None if plural && registry.len() == 2 => {
                        add(registry, 0.85, &mut ids, &mut confidence);
                    }
                    None => add(registry, 0.55, &mut ids, &mut confidence),
                }
            }
        }
    }
    let reasoning = if ids.is_empty() {
        "The message refers to no document of the registry.".to_string()
    } else {
        format!(
            "Matched {} registry document(s) by title, kind or pronoun.",
            ids.len()
        )
    };
    DocResolution {
        confidence: if ids.is_empty() { 0.0 } else { confidence },
        doc_ids: ids,
        unresolved_names: unresolved,
        reasoning,
    }
}

/// The year a title carries ("Data Retention Policy 2024" -> 2024), if any.
fn title_year(title: &str) -> Option<u32> {
    tokens(title)
        .iter()
        .filter(|w| w.len() == 4)
        .filter_map(|w| w.parse::<u32>().ok())
        .find(|y| (1900..=2100).contains(y))
}

/// Splits a text into about `parts` pieces at word boundaries (their concatenation is the
/// text).
pub(crate) fn chunks(text: &str, parts: usize) -> Vec<String> {
    let target = (text.len() / parts.max(1)).max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    for piece in text.split_inclusive(char::is_whitespace) {
        current.push_str(piece);
        if current.len() >= target {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[async_trait]
impl Llm for OfflineLlm {
    fn describe(&self) -> String {
        OFFLINE_MODEL.to_string()
    }

    fn is_local(&self) -> bool {
        true
    }

    async fn classify_intent(
        &self,
        request: &IntentRequest,
    ) -> Result<Reply<IntentDecision>, LlmError> {
        Ok(Reply {
            value: classify(request),
            usage: free(Instant::now()),
        })
    }

    async fn resolve_documents(
        &self,
        request: &DocRequest,
    ) -> Result<Reply<DocResolution>, LlmError> {
        Ok(Reply {
            value: resolve(request),
            usage: free(Instant::now()),
        })
    }

    fn answered_by(&self, _: &AnswerRequest) -> AnsweredBy {
        AnsweredBy::offline()
    }

    async fn answer(&self, request: &AnswerRequest) -> Result<AnswerStream, LlmError> {
        let text = extractive::answer(request);
        if !self.pace.is_zero() {
            let pace = self.pace;
            let started = Instant::now();
            let items: Vec<AnswerChunk> = words(&text).into_iter().map(AnswerChunk::Text).collect();
            let paced = stream::unfold(Some(items.into_iter()), move |it| async move {
                let mut it = it?;
                match it.next() {
                    Some(next) => {
                        tokio::time::sleep(pace).await;
                        Some((Ok(next), Some(it)))
                    }
                    None => Some((Ok(AnswerChunk::Usage(free(started))), None)),
                }
            });
            return Ok(Box::pin(paced));
        }
        let mut items: Vec<Result<AnswerChunk, LlmError>> = chunks(&text, 6)
            .into_iter()
            .map(|c| Ok(AnswerChunk::Text(c)))
            .collect();
        items.push(Ok(AnswerChunk::Usage(free(Instant::now()))));
        Ok(Box::pin(stream::iter(items)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatLine;

    fn intent(message: &str, history: &[(&str, ChatRole)]) -> IntentDecision {
        classify(&IntentRequest {
            message: message.into(),
            history: history
                .iter()
                .map(|(c, r)| ChatLine {
                    role: *r,
                    content: (*c).into(),
                })
                .collect(),
        })
    }

    fn docs(titles: &[(&str, &str)]) -> Vec<DocRef> {
        titles
            .iter()
            .map(|(id, t)| DocRef {
                id: (*id).into(),
                title: (*t).into(),
            })
            .collect()
    }

    #[test]
    fn one_action_word_is_confident_two_are_multi() {
        let d = intent("Please summarize the policy", &[]);
        assert_eq!(
            (d.action, d.multi_action_detected),
            (Action::Summarize, false)
        );
        assert!(d.confidence >= 0.7);
        let d = intent("Summarize and audit this", &[]);
        assert!(d.multi_action_detected);
        assert_eq!(d.requested_actions, [Action::Summarize, Action::Audit]);
        assert!(d.confidence < 0.7);
    }

    #[test]
    fn asking_how_rules_have_changed_compares() {
        let d = intent("How have the testing and release rules changed?", &[]);
        assert_eq!(d.action, Action::Compare);
        let d = intent(
            "How have the retention periods for call recordings changed?",
            &[],
        );
        assert_eq!(d.action, Action::Compare);
    }

    #[test]
    fn asking_what_one_may_do_asks_for_no_action() {
        let d = intent(
            "Can I paste a confidential client file into ChatGPT to get a summary?",
            &[],
        );
        assert_eq!(d.action, Action::Inquire);
        let d = intent("Can I get a summary of the travel policy?", &[]);
        assert_eq!(d.action, Action::Summarize);
        let d = intent("Can we compare the two versions?", &[]);
        assert_eq!(d.action, Action::Compare);
        for message in [
            "Can you give me a rundown of the outside business interests policy?",
            "Could you walk me through the sanctions policy?",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Summarize, "{message}");
        }
    }

    #[test]
    fn an_audit_request_is_read_from_its_request_not_its_practice() {
        let d = intent(
            "Please audit the onboarding of Kestrel Dunmore Ltd against the current CDD policy. Verification wasn't finished when the account opened on Monday 8 September 2025. The file holds a source of wealth summary but no source of funds evidence. Kestrel has four shareholders: the file shows verification of the 30% shareholder only.",
            &[],
        );
        assert_eq!(d.requested_actions, [Action::Audit]);
        let d = intent(
            "Please check how we handled a tax red flag on our client Mr Osei against the tax evasion policy. The relationship manager submitted an internal suspicion report on Wednesday.",
            &[],
        );
        assert_eq!(d.requested_actions, [Action::Audit]);
    }

    #[test]
    fn asking_whether_a_practice_keeps_to_a_policy_is_an_audit() {
        for message in [
            "Is this in line with our policy? We signed up an introducer at a 4.5% commission.",
            "Have we followed our procurement policy here? Facilities signed a lease alone.",
            "Did we comply with the standard? The report went out a week late.",
            "Is what we did with Meridian MTF in line with our dealing rules? We routed orders to it.",
            "Please check how we handled the fund factsheet against the procedure. We logged it late.",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Audit, "{message}");
        }
        let d = intent("Can you check the deadline in the procedure?", &[]);
        assert_ne!(d.action, Action::Audit);
    }

    #[test]
    fn a_practice_judged_okay_under_the_rules_is_an_audit() {
        let d = intent("Is what we did with Priya's conference claim okay under our rules? The conference was on Wednesday 2 April 2025. She submitted a claim for GBP 6,200 on Monday 19 May 2025.", &[]);
        assert_eq!(d.action, Action::Audit);
        let d = intent(
            "Is it okay under our rules to give a client a gift worth GBP 50?",
            &[],
        );
        assert_ne!(d.action, Action::Audit);
        // Asking leave for something to do is a question of what the rules permit.
        for message in [
            "How much research spend are we allowed to charge clients each year through the research payment account?",
            "When would we be allowed to put out a press statement about a breach instead of writing to each customer, and who has to agree to it?",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Inquire, "{message}");
        }
        let d = intent(
            "Is this allowed? We paid the introducer a 5% commission.",
            &[],
        );
        assert_eq!(d.action, Action::Audit);
    }

    #[test]
    fn a_figure_compared_with_another_is_no_comparison_of_documents() {
        let d = intent(
            "What's the most variable pay an adviser can get, compared with their salary?",
            &[],
        );
        assert_eq!(d.action, Action::Inquire);
        for message in [
            "How does the new policy compare with the old one?",
            "What's in v2.0 compared to v1.4?",
            "Did the 2025 version of the resilience policy add anything, or drop anything?",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Compare, "{message}");
        }
    }

    #[test]
    fn a_change_or_an_addition_told_of_is_no_comparison() {
        let d = intent(
            "Under version 1.4, who had to approve a change to a monitoring threshold?",
            &[],
        );
        assert_eq!(d.action, Action::Inquire);
        let d = intent(
            "Please audit the roll-out. Development began in December 2024, and the model was added to the Model Inventory on 2 April 2025.",
            &[],
        );
        assert_eq!(d.requested_actions, [Action::Audit]);
        let d = intent("In version 1.4, who approves threshold changes?", &[]);
        assert_eq!(d.action, Action::Inquire);
        let d = intent(
            "Did the new version of the SAR policy change when a customer goes to the exit panel?",
            &[],
        );
        assert_eq!(d.action, Action::Compare);
        for message in [
            "What's our minimum password length, and how often do staff have to change their passwords?",
            "What's the current amount above which a reconciliation difference goes to the CASS Oversight Officer?",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Inquire, "{message}");
        }
        for message in [
            "What are the changes in version 2.0?",
            "How is v2 different from v1?",
            "What are the differences between the two versions?",
            "Was that different before?",
            "Is there anything in version 2.0 of the client assets policy that wasn't in 1.4 at all?",
        ] {
            assert_eq!(intent(message, &[]).action, Action::Compare, "{message}");
        }
        let d = intent("What was added in version 2.0?", &[]);
        assert_eq!(d.action, Action::Compare);
        let d = intent("How did the deadlines change in v4?", &[]);
        assert_eq!(d.action, Action::Compare);
    }

    #[test]
    fn questions_inquire_and_bare_messages_are_unsure_until_history_helps() {
        let d = intent("What are the capital requirements?", &[]);
        assert_eq!(d.action, Action::Inquire);
        assert!(d.confidence >= 0.7);
        let d = intent("@AML", &[]);
        assert!(d.confidence < 0.7);
        let d = intent("@AML", &[("Summarize @CRR", ChatRole::User)]);
        assert_eq!(d.action, Action::Summarize);
        assert!(d.confidence >= 0.7);
    }

    #[test]
    fn still_enforced_asks_for_the_web() {
        assert!(intent("Is this still enforced?", &[]).enable_web_search);
        assert!(!intent("What are the capital requirements?", &[]).enable_web_search);
    }

    #[test]
    fn kinds_resolve_against_the_registry() {
        let registry = docs(&[
            ("crr", "Capital Requirements Regulation (CRR) — Excerpt"),
            (
                "aml",
                "Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy",
            ),
        ]);
        let r = resolve(&DocRequest {
            message: "What does that regulation say about the leverage ratio?".into(),
            registry: registry.clone(),
            history: vec![],
        });
        assert_eq!(r.doc_ids, ["crr"]);
        assert!(r.confidence >= 0.8);
        let r = resolve(&DocRequest {
            message: "Summarize the travel expense policy".into(),
            registry,
            history: vec![],
        });
        assert!(r.doc_ids.is_empty());
        assert_eq!(r.unresolved_names, ["travel expense policy"]);
    }

    #[test]
    fn pronouns_use_the_conversation_or_ask() {
        let registry = docs(&[("a", "Alpha Policy"), ("b", "Beta Standard")]);
        let history = vec![ChatLine {
            role: ChatRole::Assistant,
            content: "Here is what Beta Standard says".into(),
        }];
        let r = resolve(&DocRequest {
            message: "Is it still enforced?".into(),
            registry: registry.clone(),
            history,
        });
        assert_eq!(r.doc_ids, ["b"]);
        let r = resolve(&DocRequest {
            message: "Is it still enforced?".into(),
            registry,
            history: vec![],
        });
        assert_eq!(r.doc_ids.len(), 2);
        assert!(r.confidence < 0.8);
    }

    #[test]
    fn chunks_rebuild_the_text() {
        let text = "one two three four five six seven eight nine ten";
        let c = chunks(text, 4);
        assert!(c.len() >= 3);
        assert_eq!(c.concat(), text);
    }

    #[test]
    fn words_keep_their_whitespace_and_rebuild_the_text() {
        let text = "Here is:\n\n- one  two\n- three";
        let w = words(text);
        assert_eq!(
            w,
            vec!["Here ", "is:\n\n", "- ", "one  ", "two\n", "- ", "three"]
        );
        assert_eq!(w.concat(), text);
    }
}
