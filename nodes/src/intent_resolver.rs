//! The `intent_resolver` node: what does the user want done?
//!
//! 1. An explicit action in the request wins at once (no LLM call).
//! 2. Otherwise the LLM classifies the message (structured output: action, confidence,
//!    web search, multi-action); when it is unsure (confidence below 0.7) and the
//!    conversation has history, a second pass sees the last 5 messages.
//! 3. Several actions asked: an `action_choice` prompt with those actions. Still unsure: an
//!    `action_choice` prompt with the top two actions ([`top_two`]). Its answer is an
//!    action name; a cancel (null) ends the turn: nothing else runs, no answer is stored.
//!
//! In PalAssist's graph a request with an explicit action does not come here at all (the
//! graph routes it from START to `doc_resolver`); the short-cut of step 1 serves this node
//! used on its own.
//!
//! Web search is on when the request asks for it, OR the message has a temporal keyword
//! (see [`crate::temporal`]), OR the LLM says the answer needs current information.

use std::sync::Arc;

use palgraph::{NodeContext, NodeError};

use crate::conversation::{recent_lines, request_text};
use crate::deps::{user_id, PalAssistDeps};
use crate::durable::llm_call;
use crate::llm::{IntentDecision, IntentRequest, Reply, Usage};
use crate::prompt::{Asker, Prompt, CANCELLED_RESPONSE};
use crate::state::{Action, AgentState, AgentStateUpdate};
use crate::temporal::{asks_about_present, current_year};
use crate::validate_inputs::instruction;

/// Below this confidence the resolver is unsure.
pub const CONFIDENT: f64 = 0.7;

/// How many earlier messages the second pass sees.
const HISTORY: usize = 5;

/// The action a typed answer names ("audit", "Audit please", "ask a question").
fn action_in(answer: &str) -> Option<Action> {
    Action::parse(answer).or_else(|| {
        crate::text::tokens(answer)
            .iter()
            .find_map(|w| Action::parse(w))
            .or_else(|| crate::llm::requested_actions(answer).first().copied())
    })
}

/// The two actions an unsure classification offers: its best guess, then the runner-up:
/// the next action the message asks for, else the likeliest other one (inquire; summarize
/// when the guess is inquire).
pub fn top_two(decision: &IntentDecision) -> [Action; 2] {
    let best = decision.action;
    let runner_up = decision
        .requested_actions
        .iter()
        .copied()
        .find(|a| *a != best)
        .unwrap_or(if best == Action::Inquire {
            Action::Summarize
        } else {
            Action::Inquire
        });
    [best, runner_up]
}

fn list(actions: &[Action]) -> String {
    let names: Vec<String> = actions.iter().map(|a| a.as_str().to_string()).collect();
    match names.as_slice() {
        [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => names.join(""),
    }
}

/// The `intent_resolver` node.
///
/// # Errors
/// No calling user in the run's context; an LLM failure.
pub async fn intent_resolver(
    deps: Arc<PalAssistDeps>,
    state: Arc<AgentState>,
    ctx: NodeContext,
) -> Result<AgentStateUpdate, NodeError> {
    user_id(&ctx)?;
    let message = request_text(&state, &[]);
    // Words of a pasted text to audit ("still", "2025") do not ask for the web.
    let temporal = asks_about_present(&instruction(&message), current_year());
    if let Some(action) = state.action {
        return Ok(AgentStateUpdate::default()
            .action(Some(action))
            .intent_confidence(1.0)
            .enable_web_search(state.enable_web_search || temporal));
    }

    let mut usage = Usage::default();
    let first: Reply<IntentDecision> = llm_call(
        &ctx,
        deps.llm.as_ref(),
        "classify_intent",
        deps.llm.classify_intent(&IntentRequest {
            message: message.clone(),
            history: Vec::new(),
        }),
    )
    .await?;
    usage.add(&first.usage);
    let mut decision = first.value;
    if decision.confidence < CONFIDENT && !decision.multi_action_detected {
        let history = recent_lines(&state, HISTORY);
        if !history.is_empty() {
            let second: Reply<IntentDecision> = llm_call(
                &ctx,
                deps.llm.as_ref(),
                "classify_intent_with_history",
                deps.llm.classify_intent(&IntentRequest {
                    message: message.clone(),
                    history,
                }),
            )
            .await?;
            usage.add(&second.usage);
            decision = second.value;
        }
    }
    let web = state.enable_web_search || temporal || decision.enable_web_search;

    let multi = decision.multi_action_detected && decision.requested_actions.len() > 1;
    let mut action = decision.action;
    let mut confidence = decision.confidence;
    let mut notices = Vec::new();
    let mut asker = Asker::new(&ctx);
    if multi || decision.confidence < CONFIDENT {
        let prompt = if multi {
            Prompt::action_choice(
                format!(
                    "You asked me to {}. Which should I do now?",
                    list(&decision.requested_actions)
                ),
                &decision.requested_actions,
            )
        } else {
            Prompt::action_choice("What would you like me to do?", &top_two(&decision))
        };
        match asker.ask(&prompt)? {
            Some(answer) => match action_in(&answer) {
                Some(chosen) => {
                    action = chosen;
                    confidence = 1.0;
                }
                None => {
                    action = Action::Inquire;
                    notices.push(format!(
                        "\"{answer}\" is not an action I know, so I treated your message as a question."
                    ));
                }
            },
            None => {
                return Ok(AgentStateUpdate::default()
                    .cancelled_turn(CANCELLED_RESPONSE)
                    .with_usage(&usage)
                    .with_messages(asker.into_records()))
            }
        }
    }
    Ok(AgentStateUpdate::default()
        .action(Some(action))
        .intent_confidence(confidence)
        .multi_action_detected(decision.multi_action_detected)
        .enable_web_search(web)
        .with_usage(&usage)
        .with_notices(notices)
        .with_messages(asker.into_records()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsure(action: Action, requested: Vec<Action>) -> IntentDecision {
        IntentDecision {
            action,
            requested_actions: requested,
            confidence: 0.4,
            enable_web_search: false,
            multi_action_detected: false,
            reasoning: String::new(),
        }
    }

    #[test]
    fn an_unsure_decision_offers_its_guess_and_the_runner_up() {
        assert_eq!(
            top_two(&unsure(Action::Inquire, vec![])),
            [Action::Inquire, Action::Summarize]
        );
        assert_eq!(
            top_two(&unsure(Action::Audit, vec![Action::Audit])),
            [Action::Audit, Action::Inquire]
        );
        assert_eq!(
            top_two(&unsure(
                Action::Compare,
                vec![Action::Compare, Action::Summarize]
            )),
            [Action::Compare, Action::Summarize]
        );
    }

    #[test]
    fn typed_answers_name_actions() {
        assert_eq!(action_in("audit"), Some(Action::Audit));
        assert_eq!(action_in("Audit please"), Some(Action::Audit));
        assert_eq!(action_in("give me a summary"), Some(Action::Summarize));
        assert_eq!(action_in("banana"), None);
        assert_eq!(
            list(&[Action::Summarize, Action::Audit]),
            "summarize and audit"
        );
    }
}
