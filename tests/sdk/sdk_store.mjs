// Drives palgraph's long-term store through the official JS `@langchain/langgraph-sdk`
// (`client.store.*`), as two users (API keys key-ada-… and key-bob-…).
//
// Usage: node sdk_store.mjs http://127.0.0.1:PORT
// Every step asserts and prints one `ok` line; the first failure exits non-zero.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { ok, passed } from "./checks.mjs";

const URL = process.argv[2];
const keys = (found) => found.items.map((i) => i.key);

const ada = new Client({ apiUrl: URL, apiKey: "key-ada-0123456789abcdef" }).store;
const bob = new Client({ apiUrl: URL, apiKey: "key-bob-0123456789abcdef" }).store;
const prefs = ["memories", "prefs"];

await ada.putItem(prefs, "coffee", { text: "likes dark roast coffee", kind: "pref" });
const item = await ada.getItem(prefs, "coffee");
ok(item.key === "coffee" && assert.deepEqual(item.namespace, prefs) === undefined, "getItem returns the item");
ok(item.value.text === "likes dark roast coffee", "with its value");
ok(!Number.isNaN(Date.parse(item.createdAt)) && item.createdAt === item.updatedAt, "createdAt / updatedAt are timestamps");
ok((await ada.getItem(prefs, "none")) === null, "a missing item is null");
ok((await ada.getItem(prefs, "coffee", { refreshTtl: false })).key === "coffee", "refreshTtl=false reads too");

await ada.putItem(prefs, "tea", { text: "green tea", kind: "pref" }, { ttl: 10 });
await ada.putItem(["memories", "facts"], "city", { text: "lives in Lisbon", kind: "fact" }, { index: false });
ok(assert.deepEqual(keys(await ada.searchItems(["memories"])), ["city", "tea", "coffee"]) === undefined,
  "searchItems: newest first");
ok(assert.deepEqual(keys(await ada.searchItems(["memories"], { filter: { kind: "pref" } })), ["tea", "coffee"]) === undefined,
  "with a filter");
ok(assert.deepEqual(keys(await ada.searchItems(["memories"], { limit: 1, offset: 1 })), ["tea"]) === undefined,
  "with limit and offset");
const byWords = await ada.searchItems(["memories"], { query: "roast" });
ok(keys(byWords).join() === "coffee" && byWords.items[0].score > 0, "a text query ranks by words");

const spaces = await ada.listNamespaces({ prefix: ["memories"] });
ok(assert.deepEqual(spaces.namespaces, [["memories", "facts"], ["memories", "prefs"]]) === undefined, "listNamespaces");
const shallow = await ada.listNamespaces({ maxDepth: 1 });
ok(assert.deepEqual(shallow.namespaces, [["memories"]]) === undefined, "with maxDepth");

ok((await bob.getItem(prefs, "coffee")) === null, "bob cannot read ada's item");
ok((await bob.searchItems([])).items.length === 0, "bob's search finds nothing of ada's");
ok((await bob.listNamespaces()).namespaces.length === 0, "bob has no namespaces");
await bob.deleteItem(prefs, "coffee");
ok((await ada.getItem(prefs, "coffee")) !== null, "bob's delete leaves ada's item");

await ada.deleteItem(prefs, "coffee");
ok((await ada.getItem(prefs, "coffee")) === null, "deleteItem removes it");

try {
  await ada.putItem(["memories", ""], "k", { x: 1 });
  assert.fail("an empty label was accepted");
} catch (e) {
  ok(e.status === 422, `an empty namespace label is 422 (${e.status})`);
}
console.log(`all ${passed()} checks passed`);
