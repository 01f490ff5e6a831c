"""Streams that open before their run starts, as the official clients open them, against a
palgraph server that executes one run at a time (`PALGRAPH_MAX_RUNS=1`).

Usage: python sdk_queued.py http://127.0.0.1:PORT

A run waits in the queue behind another thread's run. `client.threads.stream()` opens two
event streams on its thread while it waits (the lifecycle and input channels; the values
channel); once the run starts, both must follow it live. The client ends `thread.values`
when the interrupt arrives on the other stream, so a stream that looked again at the
events table only at its next poll (up to 250 ms later) lost the values to the interrupt.
The client itself races too: it reads the two streams on two connections, so when it
lags (two busy cores) it can read the interrupt before values sent a commit earlier on the
other connection; measured at 1 round in 150 under pgbench and two busy loops, against 13
in 30 when the server was at fault. So of `ROUNDS` rounds, all but one must keep the draft.
A `runs.join_stream` opened on the queued run gets its events from the start too.

Every step prints one `ok` line; the script exits non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import sys

from langgraph_sdk import get_client
from checks import ok, passed

URL = sys.argv[1]
ROUNDS = 8


async def blocker(client) -> dict:
    """A run of about 0.3 s on a thread of its own: it holds the only slot."""
    t = await client.threads.create()
    return await client.runs.create(
        t["thread_id"],
        "streaming",
        input={"messages": [{"role": "user", "content": "w " * 60}], "words": 60, "delay_ms": 5},
    )


async def protocol_values(client, i: int) -> tuple[bool, list]:
    busy = await blocker(client)
    topic = f"queued {i}"
    async with client.threads.stream(assistant_id="approval") as t:
        await t.run.start(input={"messages": [{"role": "user", "content": topic}]})
        snaps = [v async for v in t.values]
        drafts = [s.get("draft") for s in snaps]
        draft = f'Draft 1 about "{topic}".'
        ok(t.interrupted and t.interrupts[0]["value"]["draft"] == draft, f"round {i}: the queued run stopped at its interrupt")
    await client.runs.join(busy["thread_id"], busy["run_id"])
    return drafts[-1] == draft, drafts


async def joined_stream(client) -> None:
    busy = await blocker(client)
    t = await client.threads.create()
    run = await client.runs.create(t["thread_id"], "approval", input={"messages": [{"role": "user", "content": "joined"}]}, stream_mode=["values", "updates"])
    got = await client.runs.get(t["thread_id"], run["run_id"])
    ok(got["status"] == "pending", f"the run waits behind the other: {got['status']}")
    parts = [p async for p in client.runs.join_stream(t["thread_id"], run["run_id"], stream_mode=["values", "updates"])]
    events = [p.event for p in parts]
    ok(events[:2] == ["values", "updates"] and events.count("updates") == 2, f"runs.join_stream opened while it waited carries it from the start: {events}")
    ok(parts[-1].event != "error" and any(p.event == "values" and p.data.get("draft") == 'Draft 1 about "joined".' for p in parts), "with its draft")
    await client.runs.join(busy["thread_id"], busy["run_id"])


async def main() -> None:
    client = get_client(url=URL)
    rounds = [await protocol_values(client, i) for i in range(ROUNDS)]
    lost = [drafts for kept, drafts in rounds if not kept]
    ok(len(lost) <= 1, f"thread.values of a queued run ends with its draft in {ROUNDS - len(lost)} of {ROUNDS} rounds (lost: {lost})")
    await joined_stream(client)
    print(f"all {passed()} checks passed", flush=True)


asyncio.run(main())
