"""Map-reduce through the official Python `langgraph-sdk`: the `jokes` graph (a `Send` per
subject, then a reduce), and `Command(goto=Send(...))` as LangGraph's API takes it.

Usage: python sdk_send.py http://127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import sys

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError
from langgraph_sdk.schema import Command, Send
from checks import ok, passed

URL = sys.argv[1]


async def main() -> None:
    client = get_client(url=URL, api_key=None, timeout=httpx.Timeout(60.0))

    tid = (await client.threads.create())["thread_id"]
    parts = [p async for p in client.runs.stream(tid, "jokes", input={"topic": "cats"}, stream_mode="updates")]
    jokes = [p.data["generate_joke"]["jokes"][0] for p in parts if p.event == "updates" and "generate_joke" in p.data]
    ok(jokes == [f"Why did the cats {w} cross the road?" for w in ("at work", "at home", "on holiday")], f"one task per Send, folded in send order: {jokes}")
    state = await client.threads.get_state(tid)
    ok(state["values"]["best"] == "Why did the cats on holiday cross the road?", "then the reduce")

    # Command(goto=Send(...)): one task with its own input, then the graph goes on.
    t2 = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(t2, "jokes", command=Command(goto=Send(node="generate_joke", input={"subject": "owls"})))
    ok(out["jokes"] == ["Why did the owls cross the road?"] and out["best"] == out["jokes"][0], "Command(goto=Send) runs the node with its input")
    t3 = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(t3, "jokes", command=Command(update={"topic": "dogs"}, goto=[Send(node="generate_joke", input={"subject": "a"}), Send(node="generate_joke", input={"subject": "bb"})]))
    ok(out["jokes"] == ["Why did the a cross the road?", "Why did the bb cross the road?"] and out["topic"] == "dogs", "a list of Sends with an update")
    try:
        await client.runs.create(t3, "jokes", command=Command(goto=Send(node="nowhere", input={})))
        ok(False, "a Send to an unknown node is refused")
    except UnprocessableEntityError:
        ok(True, "a Send to an unknown node is refused (422)")
    try:
        await client.runs.create(t3, "jokes", command={"goto": {"input": {}}})
        ok(False, "a Send without a node is refused")
    except UnprocessableEntityError:
        ok(True, "a Send without a node is refused (422)")
    print(f"# {passed()} checks passed against {URL}")


if __name__ == "__main__":
    asyncio.run(main())
