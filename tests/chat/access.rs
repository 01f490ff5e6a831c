//! Who may do what in a chat, and what bad input gets: another user's thread is 404, bad
//! requests are clear JSON errors, and PalAssist's long-term memory is each user's own.

use super::*;

async fn another_users_thread_is_404(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_API_KEYS", "key-a=alice,key-b=bob")]).await;
    let alice = s
        .sse(
            s.client
                .post(s.url("/chat"))
                .header("x-api-key", "key-a")
                .json(&json!({"message": "Summarize the policy"})),
        )
        .await;
    let t = thread_of(&alice);
    let mut alice = alice;
    let alice_events = alice.all().await;
    let alice_prompt = terminal(&alice_events).data["interrupt_type"].clone();
    assert!(
        alice_prompt.is_string(),
        "alice (no documents yet) is asked something"
    );
    let bob = |r: reqwest::RequestBuilder| r.header("x-api-key", "key-b");
    assert_eq!(
        bob(s.client.get(s.url(&format!("/chat/history/{t}"))))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        bob(s.client.post(s.url("/chat")))
            .json(&json!({"message": "hi", "thread_id": t}))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        bob(s.client.post(s.url("/chat/resume")))
            .json(&json!({"thread_id": t, "resume_value": {"type": "cancel"}}))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        bob(s.client.get(s.url(&format!("/chat/stream/{t}"))))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    // Bob's documents are his own: he has none (samples are only for the local user).
    let docs: Value = bob(s.client.get(s.url("/documents")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(docs.as_array().unwrap().is_empty());
    let h: Value = s
        .client
        .get(s.url(&format!("/chat/history/{t}")))
        .header("x-api-key", "key-a")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        h["pending_interrupt"]["interrupt_type"], alice_prompt,
        "alice's prompt is untouched"
    );
}
both_backends!(another_users_thread_is_404_, another_users_thread_is_404);

async fn bad_chat_requests_are_clear_errors(b: Backend) {
    let s = TestServer::start(b).await;
    let r = s
        .client
        .post(s.url("/chat"))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422, "malformed JSON");
    let (code, e) = s.post_json("/chat", json!({"thread_id": "x"})).await;
    assert_eq!(code, 422, "missing message: {e}");
    let (code, e) = s
        .post_json("/chat", json!({"message": "hi", "thread_id": "not-a-uuid"}))
        .await;
    assert_eq!(code, 422, "{e}");
    let (code, e) = s.post_json("/chat", json!({"message": "   "})).await;
    assert_eq!(code, 422, "{e}");
    let (code, e) = s
        .post_json(
            "/chat/resume",
            json!({"thread_id": uuid::Uuid::new_v4(), "resume_value": {"type": "cancel"}}),
        )
        .await;
    assert_eq!(code, 404, "{e}");
    let unknown = uuid::Uuid::new_v4();
    let (code, h) = s.get_json(&format!("/chat/history/{unknown}")).await;
    assert_eq!(
        code, 404,
        "an unknown thread is not found, as everywhere: {h}"
    );
    // Documents: JSON and multipart, per user, 404 when unknown.
    let (code, d) = s
        .post_json(
            "/documents",
            json!({"title": "Notes", "content": "Keep records for 5 years."}),
        )
        .await;
    assert_eq!(code, 201, "{d}");
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::text("# Policy\nReview yearly.").file_name("review.md"),
    );
    let r = s
        .client
        .post(s.url("/documents"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let up: Value = r.json().await.unwrap();
    assert_eq!(up["title"], "Policy", "the first heading is the title");
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(vec![0u8, 1, 2]).file_name("x.pdf"),
    );
    assert_eq!(
        s.client
            .post(s.url("/documents"))
            .multipart(form)
            .send()
            .await
            .unwrap()
            .status(),
        422
    );
    let (code, _) = s
        .get_json(&format!("/documents/{}", d["id"].as_str().unwrap()))
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        s.client
            .delete(s.url(&format!("/documents/{}", d["id"].as_str().unwrap())))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(
        s.client
            .delete(s.url(&format!("/documents/{}", d["id"].as_str().unwrap())))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
}
both_backends!(
    bad_chat_requests_are_clear_errors_,
    bad_chat_requests_are_clear_errors
);

/// One chat turn as the user of `key`; returns the terminal event, the statuses' nodes and
/// the thread.
async fn say_as(s: &TestServer, key: &str, message: &str) -> (Value, Vec<String>, String) {
    let mut sse = s
        .sse(
            s.client
                .post(s.url("/chat"))
                .header("x-api-key", key)
                .json(&json!({"message": message})),
        )
        .await;
    let thread = thread_of(&sse);
    let events = sse.all().await;
    let nodes = events
        .iter()
        .filter(|e| e.data["type"] == "status")
        .map(|e| e.data["node"].as_str().unwrap_or("").to_string())
        .collect();
    (terminal(&events).data.clone(), nodes, thread)
}

/// PalAssist remembers what a user tells it to, across conversations, lists it and forgets
/// it, in that user's own long-term store: another user's PalAssist knows none of it, and
/// the store API shows the user the item PalAssist wrote.
async fn palassist_remembers_across_conversations_per_user(b: Backend) {
    const ADA: &str = "key-ada-0123456789abcdef";
    const BOB: &str = "key-bob-0123456789abcdef";
    let s =
        TestServer::start_with(b, &[("PALGRAPH_API_KEYS", &format!("{ADA}=ada,{BOB}=bob"))]).await;
    let (end, nodes, first) =
        say_as(&s, ADA, "Remember that I prefer answers in bullet points.").await;
    assert_eq!(end["type"], "response", "{end}");
    assert_eq!(
        end["response"],
        "Got it. I'll remember that I prefer answers in bullet points."
    );
    assert_eq!(nodes, ["memory"], "no intent classification, no documents");

    // A new conversation of the same user knows it.
    let (end, _, second) = say_as(&s, ADA, "What do you remember?").await;
    assert_ne!(first, second);
    assert_eq!(
        end["response"],
        "Here is what I remember:\n- I prefer answers in bullet points"
    );
    // Another user's PalAssist does not.
    let (end, _, _) = say_as(&s, BOB, "what do you remember").await;
    assert!(
        end["response"]
            .as_str()
            .unwrap()
            .starts_with("I don't remember anything"),
        "{end}"
    );
    // The user sees the item through the store API; the other user does not.
    let search = |key: &'static str| {
        s.client
            .post(s.url("/store/items/search"))
            .header("x-api-key", key)
            .json(&json!({"namespace_prefix": ["palassist", "memories"]}))
            .send()
    };
    let found: Value = search(ADA).await.unwrap().json().await.unwrap();
    assert_eq!(found["items"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(
        found["items"][0]["value"]["text"],
        "I prefer answers in bullet points"
    );
    assert_eq!(found["items"][0]["value"]["thread_id"], first.as_str());
    let none: Value = search(BOB).await.unwrap().json().await.unwrap();
    assert_eq!(none["items"], json!([]));

    // Forgetting, by a looser wording.
    let (end, _, _) = say_as(&s, ADA, "Forget that I like bullet points").await;
    assert_eq!(
        end["response"],
        "Done: I forgot that I prefer answers in bullet points."
    );
    let (end, _, _) = say_as(&s, ADA, "what do you remember?").await;
    assert!(
        end["response"]
            .as_str()
            .unwrap()
            .starts_with("I don't remember anything"),
        "{end}"
    );
    // The conversation keeps the exchange like any other turn.
    let h: Value = s
        .client
        .get(s.url(&format!("/chat/history/{first}")))
        .header("x-api-key", ADA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{h}");
}
both_backends!(
    palassist_remembers_,
    palassist_remembers_across_conversations_per_user
);
