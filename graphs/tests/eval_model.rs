//! The evaluation set run with a language model: the OpenAI-compatible client against a
//! fake server speaking the real wire format (`nodes/tests/fake_openai`), which stands in
//! for a model: it routes by keywords, resolves no document itself, and answers by quoting
//! the first passage it is given, citing it, and citing a passage it was not given. The
//! whole set must run, every answer must cite only passages it was given and say that a
//! model made it, and the prompts must ask for citations by passage number and for a
//! confidence grounded in the retrieval.

#![allow(clippy::unwrap_used)]

use crate::fake_openai;

use std::sync::Arc;
use std::time::Duration;

use fake_openai::{FakeOpenAi, Reply};
use palgraph_graphs::eval::{self, EvalSet, Part};
use palgraph_nodes::llm::{OpenAiConfig, OpenAiLlm, TaskModels};
use serde_json::{json, Value};

const MODEL: &str = "fake-model";

/// The user turn's text of a chat-completions request.
fn user_text(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn completion(content: Value) -> Reply {
    Reply::Completion {
        content: content.to_string(),
        prompt_tokens: 200,
        completion_tokens: 20,
    }
}

/// The stand-in model.
fn respond(body: &Value) -> Reply {
    let user = user_text(body);
    match body["response_format"]["json_schema"]["name"].as_str() {
        Some("intent_decision") => {
            let message = user.rsplit("Message: ").next().unwrap_or("").to_lowercase();
            let action = ["summar", "compar", "audit"]
                .iter()
                .zip(["summarize", "compare", "audit"])
                .find(|(k, _)| message.contains(*k))
                .map_or("inquire", |(_, a)| a);
            completion(json!({
                "action": action, "requested_actions": [action], "confidence": 0.9,
                "enable_web_search": false, "multi_action_detected": false,
                "reasoning": "keywords"
            }))
        }
        Some(_) => completion(json!({
            "doc_ids": [], "confidence": 0.0, "unresolved_names": [], "reasoning": "none"
        })),
        None => {
            let first = user
                .lines()
                .find_map(|l| l.strip_prefix("[1] ("))
                .and_then(|l| l.split_once(") ").map(|(_, text)| text.to_string()));
            let deltas = match first {
                Some(text) => vec![
                    "From the documents: ".to_string(),
                    text,
                    " [1], and a source I was not given [9999].".to_string(),
                    "\nConfidence: medium: the first passage matches.".to_string(),
                ],
                None => vec!["I was given no passages.\nConfidence: low: nothing matched.".into()],
            };
            Reply::Stream {
                deltas,
                prompt_tokens: 500,
                completion_tokens: 40,
                stall_after: None,
            }
        }
    }
}

#[tokio::test]
async fn the_eval_set_runs_against_an_openai_compatible_model_with_valid_citations() {
    let server = FakeOpenAi::responding(respond).await;
    let config = OpenAiConfig::new("sk-test")
        .with_base_url(server.base_url.clone())
        .with_models(TaskModels::all(MODEL))
        .with_retry(palgraph::RetryPolicy::attempts(1))
        .with_timeouts(Duration::from_secs(10), Duration::from_secs(10));
    let set = EvalSet::shipped(Part::Dev).unwrap();
    let report = eval::run(&set, Arc::new(OpenAiLlm::new(config).unwrap()))
        .await
        .unwrap();
    println!("{}", report.table());

    assert_eq!(report.cases.len(), set.cases.len());
    for case in &report.cases {
        // A turn can end at a prompt the case does not answer (this stand-in names no
        // document it was not told of); a turn that answered must say how.
        let mut answered = false;
        for check in &case.checks {
            assert!(
                !check.name.starts_with("the run completes"),
                "{}: {}",
                case.id,
                check.name
            );
            if check.name == "the turn ends with an answer" {
                answered = check.passed;
            }
            let must_pass = check.name.starts_with("citation markers")
                || (answered && check.name == "says how it was made");
            if must_pass {
                assert!(check.passed, "{}: {}", case.id, check.name);
            }
        }
        for (answer, by) in case.answers.iter().zip(&case.answered_by) {
            assert!(!answer.contains("[9999]"), "{}: {answer}", case.id);
            if answer.starts_with("From the documents") {
                assert_eq!(by, &json!({"kind": "model", "model": MODEL}), "{}", case.id);
            }
        }
    }
    let answered = report
        .cases
        .iter()
        .flat_map(|c| &c.answers)
        .filter(|a| a.starts_with("From the documents") && a.contains("[1]"))
        .count();
    assert!(answered >= set.cases.len() / 2, "{answered} model answers");

    let answers: Vec<Value> = server
        .received()
        .into_iter()
        .filter(|r| r.body["stream"] == true)
        .map(|r| r.body)
        .collect();
    assert!(!answers.is_empty());
    for body in &answers {
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("in square brackets, like [3]"), "{system}");
        assert!(system.contains("Confidence: high|medium|low"), "{system}");
        assert!(user_text(body).contains("Retrieval: the passages match the request at"));
    }
}
