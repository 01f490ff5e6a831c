"""Details of the LangGraph API that the official clients rely on beyond the main flows,
each checked the way that client meets it, against a running palgraph server.

Usage: python sdk_gaps.py http://127.0.0.1:PORT

- agent-chat-ui's passthrough proxy forwards bodies with no Content-Type: raw requests
  without the header are read as JSON on every JSON endpoint;
- error statuses and the SDK's exception classes match the official server's: a
  non-UUID thread or run id is 422 (`UnprocessableEntityError`, "Invalid thread ID: must
  be a UUID"), malformed JSON 422, `update_state` on a thread made with a graph that never
  ran is 200 (it writes the first checkpoint), one with no graph 400 (`BadRequestError`);
- a run that stops at `interrupt()` is `success` (its thread `interrupted`), found by
  `runs.list(status="success")`; a cancelled run is `interrupted`;
- the stream's `metadata` event has an SSE id, and `__interrupt__` items carry the
  `response_schema` the graph declares (and none when it declares none);
- a message whose content is a list of blocks (agent-chat-ui's image and PDF attachments)
  is stored and returned whole; PalAssist answers from its text and says what it could
  not read;
- the thread streaming protocol (`client.threads.stream()`: `POST /threads/{id}/commands`
  and `/stream/events`): run.start, values, messages token by token, an interrupt
  answered with `run.respond`, the output, a second session on the same thread; and
  `RemoteGraph.astream_events(version="v3")` of `langgraph`, which drives it.

Every step prints one `ok` line; the script exits non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import httpx
from langgraph.pregel.remote import RemoteGraph
from langgraph_sdk import get_client
from langgraph_sdk.errors import BadRequestError, NotFoundError, UnprocessableEntityError
from checks import ok, passed

URL = sys.argv[1]


def approval_input(topic: str) -> dict:
    return {"messages": [{"role": "user", "content": topic}]}


async def raw(http: httpx.AsyncClient, path: str, body: dict | str) -> httpx.Response:
    """POSTs `body` as a proxy that drops the header does: bytes, no Content-Type."""
    content = body if isinstance(body, str) else json.dumps(body)
    req = http.build_request("POST", path, content=content.encode())
    req.headers.pop("content-type", None)
    assert "content-type" not in req.headers
    return await http.send(req)


async def no_content_type(client, http: httpx.AsyncClient) -> None:
    mark = str(uuid.uuid4())
    r = await raw(http, "/threads", {"metadata": {"via": mark}})
    ok(r.status_code == 200, f"POST /threads without Content-Type: {r.status_code} {r.text}")
    tid = r.json()["thread_id"]
    r = await raw(http, "/threads/search", {"metadata": {"via": mark}})
    ok(r.status_code == 200 and [t["thread_id"] for t in r.json()] == [tid], "POST /threads/search without Content-Type")
    r = await raw(http, "/assistants/search", {"graph_id": "approval"})
    ok(r.status_code == 200 and r.json()[0]["graph_id"] == "approval", "POST /assistants/search without Content-Type")
    r = await raw(http, f"/threads/{tid}/runs/wait", {"assistant_id": "approval", "input": approval_input("proxy")})
    ok(r.status_code == 200 and r.json()["__interrupt__"], f"POST /runs/wait without Content-Type: {r.status_code} {r.text}")
    r = await raw(http, f"/threads/{tid}/runs/stream", {"assistant_id": "approval", "command": {"resume": {"approve": True}}, "stream_mode": ["values"]})
    ok(r.status_code == 200 and "Published: Draft 1" in r.text, f"POST /runs/stream without Content-Type: {r.status_code}")
    r = await raw(http, f"/threads/{tid}/state", {"values": {"draft": "edited by a proxy"}, "as_node": "draft"})
    ok(r.status_code == 200, f"POST /threads/{{id}}/state without Content-Type: {r.status_code} {r.text}")
    st = await client.threads.get_state(tid)
    ok(st["values"]["draft"] == "edited by a proxy", "the state update through the proxy landed")
    r = await raw(http, f"/threads/{tid}/runs", {"assistant_id": "approval", "input": approval_input("again")})
    ok(r.status_code == 200 and r.json()["status"] in ("pending", "running"), "POST /runs without Content-Type")
    await client.runs.join(tid, r.json()["run_id"])
    r = await raw(http, f"/threads/{tid}/history", {"limit": 2})
    ok(r.status_code == 200 and len(r.json()) == 2, "POST /history without Content-Type")
    r = await raw(http, "/runs/wait", {"assistant_id": "fanout", "input": {}})
    ok(r.status_code == 200, f"stateless POST /runs/wait without Content-Type: {r.status_code} {r.text}")
    # Malformed JSON: 422, as on the official server, and nothing is made.
    before = len(await client.runs.list(tid, limit=100))
    r = await raw(http, f"/threads/{tid}/runs", "{not json")
    ok(r.status_code == 422 and "malformed JSON" in r.json()["detail"], f"malformed JSON is 422: {r.status_code}")
    r = await http.post(f"/threads/{tid}/runs", content=b"{not json", headers={"content-type": "application/json"})
    ok(r.status_code == 422, "malformed JSON with a Content-Type is 422 too")
    ok(len(await client.runs.list(tid, limit=100)) == before, "a malformed request made no run")


async def error_classes(client) -> None:
    async def raises(cls, coro, what: str, text: str | None = None) -> None:
        try:
            await coro
        except cls as e:
            ok(text is None or text in str(e) or text in json.dumps(getattr(e, "body", None)), f"{what}: {cls.__name__} ({e})")
            return
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{what}: raised {type(e).__name__} ({e}), not {cls.__name__}")
        raise AssertionError(f"{what}: no error")

    bad = "Invalid thread ID: must be a UUID"
    await raises(UnprocessableEntityError, client.threads.get("not-a-uuid"), "threads.get(non-UUID)", bad)
    await raises(UnprocessableEntityError, client.threads.get_state("not-a-uuid"), "threads.get_state(non-UUID)", bad)
    await raises(UnprocessableEntityError, client.threads.update_state("not-a-uuid", {}), "threads.update_state(non-UUID)", bad)
    await raises(UnprocessableEntityError, client.runs.create("not-a-uuid", "approval", input={}), "runs.create(non-UUID thread)", bad)
    # runs.wait raises httpx's error itself (its reconnecting request), against the official
    # server too: the status is what matters there.
    try:
        await client.runs.wait("not-a-uuid", "approval", input={})
        raise AssertionError("runs.wait(non-UUID thread): no error")
    except httpx.HTTPStatusError as e:
        ok(e.response.status_code == 422 and bad in e.response.text, "runs.wait(non-UUID thread): 422")
    await raises(UnprocessableEntityError, client.threads.create(thread_id="not-a-uuid"), "threads.create(thread_id=non-UUID)", bad)
    t = await client.threads.create()
    await raises(UnprocessableEntityError, client.runs.get(t["thread_id"], "not-a-uuid"), "runs.get(non-UUID run)", "Invalid run ID: must be a UUID")
    await raises(NotFoundError, client.threads.get("00000000-0000-4000-8000-000000000000"), "threads.get(unknown UUID)")
    # update_state on a thread that never ran: made with its graph, it writes the first
    # checkpoint (200); made with no graph there is nothing to update it with (400).
    made = await client.threads.create(graph_id="approval")
    up = await client.threads.update_state(made["thread_id"], {"draft": "written before any run"}, as_node="draft")
    ok(up["checkpoint"]["checkpoint_id"], "update_state on a thread that never ran: 200 with its first checkpoint")
    st = await client.threads.get_state(made["thread_id"])
    ok(st["values"]["draft"] == "written before any run" and st["next"] == ["review"], "the update is the thread's state, review next")
    await raises(BadRequestError, client.threads.update_state(t["thread_id"], {"draft": "x"}), "update_state on a thread with no graph", "has no graph ID")


async def run_status_on_interrupt(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    created = []
    parts = [
        p
        async for p in client.runs.stream(tid, "approval", input=approval_input("statuses"), stream_mode="values", on_run_created=created.append)
    ]
    run_id = created[0]["run_id"]
    intr = parts[-1].data["__interrupt__"][0]
    run = await client.runs.get(tid, run_id)
    ok(run["status"] == "success", f"a run that stopped at interrupt() is success: {run['status']}")
    ok((await client.threads.get(tid))["status"] == "interrupted", "its thread is interrupted")
    found = await client.runs.list(tid, status="success")
    ok([r["run_id"] for r in found] == [run_id], "runs.list(status='success') finds it")
    ok(await client.runs.list(tid, status="interrupted") == [], "runs.list(status='interrupted') does not")
    # The metadata event carries an SSE id; the interrupt its response schema.
    meta = parts[0]
    ok(meta.event == "metadata" and meta.id is not None and meta.data["run_id"] == run_id, f"the metadata event has an SSE id ({meta.id})")
    ids = [int(p.id) for p in parts]
    ok(ids == sorted(set(ids)), f"SSE ids are unique and increasing: {ids}")
    schema = intr.get("response_schema")
    ok(schema is not None and set(schema["properties"]) >= {"approve", "note"} and "approve" in schema["required"], f"__interrupt__ carries the declared response_schema: {schema}")
    st = await client.threads.get_state(tid)
    ok(st["tasks"][0]["interrupts"][0].get("response_schema") == schema, "the state's task interrupts carry it too")
    th = await client.threads.get(tid)
    listed = [i for items in th["interrupts"].values() for i in items]
    ok(listed[0]["id"] == intr["id"] and listed[0].get("response_schema") == schema, "and the thread's interrupts")
    # Resuming it with a value of that shape finishes the turn.
    done = await client.runs.wait(tid, "approval", command={"resume": {"approve": True}})
    ok(done["messages"][-1]["content"].startswith("Published:"), "the resume that fits the schema publishes")
    # A graph that declares no schema: its interrupts have none (PalAssist's prompts).
    p = await client.threads.create()
    vals = await client.runs.wait(p["thread_id"], "palassist", input={"messages": [{"role": "user", "content": "compare them"}], "action": "compare"})
    if "__interrupt__" in vals:
        ok("response_schema" not in vals["__interrupt__"][0], "an interrupt with no declared schema has no response_schema")
    # A cancelled run stays `interrupted`.
    c = await client.threads.create()
    created = []
    stream = client.runs.stream(
        c["thread_id"],
        "streaming",
        input={"messages": [{"role": "user", "content": "cancel me"}], "words": 1000, "delay_ms": 10},
        stream_mode="messages-tuple",
        on_run_created=created.append,
    )
    chunks = 0
    async for part in stream:
        if part.event == "messages":
            chunks += 1
            if chunks == 3:
                break
    await stream.aclose()
    await client.runs.cancel(c["thread_id"], created[0]["run_id"], wait=True)
    r = await client.runs.get(c["thread_id"], created[0]["run_id"])
    ok(r["status"] == "interrupted", f"a cancelled run is interrupted: {r['status']}")
    ok([x["run_id"] for x in await client.runs.list(c["thread_id"], status="interrupted")] == [created[0]["run_id"]], "runs.list(status='interrupted') finds the cancelled run")


ATTACHED = [
    {"type": "text", "text": "Summarize the AML/KYC Policy"},
    {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
    {"type": "file", "mimeType": "application/pdf", "data": "JVBERi0xLjQKJcOkw7zDtsOf", "metadata": {"filename": "report.pdf"}},
]


async def multimodal(client, http: httpx.AsyncClient) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(tid, "palassist", input={"messages": [{"type": "human", "content": ATTACHED}]}, stream_mode=["values"])
    ]
    vals = parts[-1].data
    human = vals["messages"][0]
    ok(human["type"] == "human" and human["content"] == ATTACHED, "the message's content blocks come back whole in the stream's values")
    st = await client.threads.get_state(tid)
    ok(st["values"]["messages"][0]["content"] == ATTACHED, "and in the thread's state")
    hist = await client.threads.get_history(tid, limit=1)
    ok(hist[0]["values"]["messages"][0]["content"] == ATTACHED, "and in its history")
    answer = vals["messages"][-1]
    ok(answer["type"] == "ai" and "Anti-Money Laundering" in answer["content"], "PalAssist answered from the text part")
    said = answer["content"].split("\n\n", 1)[0]
    ok(said.startswith("_Note: I read only the text") and "the image (image/png)" in said and "the PDF report.pdf" in said, f"and says what it could not read: {said}")
    ok(any("the image (image/png)" in n for n in answer["metadata"]["notices"]), "the notice is with the answer's notices too")
    r = await http.get(f"/chat/history/{tid}")
    ok(r.status_code == 200 and r.json()["messages"][0]["content"] == "Summarize the AML/KYC Policy", "the chat history shows the message's text")
    # A plain text message stays a string, with no note.
    plain = await client.runs.wait(tid, "palassist", input={"messages": [{"type": "human", "content": "Summarize the AML/KYC Policy"}]})
    ok(plain["messages"][-2]["content"] == "Summarize the AML/KYC Policy" and not plain["messages"][-1]["content"].startswith("_Note"), "a text message is a string and gets no note")


async def thread_stream_protocol(client, http: httpx.AsyncClient) -> None:
    # A human-in-the-loop run: values as they come, the interrupt, the answer, the output.
    async with client.threads.stream(assistant_id="approval") as t:
        started = await t.run.start(input=approval_input("protocol"))
        ok(isinstance(started.get("run_id"), str), f"thread.run.start: {started}")
        snaps = [v async for v in t.values]
        ok(snaps and snaps[-1]["draft"] == 'Draft 1 about "protocol".', "thread.values streams the state")
        ok(t.interrupted and len(t.interrupts) == 1, f"the interrupt arrives on the input channel: {t.interrupts}")
        intr = t.interrupts[0]
        ok(intr["value"]["question"] == "Publish this draft?" and intr["namespace"] == [], "with its payload, at the root namespace")
        tid = t.thread_id
        st = await client.threads.get_state(tid)
        ok(st["tasks"][0]["interrupts"][0]["id"] == intr["interrupt_id"], "the same interrupt id as the REST state")
        await t.run.respond({"approve": True})
        out = await asyncio.wait_for(t.output, 30)
        ok(out["messages"][-1]["content"] == 'Published: Draft 1 about "protocol".', "run.respond resumes it; thread.output is the final state")
    runs = await client.runs.list(tid)
    ok(len(runs) == 2 and all(r["status"] == "success" for r in runs), "two runs, both success (the first stopped at the interrupt)")
    # Token by token: one chat-model stream per message, its deltas, its whole text.
    async with client.threads.stream(assistant_id="streaming") as t:
        await t.run.start(input={"messages": [{"role": "user", "content": "one two three four"}], "words": 4, "delay_ms": 10})
        readers = []

        async def read(m):
            return m.node, [d async for d in m.text], await m.output

        async for m in t.messages:
            readers.append(asyncio.create_task(read(m)))
        got = [await r for r in readers]
        ok(len(got) == 1, f"thread.messages: one message ({len(got)})")
        node, deltas, msg = got[0]
        ok(node == "write" and "".join(deltas) == "one two three four" and len(deltas) == 4, f"its text arrives word by word: {deltas}")
        ok(msg.id == "answer-" + msg.id.removeprefix("answer-") and msg.text == "one two three four", "and ends as the whole message")
        out = await asyncio.wait_for(t.output, 30)
        ok(out["messages"][-1]["content"] == "one two three four", "thread.output after a streamed run")
        sid = t.thread_id
    # A second session on the same thread sees its own run's end, not the earlier one's.
    async with client.threads.stream(sid, assistant_id="streaming") as t2:
        await t2.run.start(input={"messages": [{"role": "user", "content": "five six"}], "words": 2, "delay_ms": 0})
        out = await asyncio.wait_for(t2.output, 30)
        ok(out["messages"][-1]["content"] == "five six" and len(out["messages"]) == 4, "a second session on the thread waits for its own run")
    # A stream opened after a short run ended, beside the watcher that carried it, replays
    # the run from its start to its end (the JS SDK re-opens its stream this way).
    async with client.threads.stream(assistant_id="streaming") as t3:
        await t3.run.start(input={"messages": [{"role": "user", "content": "seven"}], "words": 1, "delay_ms": 0})
        await asyncio.wait_for(t3.output, 30)

        async def until_end():
            seen = []
            async for e in t3.events:
                seen.append(e["method"])
                if e["method"] == "lifecycle" and e["params"]["data"]["event"] in ("completed", "failed"):
                    return seen, e["params"]["data"]["event"]

        seen, end = await asyncio.wait_for(until_end(), 30)
        ok(end == "completed" and seen[0] == "lifecycle" and "messages" in seen and "values" in seen, f"thread.events opened after the run ended replays it: {seen}")
    # The commands' answers and refusals, as the protocol words them.
    r = await http.post(f"/threads/{sid}/commands", json={"id": 7, "method": "state.get", "params": {"namespace": [], "keys": ["words"]}})
    ok(r.status_code == 200 and r.json()["type"] == "success" and r.json()["id"] == 7 and r.json()["result"]["values"] == {"words": 2}, f"state.get: {r.text}")
    r = await http.post(f"/threads/{sid}/commands", json={"id": 8, "method": "state.listCheckpoints", "params": {"limit": 2}})
    ok(r.status_code == 200 and len(r.json()["result"]["checkpoints"]) == 2, "state.listCheckpoints")
    r = await http.post(f"/threads/{sid}/commands", json={"id": 9, "method": "input.respond", "params": {"namespace": [], "interrupt_id": "0" * 32, "response": 1}})
    ok(r.json()["type"] == "error" and r.json()["error"] == "no_such_interrupt", f"input.respond with nothing waiting: {r.text}")
    r = await http.post(f"/threads/{sid}/commands", json={"id": 10, "method": "no.such", "params": {}})
    ok(r.json() == {"type": "error", "id": 10, "error": "unknown_command", "message": "unknown command `no.such`"}, "an unknown command")
    r = await http.post("/threads/not-a-uuid/commands", json={"id": 1, "method": "state.get", "params": {}})
    ok(r.status_code == 422, "a non-UUID thread is 422 here too")
    # RemoteGraph (langgraph) over the same protocol, on a thread id it picks.
    remote = RemoteGraph("approval", url=URL)
    cfg = {"configurable": {"thread_id": str(uuid.uuid4())}}
    async with await remote.astream_events(approval_input("remote"), cfg, version="v3") as run:
        snaps = [v async for v in run.values]
        ok(snaps[-1]["draft"] == 'Draft 1 about "remote".', "RemoteGraph.astream_events(version='v3'): values")
        pending = await run.interrupts()
        ok(await run.interrupted() and pending[0]["value"]["question"] == "Publish this draft?", "and its interrupt")
    streaming = RemoteGraph("streaming", url=URL)
    cfg = {"configurable": {"thread_id": str(uuid.uuid4())}}
    async with await streaming.astream_events({"messages": [{"role": "user", "content": "x y z"}], "words": 3, "delay_ms": 5}, cfg, version="v3") as run:
        out = await asyncio.wait_for(run.output(), 30)
        ok(out["messages"][-1]["content"] == "x y z", "and run.output() for a run to its end")


async def main() -> None:
    client = get_client(url=URL)
    async with httpx.AsyncClient(base_url=URL, timeout=30) as http:
        await no_content_type(client, http)
        await multimodal(client, http)
        await thread_stream_protocol(client, http)
    await error_classes(client)
    await run_status_on_interrupt(client)
    print(f"all {passed()} checks passed", flush=True)


asyncio.run(main())
