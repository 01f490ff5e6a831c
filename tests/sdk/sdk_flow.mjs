// Drives a running palgraph server through the official JS `@langchain/langgraph-sdk`:
// first the exact call sequence agent-chat-ui makes through `useStream` (driven with the
// SDK's own `StreamManager` and `MessageTupleManager`, the machinery behind `useStream`,
// since the hook itself needs React), then the core flow: streaming modes, interrupts and
// resume, joining after a disconnect, cancel, history, fork, double texting.
//
// Usage: node sdk_flow.mjs http://127.0.0.1:PORT
// Every step asserts and prints one `ok` line; the first failure exits non-zero.

import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@langchain/langgraph-sdk";
import { MessageTupleManager, StreamManager, extractInterrupts } from "@langchain/langgraph-sdk/ui";
import { ok, passed } from "./checks.mjs";

const URL = process.argv[2];
// An origin the server allows (PALGRAPH_CORS_ORIGINS), to check what a browser needs.
const ORIGIN = process.argv[3];

const client = new Client({ apiUrl: URL, apiKey: null });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const unique = (xs) => [...new Set(xs)];
const words = (text, n, delay) => ({ messages: [{ role: "user", content: text }], words: n, delay_ms: delay });

async function collect(stream) {
  const out = [];
  for await (const part of stream) out.push(part);
  return out;
}

async function expectStatus(status, promise, what) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.status, status, `${what}: ${e}`);
    ok(true, `${what} (${status})`);
    return e;
  }
  assert.fail(`${what}: no error`);
}

// Waits for `cond()` (checked every 10 ms); fails with `what` after 30 s rather than hang.
async function until(cond, what) {
  for (let i = 0; i < 3000; i += 1) {
    if (cond()) return;
    await sleep(10);
  }
  assert.fail(`${what}: not within 30 s`);
}

// `promise`, or a failure naming `what` after 30 s rather than a hang.
async function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within 30 s`)), 30_000);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitStatus(threadId, runId, want) {
  for (let i = 0; i < 400; i += 1) {
    const run = await client.runs.get(threadId, runId);
    if (run.status === want) return run;
    await sleep(25);
  }
  assert.fail(`run ${runId} never reached ${want}`);
}

// What useStream does for one submit or join: a StreamManager consumes the SDK stream, a
// MessageTupleManager assembles `messages-tuple` chunks, custom events go to the callback.
function streamSession(initialValues = {}) {
  const manager = new StreamManager(new MessageTupleManager(), { throttle: false });
  const session = { manager, custom: [], metadata: [], error: undefined };
  session.run = (action, extra = {}) =>
    manager.start(action, {
      getMessages: (values) => values.messages ?? [],
      setMessages: (values, messages) => ({ ...values, messages }),
      initialValues,
      callbacks: {
        onCustomEvent: (data) => session.custom.push(data),
        onMetadataEvent: (data) => session.metadata.push(data),
      },
      onSuccess: async () => undefined,
      onError: (e) => {
        session.error = e;
      },
      onFinish: () => {},
      ...extra,
    });
  return session;
}

// useStream.submit(values, submitOptions) for agent-chat-ui: streamMode ["values"] plus the
// modes useStream tracks (reading `messages` adds messages-tuple and values, onCustomEvent
// adds custom), streamSubgraphs and streamResumable on, so onDisconnect "continue".
function submit(session, threadId, assistantId, values, opts = {}) {
  return session.run((signal) => {
    let checkpoint = opts.checkpoint;
    if (checkpoint != null) {
      checkpoint = { ...checkpoint };
      delete checkpoint.thread_id;
    }
    return client.runs.stream(threadId, assistantId, {
      input: values,
      command: opts.command,
      config: opts.config,
      context: opts.context,
      metadata: opts.metadata,
      multitaskStrategy: opts.multitaskStrategy,
      onDisconnect: "continue",
      signal,
      checkpoint,
      streamMode: unique([...(opts.streamMode ?? ["values"]), "messages-tuple", "values", "custom"]),
      streamSubgraphs: true,
      streamResumable: true,
      onRunCreated: (meta) => {
        session.runMeta = meta;
      },
    });
  });
}

async function agentChatUi() {
  const assistantId = "palassist";
  // Stream.tsx checkGraphStatus: GET /info.
  const info = await fetch(`${URL}/info`);
  ok(info.ok && (await info.json()).version, "GET /info");
  if (ORIGIN) {
    // agent-chat-ui in a browser: the preflight passes and Content-Location is readable.
    const pre = await fetch(`${URL}/threads/search`, {
      method: "OPTIONS",
      headers: { Origin: ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-api-key" },
    });
    ok(pre.ok && pre.headers.get("access-control-allow-origin") === ORIGIN, "CORS preflight for the allowed origin");
    const post = await fetch(`${URL}/threads`, { method: "POST", headers: { Origin: ORIGIN, "content-type": "application/json" }, body: "{}" });
    ok(post.headers.get("access-control-expose-headers").includes("content-location"), "CORS exposes Content-Location");
    const other = await fetch(`${URL}/info`, { headers: { Origin: "http://elsewhere.example" } });
    ok(other.headers.get("access-control-allow-origin") === null, "other origins get no CORS headers");
  }
  // Thread.tsx getThreads: threads.search({metadata: {graph_id}, limit: 100}).
  const before = await client.threads.search({ metadata: { graph_id: assistantId }, limit: 100 });
  ok(Array.isArray(before), "threads.search({metadata: {graph_id}, limit: 100})");
  // useStream.submit without a thread: threads.create, then runs.stream.
  const thread = await client.threads.create({ threadId: undefined, metadata: undefined });
  const threadId = thread.thread_id;
  ok(typeof threadId === "string", "threads.create (no thread yet)");
  // agent-chat-ui sends its attachments as content blocks (MultimodalPreview / useFileUpload).
  const human = {
    id: crypto.randomUUID(),
    type: "human",
    content: [
      { type: "text", text: "Summarize the document" },
      { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=", metadata: { name: "scan.png" } },
    ],
  };
  const s1 = streamSession();
  await submit(s1, threadId, assistantId, { messages: [human] }, { streamMode: ["values"] });
  ok(s1.error === undefined, "runs.stream consumed by StreamManager without error");
  ok(s1.runMeta?.run_id && s1.runMeta.thread_id === threadId, "onRunCreated got run_id and thread_id from Content-Location");
  ok(s1.metadata[0]?.run_id === s1.runMeta.run_id, "metadata event");
  const values = s1.manager.values;
  ok(values.messages[0].id === human.id && isDeepStrictEqual(values.messages[0].content, human.content), "stream values hold the user's message with its content blocks whole");
  ok(s1.custom.some((c) => c.type === "status"), "onCustomEvent received custom events");
  const interrupt = extractInterrupts(values);
  const answered = values.messages.some((m) => m.type === "ai");
  ok(interrupt !== undefined || answered, "palassist answered or asked (interrupt read from values.__interrupt__)");
  // fetchStateHistory: threads.getHistory(threadId, {limit: 10}) after the run.
  const history = await client.threads.getHistory(threadId, { limit: 10 });
  ok(history.length > 0 && history[0].values.messages[0].id === human.id, "threads.getHistory({limit: 10})");
  if (interrupt !== undefined) {
    const fromHistory = extractInterrupts(history[0].values, { threadState: history[0] });
    ok(fromHistory?.id === interrupt.id, "the interrupt also comes from threadHead.tasks[].interrupts");
    // Answer it the way agent-inbox does: submit(undefined, {command: {resume}}).
    const s2 = streamSession(history[0].values);
    await submit(s2, threadId, assistantId, undefined, { command: { resume: { type: "cancel" } } });
    ok(s2.error === undefined && extractInterrupts(s2.manager.values) === undefined, "submit(undefined, {command: {resume}}) clears the interrupt");
  }
  await agentInbox(assistantId);
  const found = await client.threads.search({ metadata: { graph_id: assistantId }, limit: 100 });
  ok(found.some((t) => t.thread_id === threadId), "the thread is found by metadata.graph_id (set by its run)");

  // Regenerate: submit(undefined, {checkpoint: parent_checkpoint}) on the streaming graph.
  const t2 = (await client.threads.create({})).thread_id;
  const s3 = streamSession();
  await submit(s3, t2, "streaming", words("alpha beta", 4, 0));
  ok(s3.manager.values.messages.at(-1).content === "alpha beta alpha beta", "messages-tuple chunks assemble into the answer");
  const h = await client.threads.getHistory(t2, { limit: 10 });
  const firstSeen = h.find((st) => st.next.includes("write"));
  const s4 = streamSession(h[0].values);
  await submit(s4, t2, "streaming", undefined, { checkpoint: firstSeen.checkpoint });
  ok(s4.error === undefined && s4.manager.values.messages.length === 2, "regenerate from a checkpoint (fork)");
  const branches = await client.threads.getHistory(t2, { limit: 10 });
  ok(branches.filter((st) => st.metadata.source === "fork").length === 1, "the fork is in the history");

  // Leave a run (stop() without reconnect storage only aborts the fetch), rejoin it on
  // mount with joinStream(runId, "-1"), then cancel a run as stop() does with storage.
  const s5 = streamSession();
  const running = submit(s5, t2, "streaming", words("slow steady words", 30, 15));
  const wrote = (n) => {
    const last = s5.manager.values?.messages?.at(-1);
    return last?.type === "ai" && last.content.startsWith("slow") && last.content.split(" ").length >= n;
  };
  await until(() => wrote(3) || s5.error !== undefined, "three words streamed");
  assert.equal(s5.error, undefined, `the slow run's stream: ${s5.error}`);
  await s5.manager.stop(s5.manager.values, {});
  await running;
  const runId = s5.runMeta.run_id;
  ok((await client.runs.get(t2, runId)).status === "running", "stop() aborts the stream; the run goes on (onDisconnect continue)");
  const s6 = streamSession();
  await s6.run((signal) => client.runs.joinStream(t2, runId, { signal, lastEventId: "-1" }), { isReplaying: true });
  ok(s6.manager.values.messages.at(-1).content.split(" ").length === 30, "joinStream(runId, {lastEventId: '-1'}) replays the whole run");
  ok((await client.runs.get(t2, runId)).status === "success", "the rejoined run finished");
  const s7 = streamSession();
  const slow = submit(s7, t2, "streaming", words("cancel me", 1000, 10));
  await until(
    () => (s7.manager.values?.messages?.at(-1)?.content ?? "").startsWith("cancel me") || s7.error !== undefined,
    "the run to cancel streamed",
  );
  assert.equal(s7.error, undefined, `the run to cancel's stream: ${s7.error}`);
  await client.runs.cancel(t2, s7.runMeta.run_id);
  await slow;
  await waitStatus(t2, s7.runMeta.run_id, "interrupted");
  ok(true, "runs.cancel(threadId, runId) from stop()");
}

// agent-chat-ui's test for a prompt it can render and answer (src/lib/agent-inbox-interrupt.ts
// isAgentInboxInterruptSchema): an Agent Inbox HumanInterrupt, alone or first in a list.
function isAgentInboxInterrupt(value) {
  const v = Array.isArray(value) ? value[0] : value;
  return (
    !!v &&
    typeof v === "object" &&
    typeof v.action_request === "object" &&
    typeof v.action_request.action === "string" &&
    typeof v.config === "object" &&
    ["allow_respond", "allow_accept", "allow_edit", "allow_ignore"].every((k) => typeof v.config[k] === "boolean")
  );
}

// PalAssist's prompts as agent-chat-ui shows them (its Agent Inbox view), answered the way
// its useInterruptedActions does: submit({}, {command: {resume: [HumanResponse]}}).
async function agentInbox(assistantId) {
  const ask = { type: "human", content: "Summarize the policy" };
  const t = (await client.threads.create({})).thread_id;
  const s = streamSession();
  await submit(s, t, assistantId, { messages: [ask] });
  const intr = extractInterrupts(s.manager.values);
  ok(intr !== undefined && isAgentInboxInterrupt(intr.value), "a PalAssist prompt is an Agent Inbox HumanInterrupt agent-chat-ui renders");
  const v = intr.value;
  ok(v.interrupt_type === "doc_choice" && v.options.length === 3 && v.action_request.action === "doc_choice", "alongside the chat contract's own shape");
  ok(v.config.allow_respond && v.config.allow_ignore && !v.config.allow_accept && !v.config.allow_edit, "answerable by a response or ignored");
  ok(v.description.includes(v.message) && v.options.every((o) => v.description.includes(o.label)), "its description lists the options");
  const pick = v.options.find((o) => o.label === "Data Retention Policy 2024");
  // useStream starts from the thread's head (fetchStateHistory), as the page reloads it.
  const s2 = streamSession((await client.threads.getHistory(t, { limit: 1 }))[0].values);
  await submit(s2, t, assistantId, {}, { command: { resume: [{ type: "response", args: pick.label }] } });
  const answer = s2.manager.values.messages.at(-1);
  ok(s2.error === undefined && extractInterrupts(s2.manager.values) === undefined, "the response resumes the run");
  ok(answer.type === "ai" && answer.content.includes("Data Retention Policy 2024") && !answer.content.includes("Policy 2023**"), "PalAssist answers about the document the response named");
  // Ignore cancels the prompt politely.
  const t2 = (await client.threads.create({})).thread_id;
  const s3 = streamSession();
  await submit(s3, t2, assistantId, { messages: [ask] });
  const s4 = streamSession((await client.threads.getHistory(t2, { limit: 1 }))[0].values);
  await submit(s4, t2, assistantId, {}, { command: { resume: [{ type: "ignore", args: null }] } });
  const after = s4.manager.values;
  ok(s4.error === undefined && after.cancelled === true && after.response.startsWith("Okay, I've stopped there") && after.messages.at(-1).metadata.answer === null, "ignore cancels the prompt (its record has no answer)");
  const state = await client.threads.getState(t2);
  ok(state.next.length === 0 && (await client.threads.get(t2)).status === "idle", "and the thread is idle");
}

async function coreFlow() {
  const assistants = await client.assistants.search({ limit: 10 });
  ok(assistants.some((a) => a.graph_id === "approval"), "assistants.search");
  const schemas = await client.assistants.getSchemas("palassist");
  ok(schemas.state_schema.properties.messages, "assistants.getSchemas");
  const tid = (await client.threads.create({ graphId: "approval", metadata: { suite: "js" } })).thread_id;
  ok((await client.threads.get(tid)).metadata.graph_id === "approval", "threads.create({graphId})");

  // Several modes.
  const sid = (await client.threads.create({})).thread_id;
  const parts = await collect(
    client.runs.stream(sid, "streaming", {
      input: words("one two three", 6, 0),
      streamMode: ["values", "updates", "messages-tuple", "custom", "debug", "messages"],
    }),
  );
  const names = parts.map((p) => p.event);
  ok(names[0] === "metadata", "runs.stream: metadata first");
  ok(names.filter((n) => n === "messages").length === 6, "messages-tuple events");
  ok(names.includes("messages/partial") && names.includes("messages/metadata"), "messages mode: messages/metadata and messages/partial");
  ok(names.includes("updates") && names.includes("debug") && names.includes("custom"), "updates, debug and custom events");
  const ids = parts.filter((p) => p.id !== undefined).map((p) => Number(p.id));
  ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), "event ids unique and increasing");

  // Interrupt, resume with a value, then by id.
  const ip = await collect(client.runs.stream(tid, "approval", { input: { messages: [{ type: "human", content: "the launch" }] } }));
  const intr = ip.at(-1).data.__interrupt__[0];
  ok(intr.value.question === "Publish this draft?", "values.__interrupt__");
  const state = await client.threads.getState(tid);
  ok(state.tasks[0].interrupts[0].id === intr.id && (await client.threads.get(tid)).status === "interrupted", "getState tasks[].interrupts; thread interrupted");
  const again = await collect(client.runs.stream(tid, "approval", { command: { resume: { approve: false, note: "shorter" } } }));
  const intr2 = again.at(-1).data.__interrupt__[0];
  ok(intr2.value.draft.includes("shorter"), "command.resume with a value");
  const done = await client.runs.wait(tid, "approval", { command: { resume: { [intr2.id]: { approve: true } } } });
  ok(done.messages.at(-1).content.startsWith("Published: Draft 2"), "command.resume by interrupt id (runs.wait)");
  await expectStatus(400, client.runs.create(tid, "approval", { command: { resume: true } }), "resume with nothing pending");

  // Join after a disconnect.
  const jt = (await client.threads.create({})).thread_id;
  const controller = new AbortController();
  let meta;
  const seen = [];
  try {
    for await (const p of client.runs.stream(jt, "streaming", {
      input: words("a b c", 30, 15),
      streamMode: ["messages-tuple"],
      streamResumable: true,
      signal: controller.signal,
      onRunCreated: (m) => {
        meta = m;
      },
    })) {
      seen.push(p);
      if (seen.length === 5) controller.abort();
    }
  } catch (e) {
    assert.ok(e.name === "AbortError" || String(e).includes("abort"), `${e}`);
  }
  const rest = await collect(client.runs.joinStream(jt, meta.run_id, { lastEventId: seen.at(-1).id }));
  const all = await collect(client.runs.joinStream(jt, meta.run_id, { lastEventId: "-1" }));
  const strip = (xs) => xs.filter((p) => p.event !== "metadata").map((p) => [p.id, p.event, JSON.stringify(p.data)]);
  ok(JSON.stringify(strip([...seen, ...rest])) === JSON.stringify(strip(all)), "joinStream(lastEventId) resumes exactly after the last event seen");
  ok((await client.runs.join(jt, meta.run_id)).messages.length === 2, "runs.join");

  // Cancel and history.
  const ct = (await client.threads.create({})).thread_id;
  const run = await client.runs.create(ct, "streaming", { input: words("long", 1000, 10) });
  let chunks = 0;
  for await (const p of client.runs.joinStream(ct, run.run_id, { lastEventId: "-1", streamMode: ["messages-tuple"] })) {
    if (p.event === "messages" && ++chunks === 3) break;
  }
  await client.runs.cancel(ct, run.run_id, true);
  ok((await client.runs.get(ct, run.run_id)).status === "interrupted", "runs.cancel(wait=true)");
  const hist = await client.threads.getHistory(ct, { limit: 10 });
  ok(hist[0].values.messages.at(-1).metadata.interrupted === true, "history shows the cancelled answer");
  const fork = await client.runs.wait(ct, "streaming", { input: words("again", 1, 0), checkpointId: hist.at(-1).checkpoint.checkpoint_id });
  // The oldest checkpoint is the thread's input checkpoint: as on LangGraph, a run with input
  // from it replaces that input (the first message edited), on a branch of its own.
  ok(fork.messages.map((m) => m.content).join("|") === "again|again", "runs.wait from checkpointId forks (the input replaced, the cancelled answer not on the new branch)");
  ok((await client.threads.getHistory(ct, { limit: 20 })).some((st) => st.values.messages?.at(-1)?.metadata?.interrupted === true), "the cancelled branch stays in the history");

  // Double texting.
  const dt = (await client.threads.create({})).thread_id;
  const first = await client.runs.create(dt, "streaming", { input: words("first", 1000, 10) });
  await waitStatus(dt, first.run_id, "running");
  await expectStatus(409, client.runs.create(dt, "streaming", { input: words("no", 1, 0), multitaskStrategy: "reject" }), "multitaskStrategy reject");
  const second = await client.runs.create(dt, "streaming", { input: words("second", 1, 0), multitaskStrategy: "interrupt" });
  await waitStatus(dt, second.run_id, "success");
  ok((await client.runs.get(dt, first.run_id)).status === "interrupted", "multitaskStrategy interrupt");
  const third = await client.runs.create(dt, "streaming", { input: words("third", 1000, 10) });
  await waitStatus(dt, third.run_id, "running");
  const fourth = await client.runs.create(dt, "streaming", { input: words("fourth", 1, 0), multitaskStrategy: "rollback" });
  await waitStatus(dt, fourth.run_id, "success");
  // A rolled back run is deleted right after its end is recorded.
  for (let i = 0; i < 200; i += 1) {
    const gone = await client.runs.get(dt, third.run_id).then(() => false, (e) => e.status === 404);
    if (gone) break;
    await sleep(10);
  }
  await expectStatus(404, client.runs.get(dt, third.run_id), "multitaskStrategy rollback deletes the run");
  const fifth = await client.runs.create(dt, "streaming", { input: words("fifth", 10, 10) });
  const sixth = await client.runs.create(dt, "streaming", { input: words("sixth", 1, 0), multitaskStrategy: "enqueue" });
  await client.runs.join(dt, sixth.run_id);
  ok((await client.runs.get(dt, fifth.run_id)).status === "success", "multitaskStrategy enqueue");
  const msgs = (await client.threads.getState(dt)).values.messages.map((m) => m.content);
  ok(msgs.at(-1) === "sixth" && msgs.at(-3).startsWith("fifth"), "enqueued run ran after the first");
}

// client.threads.stream(): the thread streaming protocol (POST /threads/{id}/commands and
// /stream/events), as the JS ThreadStream drives it.
async function threadStreamProtocol() {
  // `thread.messages` read from before the run starts: a subscription made after
  // `run.start` may come when a short run has ended, and the SDK may then pause it on the
  // run's end before its own stream replays the messages.
  const tid = (await client.threads.create({})).thread_id;
  const t = client.threads.stream(tid, { assistantId: "streaming" });
  const texts = [];
  const reading = (async () => {
    for await (const m of t.messages) texts.push(await m.text);
  })();
  const started = await t.run.start({ input: words("a b c", 3, 5) });
  ok(typeof started.run_id === "string", "thread.run.start");
  const out = await within(t.output, "thread.output");
  const last = out.messages.at(-1);
  ok((last.kwargs?.content ?? last.content) === "a b c", "thread.output is the final state");
  await until(() => texts.length > 0, "thread.messages");
  await t.close();
  await within(reading, "thread.messages to end");
  ok(texts.length === 1 && texts[0] === "a b c", `thread.messages assembles the streamed answer (${JSON.stringify(texts)})`);
  // A subscription made after a short run ended re-opens the stream while the first one is
  // still up: the server replays the run to it (the thread's latest run, started by a
  // command and carried by a connected stream).
  const late = client.threads.stream({ assistantId: "streaming" });
  await late.run.start({ input: words("d e", 2, 5) });
  await within(late.output, "thread.output of the late subscription's run");
  const lateTexts = [];
  const lateReading = (async () => {
    for await (const m of late.messages) lateTexts.push(await m.text);
  })();
  await until(() => lateTexts.length > 0, "thread.messages subscribed after the run ended");
  await late.close();
  await within(lateReading, "the late thread.messages to end");
  ok(lateTexts.length === 1 && lateTexts[0] === "d e", `thread.messages subscribed after the run ended replays it (${JSON.stringify(lateTexts)})`);
  const a = client.threads.stream({ assistantId: "approval" });
  await a.run.start({ input: { messages: [{ role: "user", content: "js protocol" }] } });
  await until(() => a.interrupted, "thread.interrupted");
  const intr = a.interrupts[0];
  ok(a.interrupted && intr.payload.question === "Publish this draft?", "thread.interrupted with the interrupt's payload");
  await a.respondInput({ namespace: [], interrupt_id: intr.interruptId, response: { approve: true } });
  let state;
  for (let i = 0; i < 400; i += 1) {
    state = await client.threads.getState(a.threadId);
    if (state.next.length === 0) break;
    await sleep(25);
  }
  ok(state.values.messages.at(-1).content === 'Published: Draft 1 about "js protocol".', "respondInput resumes the run to its end");
  await a.close();
}

const started = Date.now();
for (const step of [agentChatUi, coreFlow, threadStreamProtocol]) {
  const t0 = Date.now();
  await step();
  console.log(`# ${step.name}: ${((Date.now() - t0) / 1000).toFixed(2)}s`);
}
console.log(`# ${passed()} checks passed in ${((Date.now() - started) / 1000).toFixed(1)}s against ${URL}`);
