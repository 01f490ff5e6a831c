"""Drives palgraph's long-term store through the official Python `langgraph-sdk`
(`client.store.*`), as two users (API keys `key-ada-…` and `key-bob-…`).

Usage: python sdk_store.py http://127.0.0.1:PORT

Every step asserts what the SDK returned and prints one `ok` line; the script exits
non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime

from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError
from checks import ok, passed

URL = sys.argv[1]


def when(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


async def expect_422(call, what: str) -> None:
    try:
        await call
    except UnprocessableEntityError as e:
        ok(e.response.status_code == 422, f"{what} (422)")
        return
    raise AssertionError(f"{what}: no error")


async def main() -> None:
    ada = get_client(url=URL, api_key="key-ada-0123456789abcdef").store
    bob = get_client(url=URL, api_key="key-bob-0123456789abcdef").store
    prefs = ["memories", "prefs"]

    # put / get / update
    await ada.put_item(prefs, "coffee", {"text": "likes dark roast coffee", "kind": "pref", "n": 1})
    item = await ada.get_item(prefs, "coffee")
    ok(item["namespace"] == prefs and item["key"] == "coffee", "get_item returns the item's place")
    ok(item["value"] == {"text": "likes dark roast coffee", "kind": "pref", "n": 1}, "and its value")
    ok(when(item["created_at"]) == when(item["updated_at"]), "created_at and updated_at are ISO timestamps")
    await asyncio.sleep(0.01)
    await ada.put_item(prefs, "coffee", {"text": "likes espresso coffee", "kind": "pref", "n": 1})
    again = await ada.get_item(prefs, "coffee")
    ok(again["value"]["text"] == "likes espresso coffee", "a put replaces the value")
    ok(again["created_at"] == item["created_at"] and when(again["updated_at"]) > when(item["updated_at"]),
       "created_at is kept, updated_at moves")
    ok(await ada.get_item(prefs, "nothing") is None, "a missing item is None")

    # more items, then search
    await ada.put_item(prefs, "tea", {"text": "green tea in the afternoon", "kind": "pref", "n": 2})
    await ada.put_item(["memories", "facts"], "city", {"text": "lives in Lisbon", "kind": "fact", "n": 3})
    await ada.put_item(["memories", "facts"], "pet", {"text": "has a dog called Rex", "kind": "fact", "n": 4},
                       index=False)
    await ada.put_item(["notes"], "n1", {"text": "unrelated note"}, ttl=5)
    found = await ada.search_items(["memories"])
    keys = [i["key"] for i in found["items"]]
    ok(keys == ["pet", "city", "tea", "coffee"], f"search_items: the prefix's items, newest first ({keys})")
    ok(all("score" in i and i["score"] is None for i in found["items"]), "no query, no score")
    found = await ada.search_items(["memories"], filter={"kind": "fact"})
    ok([i["key"] for i in found["items"]] == ["pet", "city"], "filter on a value field")
    found = await ada.search_items(["memories"], filter={"n": {"$gte": 2, "$lt": 4}})
    ok([i["key"] for i in found["items"]] == ["city", "tea"], "filter with operators")
    found = await ada.search_items(["memories"], limit=2, offset=1)
    ok([i["key"] for i in found["items"]] == ["city", "tea"], "limit and offset")
    found = await ada.search_items(["memories"], query="espresso coffee")
    ok([i["key"] for i in found["items"]] == ["coffee"], "a text query finds by words")
    ok(found["items"][0]["score"] > 0, "and scores what it finds")
    found = await ada.search_items([], query="lisbon")
    ok([i["key"] for i in found["items"]] == ["city"], "an empty prefix searches all of the caller's items")

    # namespaces
    spaces = await ada.list_namespaces()
    ok(spaces["namespaces"] == [["memories", "facts"], ["memories", "prefs"], ["notes"]],
       f"list_namespaces ({spaces})")
    spaces = await ada.list_namespaces(prefix=["memories"], max_depth=1)
    ok(spaces["namespaces"] == [["memories"]], "with a prefix and max_depth")
    spaces = await ada.list_namespaces(suffix=["prefs"])
    ok(spaces["namespaces"] == [["memories", "prefs"]], "with a suffix")
    spaces = await ada.list_namespaces(limit=1, offset=1)
    ok(spaces["namespaces"] == [["memories", "prefs"]], "with limit and offset")

    # another user sees none of it
    ok(await bob.get_item(prefs, "coffee") is None, "bob cannot read ada's item")
    ok((await bob.search_items([]))["items"] == [], "bob's search finds nothing of ada's")
    ok((await bob.search_items([], query="coffee"))["items"] == [], "nor by words")
    ok((await bob.list_namespaces())["namespaces"] == [], "bob has no namespaces")
    await bob.delete_item(prefs, "coffee")
    ok(await ada.get_item(prefs, "coffee") is not None, "bob's delete does not touch ada's item")
    await bob.put_item(prefs, "coffee", {"text": "bob's own"})
    ok((await ada.get_item(prefs, "coffee"))["value"]["text"] == "likes espresso coffee",
       "the same namespace and key are another item for bob")
    ok((await bob.get_item(prefs, "coffee"))["value"] == {"text": "bob's own"}, "bob reads his own")

    # delete
    await ada.delete_item(prefs, "tea")
    ok(await ada.get_item(prefs, "tea") is None, "delete_item removes the item")
    await ada.delete_item(prefs, "tea")
    ok(True, "deleting a missing item is fine")

    # bad input changes nothing
    await expect_422(ada.put_item(["memories", ""], "k", {"x": 1}), "an empty namespace label")
    await expect_422(ada.put_item(["memories"], "k", [1, 2]), "a value that is not an object")
    await expect_422(ada.put_item(["memories"], "k", {"x": 1}, ttl=-1), "a negative ttl")
    await expect_422(ada.search_items(["memories"], filter={"n": {"$regex": "x"}}), "an unknown filter operator")
    ok(await ada.get_item(["memories"], "k") is None, "and nothing was stored")
    print(f"all {passed()} checks passed", flush=True)


asyncio.run(main())
