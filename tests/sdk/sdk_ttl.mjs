// Threads' time to live through the official JS `@langchain/langgraph-sdk`, against a
// palgraph server that sweeps every second (PALGRAPH_THREAD_TTL_SWEEP_SECS=1):
// `threads.create({ ttl })` and `threads.update(id, { ttl })` as the SDK sends them (a
// number of minutes, which it turns into `{ ttl, strategy: "delete" }`, or the object).
//
// Usage: node sdk_ttl.mjs http://127.0.0.1:PORT
// Every step asserts and prints one `ok` line; the first failure exits non-zero.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { ok, passed } from "./checks.mjs";

const URL = process.argv[2];
// 1.2 s after the thread's last change.
const SHORT = 0.02;
const human = (text) => ({ messages: [{ type: "human", content: text }] });
async function within(what, cond, ms = 30000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function gone(client, id) {
  try {
    await client.threads.get(id);
    return false;
  } catch (e) {
    return e.status === 404;
  }
}

const client = new Client({ apiUrl: URL });
const deleted = await client.threads.create({ ttl: SHORT });
await client.runs.wait(deleted.thread_id, "fanout", { input: human("first") });
const kept = await client.threads.create();
await client.runs.wait(kept.thread_id, "fanout", { input: human("kept") });
const updated = await client.threads.create();
await client.threads.update(updated.thread_id, { metadata: { k: 1 }, ttl: SHORT });
const pruned = await client.threads.create({ ttl: { strategy: "keep_latest", ttl: SHORT } });
for (const text of ["one", "two"]) {
  await client.runs.wait(pruned.thread_id, "fanout", { input: human(text) });
}
const before = await client.threads.getState(pruned.thread_id);
ok((await client.threads.getHistory(pruned.thread_id)).length > 1, "history before the sweep");

await within("the expired thread deleted", () => gone(client, deleted.thread_id));
ok(true, "threads.create({ ttl: minutes }): deleted once left alone that long");
await within("the updated thread deleted", () => gone(client, updated.thread_id));
ok(true, "threads.update(id, { ttl }): deleted too");
await within("the keep_latest thread pruned", async () => (await client.threads.getHistory(pruned.thread_id)).length === 1);
const after = await client.threads.getState(pruned.thread_id);
assert.deepEqual(after.values, before.values);
ok(true, "keep_latest keeps the thread's state");
ok((await client.threads.get(kept.thread_id)).thread_id === kept.thread_id, "a thread without a ttl stays");
await assert.rejects(client.threads.create({ ttl: -1 }), (e) => e.status === 422);
ok(true, "a negative ttl is a 422");
console.log(`all ${passed()} checks passed`);
