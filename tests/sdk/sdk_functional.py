"""The functional API through the official Python `langgraph-sdk`: the `essay` workflow
(one async function: a durable outline step, an interrupt asking for a tone, a durable
writing step), served like a graph.

Usage: python sdk_functional.py http://127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import sys

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.schema import Command
from checks import ok, passed

URL = sys.argv[1]


async def main() -> None:
    client = get_client(url=URL, api_key=None, timeout=httpx.Timeout(60.0))
    tid = (await client.threads.create())["thread_id"]
    parts = [p async for p in client.runs.stream(tid, "essay", input={"input": "tides"}, stream_mode=["values", "updates"])]
    intr = [p.data for p in parts if p.event == "values"][-1]["__interrupt__"][0]
    ok(intr["value"]["question"] == "Which tone?" and "tides" in intr["value"]["outline"], "the function's interrupt reaches the client")
    state = await client.threads.get_state(tid)
    ok(state["next"] == ["essay"] and (await client.threads.get(tid))["status"] == "interrupted", "the thread waits inside the function")

    out = await client.runs.wait(tid, "essay", command=Command(resume="dry"))
    ok(out["output"]["text"].startswith("A dry essay on tides: 1. what tides are") and out["output"]["count"] == 1, "the resume finishes the function")
    await client.runs.wait(tid, "essay", input={"input": "waves"})
    out = await client.runs.wait(tid, "essay", command=Command(resume="wet"))
    ok(out["output"]["count"] == 2 and "wet essay on waves" in out["output"]["text"], "the next call sees the previous result")
    hist = await client.threads.get_history(tid, limit=50)
    ok(len(hist) >= 4, "each call is checkpointed")
    print(f"# {passed()} checks passed against {URL}")


if __name__ == "__main__":
    asyncio.run(main())
