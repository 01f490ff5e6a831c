// Drives palgraph's crons through the official JS `@langchain/langgraph-sdk`
// (`client.crons.*`), as two users (API keys key-ada-… and key-bob-…): create (on a thread,
// stateless), a tick that runs, search, count, update, delete, and neither user seeing the
// other's crons. The server polls for due ticks every 100 ms (PALGRAPH_CRON_POLL_MS).
//
// Usage: node sdk_crons.mjs http://127.0.0.1:PORT
// Every step asserts and prints one `ok` line; the first failure exits non-zero.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { ok, passed } from "./checks.mjs";

const URL = process.argv[2];
async function status(call) {
  try {
    await call;
  } catch (e) {
    return e.status;
  }
  return 200;
}
const words = (text) => ({ messages: [{ role: "user", content: text }], words: 2, delay_ms: 0 });

const ada = new Client({ apiUrl: URL, apiKey: "key-ada-0123456789abcdef" });
const bob = new Client({ apiUrl: URL, apiKey: "key-bob-0123456789abcdef" });

const thread = await ada.threads.create();
const every = await ada.crons.createForThread(thread.thread_id, "streaming", {
  schedule: "* * * * * *",
  input: words("js tick"),
  metadata: { kind: "every" },
});
ok(every.thread_id === thread.thread_id && every.schedule === "* * * * * *", "createForThread: the cron on its thread");
ok(every.enabled === true && !Number.isNaN(Date.parse(every.next_run_date)), "enabled, with its next run date");
const deadline = Date.now() + 20000;
for (;;) {
  const runs = await ada.runs.list(thread.thread_id, { limit: 100 });
  if (runs.some((r) => r.metadata.cron_id === every.cron_id && r.status === "success")) break;
  assert.ok(Date.now() < deadline, "the thread cron's tick did not run");
  await new Promise((r) => setTimeout(r, 200));
}
ok(true, "a tick ran on the thread");

const end = new Date(Date.now() + 7 * 86400000);
const daily = await ada.crons.create("streaming", {
  schedule: "0 9 * * *",
  timezone: "Europe/Lisbon",
  endTime: end,
  input: words("bom dia"),
  metadata: { kind: "daily" },
});
ok(daily.thread_id === null && daily.timezone === "Europe/Lisbon", "create: a stateless cron in its time zone");
ok(Math.abs(Date.parse(daily.end_time) - end.getTime()) < 1000, "its endTime");
const hour = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Lisbon", hour: "2-digit", minute: "2-digit" })
  .format(new Date(daily.next_run_date));
ok(hour === "09:00", `its next run is 09:00 in Lisbon (${daily.next_run_date})`);

const found = await ada.crons.search({ sortBy: "created_at", sortOrder: "asc" });
ok(found.map((c) => c.cron_id).join() === [every.cron_id, daily.cron_id].join(), "search: the caller's crons, sorted");
ok((await ada.crons.search({ metadata: { kind: "daily" } })).length === 1, "search by metadata");
ok((await ada.crons.count()) === 2 && (await ada.crons.count({ threadId: thread.thread_id })) === 1, "count");

const changed = await ada.crons.update(daily.cron_id, { schedule: "15 8 * * *", enabled: false });
ok(changed.schedule === "15 8 * * *" && changed.enabled === false, "update: schedule and enabled");
ok((await ada.crons.search({ enabled: false })).map((c) => c.cron_id).join() === daily.cron_id, "search by enabled");
ok((await status(ada.crons.create("streaming", { schedule: "nope" }))) === 422, "a bad schedule is 422");

ok((await bob.crons.count()) === 0 && (await bob.crons.search()).length === 0, "bob sees none of ada's crons");
ok((await status(bob.crons.delete(daily.cron_id))) === 404, "bob cannot delete ada's cron (404)");
ok((await status(bob.crons.update(daily.cron_id, { enabled: true }))) === 404, "bob cannot update it (404)");

await ada.crons.delete(every.cron_id);
await ada.crons.delete(daily.cron_id);
ok((await ada.crons.count()) === 0, "delete");
console.log(`all ${passed()} checks passed`);
