"""The workflow example through the official Python `langgraph-sdk`.

Usage: python flow.py http://127.0.0.1:PORT
"""

import asyncio
import sys

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

URL = sys.argv[1]
CHECKS = 0


def ok(cond, what):
    global CHECKS
    if not cond:
        raise AssertionError(what)
    CHECKS += 1
    print(f"ok {CHECKS} - {what}", flush=True)


async def refused(coro, what):
    try:
        await coro
    except UnprocessableEntityError:
        ok(True, what)
        return
    except httpx.HTTPStatusError as e:  # runs.wait raises httpx's own error
        ok(e.response.status_code == 422 and "schema" in e.response.text, what)
        return
    raise AssertionError(f"{what}: not refused")


async def main():
    client = get_client(url=URL)
    s = await client.assistants.get_schemas("review")
    ok(list(s["input_schema"]["properties"]) == ["text"] and s["input_schema"]["required"] == ["text"], "declared input schema")
    ok(set(s["output_schema"]["properties"]) == {"findings", "verdict"}, "declared output schema")
    ok(s["context_schema"]["properties"]["strict"]["type"] == "boolean", "declared context schema")
    ok(s["state_schema"]["properties"]["findings"]["items"]["type"] == "string", "state schema from the derived state")
    ok("in the reviewers' declaration order" in s["state_schema"]["properties"]["findings"]["description"], "doc comments describe fields")
    doc = httpx.get(f"{URL}/openapi.json").json()
    ok("review.Input" in doc["components"]["schemas"], "the OpenAPI document carries the graph's schemas")

    text = "Teh  report is DONE! We will recieve it"
    t = (await client.threads.create())["thread_id"]
    parts = [p async for p in client.runs.stream(t, "review", input={"text": text}, stream_mode="updates")]
    nodes = [list(p.data)[0] for p in parts if p.event == "updates"]
    ok(nodes[0] == "prepare" and set(nodes[1:4]) == {"spelling", "length", "tone"} and nodes[4] == "verdict", "three branches, then the join")
    state = await client.threads.get_state(t)
    v = state["values"]
    ok(v["text"] == "Teh report is DONE! We will recieve it", "prepare normalized the text")
    ok(v["findings"] == ["spelling: Teh, recieve", "tone: shouting"], "branches merged in declaration order")
    ok(v["verdict"] == "changes requested", "the join's verdict")

    t2 = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(t2, "review", input={"text": "teh plan"})
    ok(out["verdict"] == "accepted", "one finding is accepted")
    ok(set(out) == {"findings", "verdict"}, "runs.wait answers with the declared output's fields")
    ok((await client.threads.get_state(t2))["values"]["text"] == "teh plan", "the thread's state keeps every field")
    t3 = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(t3, "review", input={"text": "teh plan"}, context={"strict": True})
    ok(out["verdict"] == "changes requested", "the run's context makes it strict")

    await refused(client.runs.wait(None, "review", input={"txt": "typo"}), "an input outside the input schema is 422")
    await refused(client.runs.wait(None, "review", input={"text": "x"}, context={"strict": "very"}), "a context outside the context schema is 422")
    print(f"{CHECKS} checks passed")


asyncio.run(main())
