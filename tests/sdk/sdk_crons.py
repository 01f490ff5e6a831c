"""Drives palgraph's crons (scheduled runs) through the official Python `langgraph-sdk`
(`client.crons.*`), as two users (API keys `key-ada-…` and `key-bob-…`): create (on a
thread and stateless), ticks that run, search, count, update, delete, bad input, and
neither user seeing the other's crons. The server polls for due ticks every 100 ms
(`PALGRAPH_CRON_POLL_MS`).

Usage: python sdk_crons.py http://127.0.0.1:PORT

Every step asserts what the SDK returned and prints one `ok` line; the script exits
non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from checks import ok, passed

URL = sys.argv[1]


def when(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def words(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}], "words": 2, "delay_ms": 0}


async def raises(exc, call, what: str) -> None:
    try:
        await call
    except exc:
        ok(True, f"{what} raises {exc.__name__}")
        return
    raise AssertionError(f"{what}: no {exc.__name__}")


async def cron_runs(client, tid: str, cron_id: str) -> list:
    runs = await client.runs.list(tid, limit=100)
    return [r for r in runs if r["metadata"].get("cron_id") == cron_id]


async def main() -> None:
    ada = get_client(url=URL, api_key="key-ada-0123456789abcdef")
    bob = get_client(url=URL, api_key="key-bob-0123456789abcdef")

    # A cron on a thread, every second: its ticks run on the thread.
    thread = await ada.threads.create()
    tid = thread["thread_id"]
    asked = datetime.now(timezone.utc)
    every = await ada.crons.create_for_thread(
        tid, "streaming", schedule="* * * * * *", input=words("tick tock"), metadata={"kind": "every"}
    )
    ok(every["thread_id"] == tid and every["assistant_id"] == "streaming", "create_for_thread: the cron's thread and assistant")
    ok(every["schedule"] == "* * * * * *" and every["enabled"] is True, "its schedule, enabled")
    ok(every["metadata"] == {"kind": "every"} and every["payload"]["input"] == words("tick tock"), "its metadata and payload")
    nxt = when(every["next_run_date"])
    # The next second after the server made it, which was between our asking and its answer.
    answered = datetime.now(timezone.utc)
    ok(asked < nxt and (nxt - answered).total_seconds() <= 1.5, "next_run_date is the next second")
    deadline = time.monotonic() + 20
    while len([r for r in await cron_runs(ada, tid, every["cron_id"]) if r["status"] == "success"]) < 2:
        if time.monotonic() > deadline:
            raise AssertionError("the thread cron's ticks did not run")
        await asyncio.sleep(0.2)
    ok(True, "the thread cron's ticks ran on the thread (runs with its cron_id, success)")
    state = await ada.threads.get_state(tid)
    ok(any("tick" in str(m.get("content")) for m in state["values"]["messages"]), "and the thread's state holds their messages")

    # A stateless cron in a time zone, with an end time.
    end = datetime.now(timezone.utc) + timedelta(days=30)
    daily = await ada.crons.create(
        "streaming",
        schedule="0 9 * * *",
        timezone="America/New_York",
        end_time=end,
        input=words("good morning"),
        metadata={"kind": "daily"},
    )
    ok(daily["thread_id"] is None and daily["timezone"] == "America/New_York", "create: a stateless cron in its time zone")
    local = when(daily["next_run_date"]).astimezone(ZoneInfo("America/New_York"))
    ok((local.hour, local.minute) == (9, 0), f"its next run is 09:00 in New York ({daily['next_run_date']})")
    ok(abs((when(daily["end_time"]) - end).total_seconds()) < 1, "its end_time")
    ok(daily["on_run_completed"] == "delete", "a stateless cron deletes its tick's thread by default")
    ok(when(daily["created_at"]) <= when(daily["updated_at"]), "created_at and updated_at are ISO timestamps")

    # search and count
    found = await ada.crons.search()
    ok(sorted(c["cron_id"] for c in found) == sorted([every["cron_id"], daily["cron_id"]]), "search: the caller's crons")
    ok([c["cron_id"] for c in await ada.crons.search(thread_id=tid)] == [every["cron_id"]], "search by thread_id")
    ok([c["cron_id"] for c in await ada.crons.search(metadata={"kind": "daily"})] == [daily["cron_id"]], "search by metadata")
    ok(len(await ada.crons.search(assistant_id="streaming")) == 2, "search by assistant_id")
    ok([c["cron_id"] for c in await ada.crons.search(sort_by="created_at", sort_order="asc", limit=1, offset=1)] == [daily["cron_id"]],
       "sort, limit and offset")
    picked = await ada.crons.search(select=["cron_id", "schedule"], limit=1)
    ok(set(picked[0].keys()) == {"cron_id", "schedule"}, "select keeps the chosen fields")
    ok(await ada.crons.count() == 2 and await ada.crons.count(thread_id=tid) == 1, "count")

    # update
    changed = await ada.crons.update(daily["cron_id"], schedule="30 7 * * 1", enabled=False, end_time=None,
                                     metadata={"kind": "weekly"})
    ok(changed["schedule"] == "30 7 * * 1" and changed["enabled"] is False, "update: schedule and enabled")
    ok(changed["end_time"] is None and changed["metadata"] == {"kind": "weekly"}, "end_time=None clears it; metadata replaced")
    local = when(changed["next_run_date"]).astimezone(ZoneInfo("America/New_York"))
    ok((local.weekday(), local.hour, local.minute) == (0, 7, 30), "the next run is worked out again (Monday 07:30 New York)")
    ok([c["cron_id"] for c in await ada.crons.search(enabled=False)] == [daily["cron_id"]], "search by enabled")
    await raises(UnprocessableEntityError, ada.crons.update(daily["cron_id"], schedule="not a schedule"), "update with a bad schedule")
    again = await ada.crons.search(metadata={"kind": "weekly"})
    ok(again[0]["schedule"] == "30 7 * * 1", "a refused update changed nothing")

    # bad input changes nothing
    await raises(UnprocessableEntityError, ada.crons.create("streaming", schedule="every day"), "create with a bad schedule")
    await raises(UnprocessableEntityError, ada.crons.create("streaming", schedule="0 9 * * *", timezone="Mars/Olympus"),
                 "create with a bad time zone")
    await raises(NotFoundError, ada.crons.create("no-such-graph", schedule="0 9 * * *"), "create for an unknown assistant")
    await raises(NotFoundError, ada.crons.create_for_thread("00000000-0000-4000-8000-000000000000", "streaming", schedule="0 9 * * *"),
                 "create_for_thread on an unknown thread")
    ok(await ada.crons.count() == 2, "refused creates made no cron")

    # another user sees none of it
    ok(await bob.crons.search() == [] and await bob.crons.count() == 0, "bob sees none of ada's crons")
    await raises(NotFoundError, bob.crons.delete(daily["cron_id"]), "bob deleting ada's cron")
    await raises(NotFoundError, bob.crons.update(daily["cron_id"], enabled=True), "bob updating ada's cron")
    await raises(NotFoundError, bob.crons.create_for_thread(tid, "streaming", schedule="0 9 * * *"), "bob scheduling on ada's thread")

    # a stateless cron that keeps its threads: each tick makes a thread
    keep = await ada.crons.create("streaming", schedule="* * * * * *", input=words("fresh"), on_run_completed="keep")
    deadline = time.monotonic() + 20
    tick_threads: list = []
    while len(tick_threads) < 2:
        if time.monotonic() > deadline:
            raise AssertionError("the stateless cron's ticks did not run")
        await asyncio.sleep(0.3)
        tick_threads = []
        for t in await ada.threads.search(limit=100):
            if t["thread_id"] != tid and await cron_runs(ada, t["thread_id"], keep["cron_id"]):
                tick_threads.append(t["thread_id"])
    ok(True, f"a stateless cron's ticks run each on a new thread ({len(tick_threads)} so far)")
    ok(await bob.threads.search() == [], "the tick threads are ada's, not bob's")
    await ada.crons.delete(keep["cron_id"])  # no more threads piling up from here

    # a stateless cron that deletes its threads (the default): a tick's thread is seen, then
    # gone (each run lasts about two seconds, so the thread is there to be seen)
    slow = {"messages": [{"role": "user", "content": "brief"}], "words": 20, "delay_ms": 100}
    gone = await ada.crons.create("streaming", schedule="* * * * * *", input=slow)
    deadline = time.monotonic() + 20
    seen: set = set()
    while not seen:
        if time.monotonic() > deadline:
            raise AssertionError("the deleting stateless cron's ticks did not run")
        for t in await ada.threads.search(limit=100):
            if t["thread_id"] not in tick_threads and t["thread_id"] != tid:
                try:
                    if await cron_runs(ada, t["thread_id"], gone["cron_id"]):
                        seen.add(t["thread_id"])
                except NotFoundError:
                    pass
        await asyncio.sleep(0.05)
    await ada.crons.delete(gone["cron_id"])
    deadline = time.monotonic() + 20
    while True:
        left = [t for t in seen if t in {x["thread_id"] for x in await ada.threads.search(limit=100)}]
        if not left:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"tick threads not deleted: {left}")
        await asyncio.sleep(0.2)
    ok(True, "a stateless cron's tick thread is deleted when its run ends (on_run_completed=delete)")

    # delete stops the ticks
    await ada.crons.delete(every["cron_id"])
    await asyncio.sleep(1.5)
    before = len(await cron_runs(ada, tid, every["cron_id"]))
    await asyncio.sleep(2.5)
    ok(len(await cron_runs(ada, tid, every["cron_id"])) == before, "a deleted cron ticks no more")
    await raises(NotFoundError, ada.crons.delete(every["cron_id"]), "deleting it again")
    ok(await ada.crons.count() == 1, "count after delete")
    other = await ada.threads.create()
    await ada.crons.create_for_thread(other["thread_id"], "streaming", schedule="0 9 * * *")
    ok(await ada.crons.count(thread_id=other["thread_id"]) == 1, "a cron on another thread")
    await ada.threads.delete(other["thread_id"])
    ok(await ada.crons.count(thread_id=other["thread_id"]) == 0, "deleting the thread deletes its crons")
    print(f"all {passed()} checks passed", flush=True)


asyncio.run(main())
