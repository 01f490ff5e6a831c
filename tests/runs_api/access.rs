//! Who may do what through the runs API, and what bad input gets: threads belong to their
//! user, bad requests are clear JSON errors that change nothing, and creating an assistant
//! that exists is a 409 unless asked to do nothing.

use super::*;

async fn threads_belong_to_their_user(b: Backend) {
    let s = TestServer::start_with(b, &[("PALGRAPH_API_KEYS", "key-a=alice,key-b=bob")]).await;
    let a = |r: reqwest::RequestBuilder| r.header("x-api-key", "key-a");
    let bo = |r: reqwest::RequestBuilder| r.header("authorization", "Bearer key-b");
    let r = s
        .client
        .post(s.url("/threads"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "no credentials");
    let t: Value = a(s.client.post(s.url("/threads")))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tid = t["thread_id"].as_str().unwrap();
    assert_eq!(
        a(s.client.get(s.url(&format!("/threads/{tid}"))))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        bo(s.client.get(s.url(&format!("/threads/{tid}"))))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        bo(s.client.get(s.url(&format!("/threads/{tid}/state"))))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let r = bo(s.client.post(s.url(&format!("/threads/{tid}/runs"))))
        .json(&json!({"assistant_id": "fanout", "input": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        bo(s.client.post(s.url(&format!("/threads/{tid}/cancel"))))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let mine: Value = bo(s.client.post(s.url("/threads/search")))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        mine.as_array().unwrap().is_empty(),
        "bob sees none of alice's threads"
    );
}
both_backends!(threads_belong_to_their_user_, threads_belong_to_their_user);

/// A run's thread is checked by the create itself (no read before it): a thread keeps the
/// graph whose state it holds, whichever way the run names it, and a thread that only names
/// another graph in its metadata (no state, nothing running) may change graphs.
async fn a_thread_keeps_the_graph_whose_state_it_holds(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let streaming = json!({"assistant_id": "streaming", "input": slow(3, 0)});
    let (code, run) = s
        .post_json(&format!("/threads/{t}/runs/wait"), streaming.clone())
        .await;
    assert_eq!(code, 200, "{run}");
    let (code, err) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "fanout", "input": {}}),
        )
        .await;
    assert_eq!(code, 409, "{err}");
    assert_eq!(err["code"], "graph_mismatch", "{err}");
    let (_, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "nothing created: {runs}");
    // The same graph goes on.
    let (code, again) = s
        .post_json(&format!("/threads/{t}/runs/wait"), streaming.clone())
        .await;
    assert_eq!(code, 200, "{again}");

    // Named in metadata only: the run goes on, and the thread now names its graph.
    let (code, named) = s
        .post_json("/threads", json!({"metadata": {"graph_id": "fanout"}}))
        .await;
    assert_eq!(code, 200, "{named}");
    let u = named["thread_id"].as_str().unwrap();
    let (code, run) = s
        .post_json(&format!("/threads/{u}/runs/wait"), streaming.clone())
        .await;
    assert_eq!(code, 200, "{run}");
    let (_, thread) = s.get_json(&format!("/threads/{u}")).await;
    assert_eq!(thread["metadata"]["graph_id"], "streaming", "{thread}");

    // A thread created with the run (`if_not_exists`) is the run's graph's.
    let v = uuid::Uuid::new_v4().to_string();
    let (code, run) = s
        .post_json(
            &format!("/threads/{v}/runs/wait"),
            json!({"assistant_id": "streaming", "input": slow(2, 0), "if_not_exists": "create"}),
        )
        .await;
    assert_eq!(code, 200, "{run}");
    let (_, thread) = s.get_json(&format!("/threads/{v}")).await;
    assert_eq!(thread["metadata"]["graph_id"], "streaming", "{thread}");
}
both_backends!(
    a_thread_keeps_the_graph_whose_state_it_holds_,
    a_thread_keeps_the_graph_whose_state_it_holds
);

async fn bad_requests_get_clear_errors_and_change_nothing(b: Backend) {
    let s = TestServer::start(b).await;
    let t = s.new_thread().await;
    let r = s
        .client
        .post(s.url(&format!("/threads/{t}/runs")))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        422,
        "malformed JSON is 422, as on the official server"
    );
    assert!(r.json::<Value>().await.unwrap()["detail"]
        .as_str()
        .unwrap()
        .contains("malformed JSON"));
    let (code, err) = s
        .post_json(&format!("/threads/{t}/runs"), json!({"input": {}}))
        .await;
    assert_eq!(code, 422, "{err}");
    let (code, _) = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "nope", "input": {}}),
        )
        .await;
    assert_eq!(code, 404);
    let (code, err) = s
        .post_json(
            "/threads/not-a-uuid/runs",
            json!({"assistant_id": "fanout", "input": {}}),
        )
        .await;
    assert_eq!(code, 422, "{err}");
    let (code, err) = s
        .post_json(
            &format!("/threads/{}/runs", uuid::Uuid::new_v4()),
            json!({"assistant_id": "fanout", "input": {}}),
        )
        .await;
    assert_eq!(code, 404, "{err}");
    // Input that does not fit the graph's state is refused at admission (the engine's own
    // check), before a run exists.
    let (code, err) = s
        .post_json(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "fanout", "input": {"no_such_field": 1}}),
        )
        .await;
    assert_eq!(code, 422, "{err}");
    assert!(
        err["detail"].as_str().unwrap().contains("no_such_field"),
        "{err}"
    );
    // Over the 1 MiB limit of thread bodies. A separate client: the server closes the
    // connection after refusing the body.
    let big = "x".repeat(2 * 1024 * 1024);
    let once = reqwest::Client::new();
    let r = once
        .post(s.url("/threads"))
        .header("content-type", "application/json")
        .body(format!("{{\"metadata\": {{\"x\": \"{big}\"}}}}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let (_, runs) = s.get_json(&format!("/threads/{t}/runs")).await;
    assert!(
        runs.as_array().unwrap().is_empty(),
        "no refused request made a run: {runs}"
    );
    let (_, state) = s.get_json(&format!("/threads/{t}/state")).await;
    assert!(
        state["checkpoint"].is_null() || state["values"] == json!({}),
        "{state}"
    );
    let (code, _) = s.get_json("/openapi.json").await;
    assert_eq!(code, 200);
}
both_backends!(
    bad_requests_get_clear_errors_and_change_nothing_,
    bad_requests_get_clear_errors_and_change_nothing
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_an_assistant_that_exists_is_409_and_do_nothing_returns_it() {
    let s = TestServer::start(Backend::Sqlite).await;
    let (_, found) = s.get_json("/assistants/streaming").await;
    let id = found["assistant_id"].as_str().unwrap().to_string();
    let body = json!({"graph_id": "streaming", "assistant_id": id});
    let (code, err) = s.post_json("/assistants", body.clone()).await;
    assert_eq!(code, 409, "{err}");
    assert_eq!(err["code"], "assistant_exists", "{err}");
    let mut keep = body;
    keep["if_exists"] = json!("do_nothing");
    let (code, same) = s.post_json("/assistants", keep).await;
    assert_eq!((code, &same["assistant_id"]), (200, &json!(id)));
    // Another assistant of the graph is still not supported.
    let (code, _) = s
        .post_json(
            "/assistants",
            json!({"graph_id": "streaming", "assistant_id": "x"}),
        )
        .await;
    assert_eq!(code, 501);
}
