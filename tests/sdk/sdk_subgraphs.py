"""Subgraphs through the official Python `langgraph-sdk`: the `supervisor` graph (two
sub-agent subgraphs; the `writer` one asks a person before publishing).

Usage: python sdk_subgraphs.py http://127.0.0.1:PORT

Checks `assistants.get_subgraphs`, `runs.stream(stream_subgraphs=True)` (events named
`<mode>|<namespace>`), `threads.get_state(subgraphs=True)` (`tasks[].state`), the state and
history of a subgraph namespace (`checkpoint={"checkpoint_ns": ...}`), and a resume from
the parent that finishes inside the subgraph.
"""

from __future__ import annotations

import asyncio
import sys

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError
from langgraph_sdk.schema import Command
from checks import ok, passed

URL = sys.argv[1]


async def main() -> None:
    client = get_client(url=URL, api_key=None, timeout=httpx.Timeout(60.0))

    subs = await client.assistants.get_subgraphs("supervisor")
    ok(sorted(subs) == ["researcher", "writer"], f"get_subgraphs lists both sub-agents: {sorted(subs)}")
    ok("messages" in subs["writer"]["state_schema"]["properties"], "a subgraph's state schema is its own")
    ok("notes" in subs["researcher"]["state_schema"]["properties"] and "done" not in subs["researcher"]["state_schema"]["properties"], "the researcher's schema is not the parent's")
    ok(await client.assistants.get_subgraphs("approval") == {}, "a graph without subgraphs has none")
    one = await client.assistants.get_subgraphs("supervisor", namespace="writer", recurse=True)
    ok(list(one) == ["writer"], "get_subgraphs(namespace=...) answers that one")

    tid = (await client.threads.create())["thread_id"]
    parts = [p async for p in client.runs.stream(
        tid, "supervisor",
        input={"messages": [{"role": "user", "content": "tides"}]},
        stream_mode=["values", "updates"],
        stream_subgraphs=True,
    )]
    names = [p.event for p in parts]
    research_ns = next((n.split("|", 1)[1] for n in names if n.startswith("updates|researcher:")), None)
    ok(research_ns is not None, f"subgraph updates come as updates|<namespace>: {names}")
    inner = [p.data for p in parts if p.event == f"updates|{research_ns}"]
    ok([list(d)[0] for d in inner] == ["search", "summarize"], "the researcher's own node updates, in order")
    ok(any(p.event.startswith("values|writer:") and p.data.get("draft", "").startswith("Draft 1") for p in parts), "the writer's own values stream too")
    ok(any(p.event == "updates" and "researcher" in p.data for p in parts), "the parent's updates stay unnamespaced")
    last = [p.data for p in parts if p.event == "values"][-1]
    intr = last["__interrupt__"][0]
    ok(intr["value"]["question"] == "Publish this draft?", "the writer's question suspends the parent")

    state = await client.threads.get_state(tid)
    task = state["tasks"][0]
    ok(task["name"] == "writer" and state["next"] == ["writer"], "the parent waits at the writer")
    ns = task["state"]["configurable"]["checkpoint_ns"]
    ok(ns == f"writer:{task['id']}", f"without subgraphs, the task's state is its config: {task['state']}")

    deep = await client.threads.get_state(tid, subgraphs=True)
    inner_state = deep["tasks"][0]["state"]
    ok(inner_state["next"] == ["review"], "get_state(subgraphs=True) shows the writer at review")
    ok(inner_state["values"]["draft"].startswith("Draft 1 about \"tides (three sources on tides"), "with the writer's own values")
    ok(inner_state["checkpoint"]["checkpoint_ns"] == ns and inner_state["checkpoint"]["thread_id"] == tid, "its checkpoint config names the namespace")
    ok(inner_state["tasks"][0]["interrupts"][0]["value"]["question"] == "Publish this draft?", "and the interrupt inside it")

    at_ns = await client.threads.get_state(tid, checkpoint={"thread_id": tid, "checkpoint_ns": ns})
    ok(at_ns["values"] == inner_state["values"], "state at a subgraph namespace (POST /state/checkpoint)")
    hist = await client.threads.get_history(tid, checkpoint={"checkpoint_ns": ns}, limit=20)
    ok(len(hist) >= 2 and all(h["checkpoint"]["checkpoint_ns"] == ns for h in hist), "a subgraph's history")
    try:
        await client.threads.get_state(tid, checkpoint={"checkpoint_ns": "nowhere:1"})
        ok(False, "an unknown namespace is 404")
    except NotFoundError:
        ok(True, "an unknown namespace is 404")

    final = await client.runs.wait(tid, "supervisor", command=Command(resume={"approve": True}))
    ok(final["messages"][-1]["content"].startswith("Published: Draft 1"), "a resume of the parent finishes inside the writer")
    done = await client.threads.get_state(tid, subgraphs=True)
    ok(done["next"] == [] and done["tasks"] == [], "nothing due anywhere after it")
    print(f"# {passed()} checks passed against {URL}")


if __name__ == "__main__":
    asyncio.run(main())
