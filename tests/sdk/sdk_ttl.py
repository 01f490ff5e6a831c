"""Threads' time to live through the official Python SDK, against a palgraph server that
sweeps every second (`PALGRAPH_THREAD_TTL_SWEEP_SECS=1`).

Usage: python sdk_ttl.py http://127.0.0.1:PORT

`client.threads.create(ttl=...)` and `client.threads.update(..., ttl=...)` as the SDK sends
them (minutes, which it turns into `{"ttl", "strategy": "delete"}`, or the mapping itself):
a thread left alone past its time is deleted, a `keep_latest` one keeps only its latest
checkpoint with its state, a thread without a ttl stays, and a bad ttl is a 422.

Every step prints one `ok` line; the script exits non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import sys
import time

import httpx
from langgraph_sdk import get_client
from checks import ok, passed

URL = sys.argv[1]
# 1.2 s after the thread's last change.
SHORT = 0.02


def human(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def gone(client, thread_id: str) -> bool:
    try:
        await client.threads.get(thread_id)
        return False
    except httpx.HTTPStatusError as e:
        return e.response.status_code == 404


async def within(what: str, cond, secs: float = 30.0) -> None:
    deadline = time.monotonic() + secs
    while not await cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {secs} s")
        await asyncio.sleep(0.1)


async def main() -> None:
    client = get_client(url=URL)
    deleted = await client.threads.create(ttl=SHORT)
    await client.runs.wait(deleted["thread_id"], "fanout", input=human("first"))
    kept = await client.threads.create()
    await client.runs.wait(kept["thread_id"], "fanout", input=human("kept"))
    updated = await client.threads.create()
    await client.threads.update(updated["thread_id"], metadata={"k": 1}, ttl=SHORT)
    pruned = await client.threads.create(ttl={"strategy": "keep_latest", "ttl": SHORT})
    for text in ("one", "two"):
        await client.runs.wait(pruned["thread_id"], "fanout", input=human(text))
    before = await client.threads.get_state(pruned["thread_id"])
    ok(len(await client.threads.get_history(pruned["thread_id"])) > 1, "history before the sweep")

    await within("the expired thread deleted", lambda: gone(client, deleted["thread_id"]))
    ok(True, "threads.create(ttl=minutes): deleted once left alone that long")
    await within("the updated thread deleted", lambda: gone(client, updated["thread_id"]))
    ok(True, "threads.update(ttl=minutes): deleted too")

    async def pruned_to_one() -> bool:
        return len(await client.threads.get_history(pruned["thread_id"])) == 1

    await within("the keep_latest thread pruned", pruned_to_one)
    after = await client.threads.get_state(pruned["thread_id"])
    ok(after["values"] == before["values"], "keep_latest keeps the thread's state")
    kept_now = await client.threads.get(kept["thread_id"])
    ok(kept_now["thread_id"] == kept["thread_id"], "a thread without a ttl stays")

    try:
        await client.threads.create(ttl=-1)
        ok(False, "a negative ttl is refused")
    except httpx.HTTPStatusError as e:
        ok(e.response.status_code == 422 and "ttl" in e.response.text, "a negative ttl is a 422")
    print(f"all {passed()} checks passed", flush=True)


asyncio.run(main())
