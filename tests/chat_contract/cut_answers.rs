//! Items 7 and 8 of the contract: an answer cut short. A truncated LLM stream is retried,
//! then fails the run; a stopped answer's message says it was interrupted, and why.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::fake_openai::{FakeOpenAi, Reply as Fake};
use super::*;

// 7. A truncated LLM stream is a transport failure.

const ANSWER: [&str; 2] = ["The leverage ratio ", "must be 3% [1]."];

/// A stand-in OpenAI-compatible model: structured calls get plain answers; streamed
/// answers are cut (no finish_reason, no [DONE]) for the first `cut` calls, whole after.
async fn model(cut: usize) -> (FakeOpenAi, Arc<AtomicUsize>) {
    let answers = Arc::new(AtomicUsize::new(0));
    let n = answers.clone();
    let fake = FakeOpenAi::responding(move |body| {
        if body["stream"] == true {
            if n.fetch_add(1, Ordering::SeqCst) < cut {
                return Fake::Truncated {
                    deltas: vec![ANSWER[0].into(), "must".into()],
                    abort: false,
                };
            }
            return Fake::Stream {
                deltas: ANSWER.iter().map(|s| s.to_string()).collect(),
                prompt_tokens: 300,
                completion_tokens: 12,
                stall_after: None,
            };
        }
        let content = match body["response_format"]["json_schema"]["name"].as_str() {
            Some("intent_decision") => json!({
                "action": "inquire", "requested_actions": ["inquire"], "confidence": 0.95,
                "enable_web_search": false, "multi_action_detected": false, "reasoning": "a question"
            }),
            _ => json!({"doc_ids": [], "confidence": 0.0, "unresolved_names": [], "reasoning": "none"}),
        };
        Fake::Completion {
            content: content.to_string(),
            prompt_tokens: 100,
            completion_tokens: 10,
        }
    })
    .await;
    (fake, answers)
}

async fn a_truncated_llm_stream_is_retried_then_fails_the_run(b: Backend) {
    for cut in [1usize, 5] {
        let (fake, answers) = model(cut).await;
        let s = TestServer::start_with(
            b,
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_BASE_URL", fake.base_url.as_str()),
            ],
        )
        .await;
        let (crr, _) = document(&s, "Capital Requirements").await;
        let mut sse = chat(
            &s,
            json!({"message": "What is the leverage ratio?", "action": "inquire", "tagged_doc_ids": [crr]}),
        )
        .await;
        let (t, run) = (header(&sse, "x-thread-id"), header(&sse, "x-run-id"));
        let events = sse.all().await;
        let end = terminal(&events).clone();
        statuses(&events);
        // What the page shows: tokens appended, a reset clearing them.
        let mut shown = String::new();
        for e in events.iter().filter(|e| e.data["type"] == "token") {
            if e.data["reset"] == true {
                shown.clear();
            }
            shown.push_str(e.data["content"].as_str().unwrap());
        }
        let (_, r) = s.get_json(&format!("/threads/{t}/runs/{run}")).await;
        if cut == 1 {
            // One cut stream: the retry answers in full, and the cut text is gone.
            response_shape(&end);
            assert_eq!(end["response"], ANSWER.concat());
            assert_eq!(shown, ANSWER.concat(), "no text of the cut attempt remains");
            assert!(
                events
                    .iter()
                    .any(|e| e.data["type"] == "token" && e.data["reset"] == true),
                "the retry resets the streamed text"
            );
            assert_eq!(answers.load(Ordering::SeqCst), 2);
            assert_eq!(r["status"], "success");
        } else {
            // Cut every time: a failure, never a success with the truncated text.
            assert_eq!(end["type"], "error", "{end}");
            assert!(
                end["message"]
                    .as_str()
                    .unwrap()
                    .contains("ended before the model finished"),
                "{end}"
            );
            assert!(!events.iter().any(|e| e.data["type"] == "response"));
            assert_eq!(answers.load(Ordering::SeqCst), 2, "tried, retried, failed");
            assert_eq!(r["status"], "error", "{r}");
            // The failed answer keeps what its last try had written, marked as failed.
            let h = history(&s, &t).await;
            let last = h["messages"].as_array().unwrap().last().unwrap().clone();
            assert_eq!(last["role"], "assistant", "{h}");
            assert_eq!(last["content"], shown, "{h}");
            assert!(!shown.is_empty());
            assert_eq!(last["metadata"]["interrupted_reason"], "failed", "{last}");
            assert_eq!(last["metadata"]["stream_run_id"], run.as_str(), "{last}");
        }
    }
}
both_backends!(
    a_truncated_llm_stream_is_retried_then_fails_the_run_,
    a_truncated_llm_stream_is_retried_then_fails_the_run
);

// 8. A stopped answer's metadata.

async fn a_stopped_answer_carries_its_interruption(b: Backend) {
    let s = TestServer::start_with(b, PACED).await;
    let mut sse = chat(
        &s,
        json!({"message": "What are the capital requirements?", "client_turn_id": "turn-abc"}),
    )
    .await;
    let (t, run) = (header(&sse, "x-thread-id"), header(&sse, "x-run-id"));
    let mut events = Vec::new();
    while events
        .iter()
        .filter(|e: &&SseEvent| e.data["type"] == "token")
        .count()
        < 3
    {
        events.push(sse.next().await.unwrap());
    }
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    events.extend(sse.all().await);
    let end = terminal(&events);
    assert_eq!(end["type"], "cancelled");
    statuses(&events);
    let h = history(&s, &t).await;
    let last = h["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    let md = &last["metadata"];
    assert_eq!(md["interrupted"], true, "{md}");
    assert_eq!(md["interrupted_reason"], "user_cancelled", "{md}");
    assert_eq!(md["stream_run_id"], run.as_str(), "{md}");
    assert_eq!(md["finished_reason"], "cancelled", "{md}");
    assert!(
        md.get("reason").is_none(),
        "the key is interrupted_reason: {md}"
    );
    assert_eq!(md["client_turn_id"], "turn-abc", "{md}");
}
both_backends!(
    a_stopped_answer_carries_its_interruption_,
    a_stopped_answer_carries_its_interruption
);
