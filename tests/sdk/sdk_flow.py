"""Drives a running palgraph server through the official Python `langgraph-sdk`.

Usage: python sdk_flow.py http://127.0.0.1:PORT

Every step asserts what the SDK returned and prints one `ok` line; the script exits
non-zero on the first failure. Graphs used: `streaming` (word-by-word answer, `delay_ms`
per word), `approval` (an interrupt asking to publish a draft), `fanout`, `palassist`.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)
from langgraph_sdk.schema import Command
from checks import ok, passed

URL = sys.argv[1]


def words_input(text: str, words: int, delay_ms: int) -> dict:
    return {
        "messages": [{"role": "user", "content": text}],
        "words": words,
        "delay_ms": delay_ms,
    }


async def collect(stream) -> list:
    return [part async for part in stream]


async def wait_status(client, thread_id: str, run_id: str, want: str) -> dict:
    for _ in range(400):
        run = await client.runs.get(thread_id, run_id)
        if run["status"] == want:
            return run
        await asyncio.sleep(0.025)
    raise AssertionError(f"run {run_id} never reached {want}")


async def started_run(client, thread_id: str, input: dict, **kw) -> dict:
    """Starts a streaming-graph run and returns once it has written a few words."""
    created = []
    chunks = 0
    stream = client.runs.stream(thread_id, "streaming", input=input, stream_mode="messages-tuple", on_run_created=created.append, **kw)
    async for part in stream:
        if part.event == "messages":
            chunks += 1
            if chunks == 3:
                break
    await stream.aclose()
    return {"run_id": created[0]["run_id"]}


async def wait_gone(client, thread_id: str, run_id: str, what: str) -> None:
    """A rolled back run is deleted right after its end is recorded."""
    for _ in range(200):
        try:
            await client.runs.get(thread_id, run_id)
        except NotFoundError:
            ok(True, what)
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def expect(exc_type, coro, what: str, status: int | None = None):
    """`coro` fails with `exc_type` (the SDK's typed errors; `runs.wait` raises httpx's
    HTTPStatusError, whose subclasses they are) and, when given, this status."""
    try:
        await coro
    except exc_type as e:
        code = e.response.status_code
        if status is not None and code != status:
            raise AssertionError(f"{what}: status {code}, expected {status}") from e
        ok(True, f"{what} ({code} {type(e).__name__})")
        return e
    raise AssertionError(f"{what}: no {exc_type.__name__}")


async def assistants_and_threads(client) -> None:
    info = await client.http.get("/info")
    ok("version" in info, "GET /info")
    found = await client.assistants.search(limit=10)
    graphs = {a["graph_id"] for a in found}
    ok({"palassist", "approval", "fanout", "streaming"} <= graphs, "assistants.search lists a default assistant per graph")
    page = await client.assistants.search(limit=1, response_format="object")
    ok(len(page["assistants"]) == 1 and page["next"] == "1", "assistants.search pages with X-Pagination-Next")
    ok(await client.assistants.count() == len(found), "assistants.count")
    a = await client.assistants.get("approval")
    ok(a["graph_id"] == "approval", "assistants.get by graph name")
    same = await client.assistants.get(a["assistant_id"])
    ok(same["assistant_id"] == a["assistant_id"], "assistants.get by assistant id")
    g = await client.assistants.get_graph(a["assistant_id"])
    ok({n["id"] for n in g["nodes"]} >= {"draft", "review", "publish"}, "assistants.get_graph")
    schemas = await client.assistants.get_schemas("palassist")
    ok("messages" in schemas["state_schema"]["properties"], "assistants.get_schemas (palassist state schema)")
    schemas = await client.assistants.get_schemas("approval")
    ok("draft" in schemas["input_schema"]["properties"], "assistants.get_schemas (approval fields)")
    ok(await client.assistants.get_subgraphs("approval") == {}, "assistants.get_subgraphs (none)")
    await expect(NotFoundError, client.assistants.get("no-such-graph"), "unknown assistant is 404")

    tid = str(uuid.uuid4())
    t = await client.threads.create(thread_id=tid, metadata={"team": "sdk"}, graph_id="approval")
    ok(t["thread_id"] == tid and t["metadata"]["graph_id"] == "approval", "threads.create with id, metadata, graph_id")
    again = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    ok(again["thread_id"] == tid, "threads.create if_exists=do_nothing returns the thread")
    await expect(ConflictError, client.threads.create(thread_id=tid), "threads.create twice is 409")
    got = await client.threads.get(tid)
    ok(got["status"] == "idle" and got["interrupts"] == {}, "threads.get (idle, no interrupts)")
    found = await client.threads.search(metadata={"team": "sdk"}, limit=100)
    ok([x["thread_id"] for x in found] == [tid], "threads.search by metadata")
    ok(await client.threads.count(metadata={"team": "sdk"}) == 1, "threads.count")
    others = [(await client.threads.create(metadata={"team": "sort"}))["thread_id"] for _ in range(3)]
    by_id = await client.threads.search(metadata={"team": "sort"}, sort_by="thread_id", sort_order="asc", select=["thread_id", "status"])
    ok([x["thread_id"] for x in by_id] == sorted(others) and set(by_id[0]) == {"thread_id", "status"}, "threads.search sort_by/sort_order/select")
    page = await client.threads.search(metadata={"team": "sort"}, limit=2, offset=1)
    ok(len(page) == 2, "threads.search limit/offset")
    await expect(UnprocessableEntityError, client.threads.search(status="sleeping"), "an unknown thread status is 422")
    upd = await client.threads.update(tid, metadata={"team": "sdk", "extra": 1})
    ok(upd["metadata"]["extra"] == 1 and upd["metadata"]["graph_id"] == "approval", "threads.update merges metadata")
    copy = await client.threads.copy(tid)
    ok(copy["thread_id"] != tid, "threads.copy")
    await client.threads.delete(copy["thread_id"])
    await expect(NotFoundError, client.threads.get(copy["thread_id"]), "threads.delete")
    await client.threads.delete(tid)


async def streaming_modes(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    created = []
    parts = await collect(
        client.runs.stream(
            tid,
            "streaming",
            input=words_input("alpha beta gamma", 6, 0),
            stream_mode=["values", "updates", "messages-tuple", "custom", "debug", "tasks", "checkpoints", "events"],
            stream_subgraphs=True,
            on_run_created=created.append,
        )
    )
    names = [p.event for p in parts]
    ok(names[0] == "metadata" and parts[0].data["run_id"] == created[0]["run_id"], "runs.stream starts with metadata; on_run_created got the run id")
    ok(created[0]["thread_id"] == tid, "Content-Location gives the thread id")
    chunks = [p.data for p in parts if p.event == "messages"]
    ok(len(chunks) == 6 and chunks[0][0]["type"] == "AIMessageChunk", "messages-tuple: one chunk per word")
    ok(chunks[0][1]["langgraph_node"] == "write" and isinstance(chunks[0][1]["tags"], list), "messages-tuple metadata names the node")
    ok("".join(c[0]["content"] for c in chunks) == "alpha beta gamma alpha beta gamma", "chunks add up to the answer")
    updates = [p.data for p in parts if p.event == "updates"]
    ok(updates and "write" in updates[-1], "updates: {node: update}")
    values = [p.data for p in parts if p.event == "values"]
    ok(len(values[-1]["messages"]) == 2, "values: the final state has both messages")
    custom = [p.data for p in parts if p.event == "custom"]
    ok(any(c.get("type") == "status" for c in custom), "custom: status events")
    debug = {p.data["type"] for p in parts if p.event == "debug"}
    ok({"checkpoint", "task", "task_result"} <= debug, "debug: checkpoint, task, task_result")
    ok(any(p.event == "checkpoints" and p.data["next"] == ["write"] for p in parts), "checkpoints mode")
    ok(any(p.event == "tasks" and p.data.get("name") == "write" for p in parts), "tasks mode")
    ok(any(p.event == "events" and p.data["event"] == "on_chat_model_stream" for p in parts), "events mode: on_chat_model_stream")
    ids = [int(p.id) for p in parts if p.id is not None]
    ok(ids == sorted(ids) and len(ids) == len(set(ids)), "event ids unique and increasing")

    # v2 parts and the messages (partial) mode.
    v2 = await collect(
        client.runs.stream(tid, "streaming", input=words_input("one two", 3, 0), stream_mode=["messages", "values"], version="v2")
    )
    partial = [p for p in v2 if p["type"] == "messages/partial"]
    ok(partial and partial[-1]["data"][0]["content"] == "one two one", "messages/partial carries the whole text so far")
    ok(all(p["ns"] == [] for p in v2), "v2 parts: no subgraph namespace")

    # runs.create + runs.join, runs.list, runs.get, runs.wait.
    run = await client.runs.create(tid, "streaming", input=words_input("x y", 2, 0))
    ok(run["status"] in ("pending", "running"), "runs.create returns a pending run")
    final = await client.runs.join(tid, run["run_id"])
    ok(final["messages"][-1]["content"] == "x y", "runs.join returns the final values")
    listed = await client.runs.list(tid)
    ok(len(listed) == 3 and all(r["status"] == "success" for r in listed), "runs.list")
    ok(len(await client.runs.list(tid, limit=1)) == 1 and await client.runs.list(tid, status="error") == [], "runs.list(limit, status)")
    ok((await client.runs.get(tid, run["run_id"]))["status"] == "success", "runs.get")
    waited = await client.runs.wait(tid, "streaming", input=words_input("p q", 2, 0))
    ok(waited["messages"][-1]["content"] == "p q", "runs.wait returns the final values")
    await expect(UnprocessableEntityError, client.runs.create(tid, "streaming", input={}, stream_mode="nope"), "unknown stream mode is 422")
    ok(len(await client.runs.list(tid)) == 4, "a refused run created nothing")

    # A failing run ends its stream with an error event; runs.wait raises it.
    failing = {**words_input("w x y", 3, 0), "fail_after": 1}
    parts = await collect(client.runs.stream(tid, "streaming", input=failing))
    ok(parts[-1].event == "error" and "failed after 1 words" in parts[-1].data["message"], "a failed run streams an error event")
    try:
        await client.runs.wait(tid, "streaming", input=failing)
        raise AssertionError("runs.wait should raise the run's error")
    except Exception as e:  # the SDK raises a plain Exception built from __error__
        ok("failed after 1 words" in str(e), "runs.wait raises the run's __error__")
    await expect(UnprocessableEntityError, client.runs.create(tid, "streaming", input={"no_such_field": 1}), "input that does not fit the state is 422")
    failed = (await client.runs.list(tid, status="error"))[0]
    await client.runs.delete(tid, failed["run_id"])
    await expect(NotFoundError, client.runs.get(tid, failed["run_id"]), "runs.delete")

    # if_not_exists.
    fresh = str(uuid.uuid4())
    await expect(NotFoundError, client.runs.create(fresh, "streaming", input=words_input("a", 1, 0)), "a run on an unknown thread is 404")
    out = await client.runs.wait(fresh, "streaming", input=words_input("made here", 2, 0), if_not_exists="create")
    made = await client.threads.get(fresh)
    ok(out["messages"][-1]["content"] == "made here" and made["metadata"]["graph_id"] == "streaming", "if_not_exists=create makes the thread (metadata.graph_id set)")

    # Stateless runs.
    out = await client.runs.wait(None, "streaming", input=words_input("solo run", 2, 0))
    ok(out["messages"][-1]["content"] == "solo run", "stateless runs.wait")
    parts = await collect(client.runs.stream(None, "fanout", input={"messages": [{"role": "user", "content": "check this"}]}, stream_mode="updates"))
    ok(parts[0].event == "metadata" and len([p for p in parts if p.event == "updates"]) >= 4, "stateless runs.stream (fan-out updates)")

    # durability: applied (sync, the default, or async; exit is served as async), and
    # either way the same stream of updates and the same thread state.
    seen = {}
    for durability in ("sync", "async", "exit"):
        dt = (await client.threads.create())["thread_id"]
        parts = await collect(client.runs.stream(dt, "fanout", input={"messages": [{"role": "user", "content": "check this"}]}, stream_mode=["updates", "checkpoints"], durability=durability))
        seen[durability] = [(p.event, sorted(p.data) if p.event == "updates" else None) for p in parts[1:]]
        state = await client.threads.get_state(dt)
        ok(parts[-1].event != "error" and state["next"] == [] and len(state["values"]["messages"]) >= 2, f"a fanout run with durability={durability} completes")
    ok(seen["sync"] == seen["async"] == seen["exit"], "the same updates and checkpoints, in the same order, in every durability mode")
    await expect(UnprocessableEntityError, client.runs.create(tid, "streaming", input=words_input("a", 1, 0), durability="later"), "an unknown durability is 422")


async def interrupts_and_resume(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    parts = await collect(
        client.runs.stream(tid, "approval", input={"messages": [{"role": "user", "content": "the launch"}]}, stream_mode=["values", "updates"])
    )
    last = [p for p in parts if p.event == "values"][-1].data
    intr = last["__interrupt__"][0]
    ok(intr["value"]["question"] == "Publish this draft?", "values.__interrupt__ carries the interrupt")
    ok(any(p.event == "updates" and "__interrupt__" in p.data for p in parts), "updates.__interrupt__")
    thread = await client.threads.get(tid)
    ok(thread["status"] == "interrupted", "thread status interrupted")
    ok(list(thread["interrupts"].values())[0][0]["id"] == intr["id"], "thread.interrupts by task")
    state = await client.threads.get_state(tid)
    ok(state["next"] == ["review"] and state["tasks"][0]["interrupts"][0]["id"] == intr["id"], "state.tasks[].interrupts")

    # Resume with a scalar value: the reviewer rejects, the graph drafts again and asks again.
    parts = await collect(
        client.runs.stream(tid, "approval", command=Command(resume={"approve": False, "note": "shorter"}), stream_mode="values")
    )
    again = parts[-1].data["__interrupt__"][0]
    ok("Revised for: shorter" in again["value"]["draft"] and again["id"] != intr["id"], "Command(resume=value) answers the interrupt")
    # Several interrupts are not pending, so an unknown id is refused and nothing changes.
    await expect(httpx.HTTPStatusError, client.runs.wait(tid, "approval", command=Command(resume={"0" * 32: {"approve": True}})), "resume with an unknown interrupt id is 400", 400)
    # Resume by interrupt id.
    final = await client.runs.wait(tid, "approval", command=Command(resume={again["id"]: {"approve": True}}))
    ok(final["messages"][-1]["content"].startswith("Published: Draft 2"), "Command(resume={id: value}) answers by id")
    ok((await client.threads.get(tid))["status"] == "idle", "thread idle after the resume")
    await expect(BadRequestError, client.runs.create(tid, "approval", command=Command(resume=True)), "resume with nothing pending is 400")

    # goto + update on a new thread.
    t2 = await client.threads.create()
    out = await client.runs.wait(t2["thread_id"], "approval", command=Command(update={"draft": "Hand-written"}, goto="publish"))
    ok(out["messages"][-1]["content"] == "Published: Hand-written", "Command(update=..., goto=node)")
    await expect(UnprocessableEntityError, client.runs.create(t2["thread_id"], "approval", command=Command(goto="nowhere")), "goto an unknown node is 422")

    # PalAssist's interrupts appear in the same places.
    t3 = await client.threads.create()
    parts = await collect(client.runs.stream(t3["thread_id"], "palassist", input={"messages": [{"role": "user", "content": "Summarize the document"}]}, stream_mode=["values", "updates"]))
    vals = [p.data for p in parts if p.event == "values"]
    st = await client.threads.get_state(t3["thread_id"])
    if "__interrupt__" in vals[-1]:
        ok(st["tasks"][0]["interrupts"][0]["id"] == vals[-1]["__interrupt__"][0]["id"], "palassist interrupt in values and in state tasks")
        thread = await client.threads.get(t3["thread_id"])
        ok(thread["status"] == "interrupted" and thread["interrupts"], "palassist thread interrupted, with its interrupts")
        await client.runs.wait(t3["thread_id"], "palassist", command=Command(resume={"type": "cancel"}))
        ok((await client.threads.get_state(t3["thread_id"]))["interrupts"] == [], "palassist prompt answered with Command(resume=...)")
    else:
        ok(vals[-1]["messages"][-1]["type"] == "ai", "palassist answered through the Agent Server API")


async def join_after_disconnect(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    created = []
    seen = []
    stream = client.runs.stream(
        tid,
        "streaming",
        input=words_input("one two three", 40, 15),
        stream_mode=["messages-tuple", "updates"],
        stream_resumable=True,
        on_run_created=created.append,
    )
    async for part in stream:
        seen.append(part)
        if len(seen) == 6:
            break
    await stream.aclose()  # the client goes away; the run goes on (on_disconnect=continue)
    run_id = created[0]["run_id"]
    rest = await collect(client.runs.join_stream(tid, run_id, last_event_id=seen[-1].id))
    everything = await collect(client.runs.join_stream(tid, run_id, last_event_id="-1"))
    joined = [p for p in seen if p.event != "metadata"] + rest
    replay = [p for p in everything if p.event != "metadata"]
    ok([(p.id, p.event, p.data) for p in joined] == [(p.id, p.event, p.data) for p in replay], "join_stream(last_event_id) resumes exactly where the client left")
    ok(len([p for p in replay if p.event == "messages"]) == 40, "the run went on without a client")
    run = await client.runs.get(tid, run_id)
    ok(run["status"] == "success", "the joined run succeeded")
    live = await collect(client.runs.join_stream(tid, run_id))
    ok(live == [], "join_stream without an id tails live output (nothing left of a finished run)")

    # The thread's stream follows its runs.
    run = await client.runs.create(tid, "streaming", input=words_input("thread stream", 20, 50), stream_mode=["values"])
    got = []
    async for part in await client.threads.join_stream(tid, last_event_id="-"):
        got.append(part)
        if part.event == "values" and part.data["messages"][-1]["content"].startswith("thread stream thread"):
            break
    ok(got[0].event == "metadata" and got[0].data["run_id"] == run["run_id"], "threads.join_stream follows the thread's run")

    # A stateless run's thread is deleted when it ends (on_completion=delete, the default).
    before = await client.threads.count()
    created = []
    await client.runs.wait(None, "streaming", input=words_input("temp", 1, 0), on_run_created=created.append)
    for _ in range(100):
        if await client.threads.count() == before:
            break
        await asyncio.sleep(0.02)
    await expect(NotFoundError, client.threads.get(created[0]["thread_id"]), "a stateless run's thread is deleted after it")
    kept = await client.runs.wait(None, "streaming", input=words_input("keep", 1, 0), on_completion="keep", on_run_created=created.append)
    ok(kept["messages"][-1]["content"] == "keep" and (await client.threads.get(created[1]["thread_id"]))["status"] == "idle", "on_completion=keep keeps it")


async def cancel(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    run = await started_run(client, tid, words_input("slow words here", 1000, 10))
    await client.runs.cancel(tid, run["run_id"], wait=True)
    r = await client.runs.get(tid, run["run_id"])
    ok(r["status"] == "interrupted", "runs.cancel(wait=True): the run is interrupted")
    st = await client.threads.get_state(tid)
    last = st["values"]["messages"][-1]
    ok(last["metadata"]["interrupted"] is True and 0 < len(last["content"].split()) < 1000, "cancel keeps the partial answer")
    await client.runs.cancel(tid, run["run_id"])
    ok(True, "runs.cancel is idempotent")
    before = len(await client.threads.get_history(tid, limit=1000))
    run = await client.runs.create(tid, "streaming", input=words_input("roll back", 1000, 10))
    await wait_status(client, tid, run["run_id"], "running")
    await client.runs.cancel(tid, run["run_id"], wait=True, action="rollback")
    await expect(NotFoundError, client.runs.get(tid, run["run_id"]), "runs.cancel(action=rollback) deletes the run")
    ok(len(await client.threads.get_history(tid, limit=1000)) == before, "rollback removed the run's checkpoints")
    run = await client.runs.create(tid, "streaming", input=words_input("bulk", 1000, 10))
    await wait_status(client, tid, run["run_id"], "running")
    await client.runs.cancel_many(thread_id=tid, run_ids=[run["run_id"]])
    await wait_status(client, tid, run["run_id"], "interrupted")
    ok(True, "runs.cancel_many by ids")
    run = await started_run(client, tid, words_input("all of them", 1000, 10))
    await client.runs.cancel_many(status="running")
    await wait_status(client, tid, run["run_id"], "interrupted")
    ok(True, "runs.cancel_many(status=running)")


async def history_and_fork(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    await client.runs.wait(tid, "streaming", input=words_input("first question", 2, 0))
    await client.runs.wait(tid, "streaming", input=words_input("second question", 2, 0))
    history = await client.threads.get_history(tid, limit=10)
    ok(len(history) == 4 and history[0]["values"]["messages"][-1]["content"] == "second question", "get_history: newest first")
    ok(history[0]["parent_checkpoint"]["checkpoint_id"] == history[1]["checkpoint"]["checkpoint_id"], "history links parents")
    older = await client.threads.get_history(tid, limit=10, before=history[1]["checkpoint"])
    ok([h["checkpoint"]["checkpoint_id"] for h in older] == [h["checkpoint"]["checkpoint_id"] for h in history[2:]], "get_history(before=...)")
    inputs = await client.threads.get_history(tid, limit=10, metadata={"source": "input"})
    ok(len(inputs) == 2 and all(h["next"] == ["write"] for h in inputs), "get_history(metadata=...) filters")
    ok(len(await client.threads.get_history(tid, limit=1)) == 1, "get_history(limit=1)")
    # Fork: re-run the first turn's answer from the checkpoint just before it.
    fork_from = inputs[1]
    st = await client.threads.get_state(tid, checkpoint_id=fork_from["checkpoint"]["checkpoint_id"])
    ok(st["checkpoint"]["checkpoint_id"] == fork_from["checkpoint"]["checkpoint_id"], "get_state(checkpoint_id=...)")
    st = await client.threads.get_state(tid, checkpoint=fork_from["checkpoint"])
    ok(st["next"] == ["write"], "get_state(checkpoint=...)")
    out = await client.runs.wait(tid, "streaming", input=None, checkpoint_id=fork_from["checkpoint"]["checkpoint_id"])
    ok([m["content"] for m in out["messages"]] == ["first question", "first question"], "run from checkpoint_id forks the thread")
    head = await client.threads.get_state(tid)
    fork = await client.threads.get_state(tid, checkpoint_id=head["parent_checkpoint"]["checkpoint_id"])
    ok(fork["metadata"]["source"] == "fork" and fork["parent_checkpoint"]["checkpoint_id"] == fork_from["checkpoint"]["checkpoint_id"], "the new branch starts with a fork checkpoint of the chosen one")
    out = await client.runs.wait(tid, "streaming", input=words_input("edited question", 2, 0), checkpoint=fork_from["parent_checkpoint"])
    ok(out["messages"][-1]["content"] == "edited question", "run with checkpoint=... and new input (edit)")
    await expect(NotFoundError, client.runs.create(tid, "streaming", input=None, checkpoint_id=str(uuid.uuid4())), "an unknown checkpoint is 404")
    # update_state.
    res = await client.threads.update_state(tid, {"messages": [{"role": "user", "content": "noted"}]}, as_node="write")
    ok(res["checkpoint"]["checkpoint_id"] == (await client.threads.get_state(tid))["checkpoint"]["checkpoint_id"], "threads.update_state")


async def double_texting(client) -> None:
    t = await client.threads.create()
    tid = t["thread_id"]
    first = await started_run(client, tid, words_input("long one", 1000, 10))
    await expect(ConflictError, client.runs.create(tid, "streaming", input=words_input("again", 2, 0), multitask_strategy="reject"), "multitask reject is 409 (ConflictError)")
    await expect(httpx.HTTPStatusError, client.runs.wait(tid, "streaming", input=words_input("again", 2, 0), multitask_strategy="reject"), "reject on runs.wait too", 409)
    second = await client.runs.create(tid, "streaming", input=words_input("interrupting", 2, 0), multitask_strategy="interrupt")
    await wait_status(client, tid, first["run_id"], "interrupted")
    await wait_status(client, tid, second["run_id"], "success")
    msgs = (await client.threads.get_state(tid))["values"]["messages"]
    ok(msgs[1]["metadata"]["interrupted_reason"] == "superseded" and msgs[-1]["content"] == "interrupting interrupting", "multitask interrupt keeps the first run's progress")

    before = len(await client.threads.get_history(tid, limit=1000))
    third = await client.runs.create(tid, "streaming", input=words_input("to roll back", 1000, 10))
    await wait_status(client, tid, third["run_id"], "running")
    fourth = await client.runs.wait(tid, "streaming", input=words_input("after rollback", 2, 0), multitask_strategy="rollback")
    ok(fourth["messages"][-1]["content"] == "after rollback", "multitask rollback runs the new input")
    await wait_gone(client, tid, third["run_id"], "the rolled back run is gone")
    ok(len(await client.threads.get_history(tid, limit=1000)) == before + 2, "only the new run's checkpoints were added")

    fifth = await client.runs.create(tid, "streaming", input=words_input("queue head", 20, 10))
    sixth = await client.runs.create(tid, "streaming", input=words_input("queued", 2, 0), multitask_strategy="enqueue")
    ok((await client.runs.get(tid, sixth["run_id"]))["status"] == "pending", "multitask enqueue waits")
    await client.runs.join(tid, sixth["run_id"])
    ok((await client.runs.get(tid, fifth["run_id"]))["status"] == "success", "the queued run ran after the first")
    msgs = (await client.threads.get_state(tid))["values"]["messages"]
    ok([m["content"] for m in msgs[-4:]][2:] == ["queued", "queued queued"], "enqueue order kept")

    # Stream a double text: the interrupting stream sees its run through.
    seventh = await client.runs.create(tid, "streaming", input=words_input("busy", 1000, 10))
    await wait_status(client, tid, seventh["run_id"], "running")
    parts = await collect(client.runs.stream(tid, "streaming", input=words_input("now", 1, 0), multitask_strategy="interrupt", stream_mode="values"))
    ok(parts[-1].data["messages"][-1]["content"] == "now", "runs.stream with multitask interrupt")


async def main() -> None:
    client = get_client(url=URL, api_key=None, timeout=httpx.Timeout(60.0))
    started = time.monotonic()
    for step in (assistants_and_threads, streaming_modes, interrupts_and_resume, join_after_disconnect, cancel, history_and_fork, double_texting):
        t0 = time.monotonic()
        await step(client)
        print(f"# {step.__name__}: {time.monotonic() - t0:.2f}s", flush=True)
    print(f"# {passed()} checks passed in {time.monotonic() - started:.1f}s against {URL}")


if __name__ == "__main__":
    asyncio.run(main())
