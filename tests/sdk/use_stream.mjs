// Drives a running palgraph server through the REAL React hook `useStream` of the official
// `@langchain/langgraph-sdk/react`, rendered in Node (jsdom + react-dom through
// @testing-library/react's renderHook), called exactly as agent-chat-ui calls it
// (src/providers/Stream.tsx: assistantId, threadId, fetchStateHistory: true,
// reconnectOnMount: true; src/components/thread/*: submit with streamMode ["values"] and
// optimisticValues, stop(), Agent Inbox answers as command.resume, Edit and Regenerate from
// getMessagesMetadata(message).firstSeenState.parent_checkpoint). The flows: send and
// stream, reload with reconnectOnMount, cancel, answer an interrupt, edit the first
// message, regenerate.
//
// Usage: node use_stream.mjs http://127.0.0.1:PORT
// Every step asserts and prints one `ok` line; the first failure exits non-zero.

import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import { ok, passed } from "./checks.mjs";

// A browser page for React and for useStream's reconnectOnMount (window.sessionStorage).
// Node's own fetch, AbortController and timers stay: the SDK uses them as in a browser.
const dom = new JSDOM("<!doctype html><html><body></body></html>", { url: "http://localhost:3000/" });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.sessionStorage = dom.window.sessionStorage;
Object.defineProperty(globalThis, "navigator", { value: dom.window.navigator, configurable: true });
globalThis.HTMLElement = dom.window.HTMLElement;

const { renderHook, cleanup } = await import("@testing-library/react");
const { useStream } = await import("@langchain/langgraph-sdk/react");
const { Client } = await import("@langchain/langgraph-sdk");
// Updates land as in a browser (the hook streams outside act()), not batched by act.
globalThis.IS_REACT_ACT_ENVIRONMENT = false;

const URL = process.argv[2];

const client = new Client({ apiUrl: URL, apiKey: null });
const unique = (xs) => [...new Set(xs)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (m) => (typeof m?.content === "string" ? m.content : (m?.content ?? []).map((b) => b.text ?? "").join(""));

async function waitFor(cond, what, ms = 20000) {
  const until = Date.now() + ms;
  for (;;) {
    let v;
    try {
      v = cond();
    } catch {
      v = false;
    }
    if (v) return v;
    if (Date.now() > until) assert.fail(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

async function waitRun(threadId, runId, want) {
  let run;
  for (let i = 0; i < 800; i += 1) {
    run = await client.runs.get(threadId, runId);
    if (run.status === want) return run;
    await sleep(25);
  }
  assert.fail(`run ${runId} is ${run?.status}, never ${want}`);
}

// One agent-chat-ui page: its Stream provider's useStream, re-rendered with the thread id
// it learns (onThreadId puts it in the URL query, which re-renders the provider). A "page"
// has its own fetch that a reload aborts, as a browser drops a page's connections.
function openPage(assistantId, threadId = null) {
  const page = { renders: [], threadId, unloaded: new AbortController() };
  const pageFetch = (input, init = {}) =>
    fetch(input, { ...init, signal: init.signal ? AbortSignal.any([init.signal, page.unloaded.signal]) : page.unloaded.signal });
  // One object per page, so the hook keeps one Client (agent-chat-ui passes apiUrl/apiKey).
  const callerOptions = { fetch: pageFetch };
  const hook = renderHook(
    ({ threadId: tid }) => {
      const stream = useStream({
        apiUrl: URL,
        apiKey: undefined,
        assistantId,
        threadId: tid,
        fetchStateHistory: true,
        reconnectOnMount: true,
        messagesKey: "messages",
        callerOptions,
        onThreadId: (id) => {
          page.threadId = id;
          hook.rerender({ threadId: id });
        },
        onCustomEvent: () => {},
        onError: (e) => {
          page.error = e;
        },
      });
      // What the thread view reads on every render.
      page.renders.push({ isLoading: stream.isLoading, messages: stream.messages, interrupt: stream.interrupt });
      return stream;
    },
    { initialProps: { threadId } },
  );
  page.hook = hook;
  page.s = () => hook.result.current;
  page.unload = () => {
    page.unloaded.abort();
    hook.unmount();
  };
  return page;
}

// thread/index.tsx handleSubmit.
function sendMessage(page, content) {
  const human = { id: crypto.randomUUID(), type: "human", content: [{ type: "text", text: content }] };
  const s = page.s();
  const toolMessages = [];
  return {
    human,
    done: s.submit(
      { messages: [...toolMessages, human], context: undefined },
      {
        streamMode: ["values"],
        streamSubgraphs: true,
        streamResumable: true,
        optimisticValues: (prev) => ({ ...prev, context: undefined, messages: [...(prev.messages ?? []), ...toolMessages, human] }),
      },
    ),
  };
}

const idle = (page) => !page.s().isLoading;

// 1. Send a message and watch it stream.
async function sendAndStream() {
  const page = openPage("palassist");
  await waitFor(() => idle(page), "a fresh page is idle");
  const { human, done } = sendMessage(page, "What is the data retention period for customer records?");
  await waitFor(() => page.s().messages.at(-1)?.id === human.id, "the optimistic message");
  ok(page.renders.some((r) => r.isLoading && r.messages.length === 1 && r.messages[0].id === human.id), "optimisticValues show the message before the answer");
  await done;
  await waitFor(() => idle(page) && page.s().messages.length >= 2, "the answer settles");
  const s = page.s();
  ok(page.error === undefined && s.error === undefined, "no error");
  ok(typeof page.threadId === "string", "onThreadId got the new thread's id");
  const loading = page.renders.map((r) => r.isLoading);
  ok(loading.includes(true) && loading.at(-1) === false, "isLoading went true then false");
  const sizes = page.renders.filter((r) => r.isLoading).map((r) => text(r.messages.at(-1)).length);
  const grew = new Set(sizes).size;
  ok(grew >= 3, `the AI message grew while streaming (${grew} sizes rendered)`);
  const last = s.messages.at(-1);
  ok(s.messages[0].id === human.id && last.type === "ai" && /retention|retain|years/i.test(text(last)), `final AI message with content: ${text(last).slice(0, 60)}…`);
  return page;
}

// 5. Edit the first message: human.tsx handleSubmitEdit.
async function editFirst() {
  // On the `streaming` graph: its two checkpoints a turn keep both branches inside the ten
  // history entries useStream fetches (a PalAssist turn writes seven, so with
  // LangGraph's server as with palgraph the older branch falls out of that window).
  const page = openPage("streaming");
  await waitFor(() => idle(page), "a fresh page is idle");
  const { done } = sendMessage(page, "hi there");
  await done;
  await waitFor(() => idle(page) && page.s().messages.length === 2 && page.s().messages.at(-1)?.type === "ai", "the first turn settles");
  const s = page.s();
  const first = s.messages[0];
  const oldAi = s.messages.at(-1);
  const meta = s.getMessagesMetadata(first, 0);
  const parentCheckpoint = meta?.firstSeenState?.parent_checkpoint;
  // (With LangGraph's layout the first message is first seen in the step-0 checkpoint,
  // whose parent is the thread's input checkpoint; without a parent agent-chat-ui's Edit
  // submits no checkpoint and appends to the thread instead of branching.)
  ok(parentCheckpoint != null, `the first message's firstSeenState has a parent_checkpoint (first seen at step ${meta?.firstSeenState?.metadata?.step}, source ${meta?.firstSeenState?.metadata?.source})`);
  const edited = { id: crypto.randomUUID(), type: "human", content: [{ type: "text", text: "How long are customer records kept?" }] };
  await s.submit(
    { messages: [edited] },
    {
      checkpoint: parentCheckpoint,
      streamMode: ["values"],
      streamSubgraphs: true,
      streamResumable: true,
      optimisticValues: (prev) => {
        const values = meta?.firstSeenState?.values;
        if (!values) return prev;
        return { ...values, messages: [...(values.messages ?? []), edited] };
      },
    },
  );
  await waitFor(() => idle(page) && page.s().messages.at(-1)?.type === "ai" && page.s().messages[0].id === edited.id, "the edited branch settles");
  // The branches show once the hook has fetched the thread's history after the run.
  await waitFor(
    () => page.s().getMessagesMetadata(page.s().messages[0], 0)?.branchOptions?.length === 2,
    "the first message's branches",
  );
  const after = page.s();
  const ids = after.messages.map((m) => `${m.type}`);
  ok(after.error === undefined && ids.join(",") === "human,ai" && after.messages[0].id === edited.id && after.messages[1].id !== oldAi.id, `messages = [edited human, ai] (${ids})`);
  const m0 = after.getMessagesMetadata(after.messages[0], 0);
  ok(m0?.branchOptions?.length === 2, `the first message offers two branches in the BranchSwitcher (${JSON.stringify(m0?.branchOptions)})`);
  const hist = await client.threads.getHistory(page.threadId, { limit: 50 });
  const firsts = new Set(hist.map((st) => st.values?.messages?.[0]?.id).filter(Boolean));
  ok(firsts.has(first.id) && firsts.has(edited.id), "history holds both branches");
  const head = hist[0];
  ok(head.values.messages.length === 2 && head.values.messages[0].id === edited.id, "the thread's head is the new branch");
  // Switch back to the first branch and back, as the BranchSwitcher does.
  const other = m0.branchOptions.find((b) => b !== m0.branch);
  after.setBranch(other);
  await waitFor(() => page.s().messages[0]?.id === first.id, "setBranch shows the old branch");
  ok(page.s().messages.at(-1).id === oldAi.id, "setBranch(other) shows the original exchange");
  page.s().setBranch(m0.branch);
  await waitFor(() => page.s().messages[0]?.id === edited.id, "setBranch back");
  ok(true, "setBranch back shows the edited exchange");
  page.unload();
}

// 5b. Edit a later message (its firstSeenState's parent is the previous turn's last
// checkpoint): the thread branches there.
async function editLater() {
  const page = openPage("streaming");
  await waitFor(() => idle(page), "a fresh page is idle");
  const turn = async (content) => {
    const n = page.s().messages.length;
    const { done } = sendMessage(page, content);
    await done;
    await waitFor(() => idle(page) && page.s().messages.length === n + 2 && page.s().messages.at(-1)?.type === "ai", "the turn settles");
  };
  await turn("one");
  await turn("two");
  const s = page.s();
  const second = s.messages[2];
  const meta = s.getMessagesMetadata(second, 2);
  const parentCheckpoint = meta?.firstSeenState?.parent_checkpoint;
  ok(parentCheckpoint != null, "the second message's firstSeenState has a parent_checkpoint");
  const edited = { id: crypto.randomUUID(), type: "human", content: [{ type: "text", text: "three" }] };
  await s.submit(
    { messages: [edited] },
    {
      checkpoint: parentCheckpoint,
      streamMode: ["values"],
      streamSubgraphs: true,
      streamResumable: true,
      optimisticValues: (prev) => {
        const values = meta?.firstSeenState?.values;
        if (!values) return prev;
        return { ...values, messages: [...(values.messages ?? []), edited] };
      },
    },
  );
  await waitFor(() => idle(page) && page.s().messages[2]?.id === edited.id && page.s().messages.length === 4, "the edited branch settles");
  const after = page.s();
  ok(after.messages.slice(0, 2).every((m, i) => m.id === s.messages[i].id) && text(after.messages[3]).startsWith("three"), "messages = [first exchange, edited human, its answer]");
  const m2 = after.getMessagesMetadata(after.messages[2], 2);
  ok(m2?.branchOptions?.length === 2, "the edited message offers two branches");
  page.unload();
}

// 6. Regenerate: ai.tsx handleRegenerate(parent checkpoint of the answer's firstSeenState).
async function regenerate(page) {
  const s = page.s();
  const before = s.messages;
  const oldAi = before.at(-1);
  const parentCheckpoint = s.getMessagesMetadata(oldAi, before.length - 1)?.firstSeenState?.parent_checkpoint;
  ok(parentCheckpoint != null, "the AI message's firstSeenState has a parent_checkpoint");
  await s.submit(undefined, { checkpoint: parentCheckpoint, streamMode: ["values"], streamSubgraphs: true, streamResumable: true });
  await waitFor(() => idle(page) && page.s().messages.at(-1)?.type === "ai" && page.s().messages.at(-1).id !== oldAi.id, "the regenerated answer settles");
  const after = page.s().messages;
  ok(after.length === before.length && after.slice(0, -1).every((m, i) => m.id === before[i].id), "the new answer replaces the old one (same messages before it)");
  ok(text(after.at(-1)).length > 0, "the regenerated answer has content");
  const meta = page.s().getMessagesMetadata(after.at(-1), after.length - 1);
  ok(meta?.branchOptions?.length === 2, `the answer offers two branches (${JSON.stringify(meta?.branchOptions)})`);
  const state = await client.threads.getState(page.threadId);
  ok(state.values.messages.at(-1).id === after.at(-1).id, "the thread's head has the regenerated answer");
}

// 2. Reload while a run streams: the new page rejoins it (reconnectOnMount).
async function reloadRejoins() {
  const page = openPage("streaming");
  await waitFor(() => idle(page), "a fresh page is idle");
  const s = page.s();
  const human = { id: crypto.randomUUID(), type: "human", content: "steady words" };
  const done = s.submit({ messages: [human], words: 60, delay_ms: 20 }, { streamMode: ["values"], streamSubgraphs: true, streamResumable: true });
  await waitFor(() => text(page.s().messages.at(-1)).split(" ").length >= 5 && page.s().messages.at(-1).type === "ai", "some words streamed");
  const threadId = page.threadId;
  const runId = window.sessionStorage.getItem(`lg:stream:${threadId}`);
  ok(typeof runId === "string", "reconnectOnMount keeps the run id in sessionStorage");
  page.unload();
  done.catch(() => undefined);
  const goingOn = await client.runs.get(threadId, runId);
  ok(goingOn.status === "running", `the page went away; the run goes on (${goingOn.status})`);
  const again = openPage("streaming", threadId);
  await waitFor(() => again.s().isLoading, "the new page shows the run in progress");
  ok(true, "the reloaded page is loading (rejoined)");
  await waitFor(() => idle(again) && text(again.s().messages.at(-1)).split(" ").length === 60, "the rejoined stream ends with the full answer", 30000);
  const partial = again.renders.filter((r) => r.isLoading && r.messages.at(-1)?.type === "ai").map((r) => text(r.messages.at(-1)).split(" ").length);
  ok(partial.some((n) => n < 60), `the reloaded page rendered the answer growing (${unique(partial).length} sizes), so it streamed the run`);
  const st = again.s();
  ok(st.error === undefined && st.messages.length === 2 && st.messages[0].id === human.id, "the reloaded page ends with the whole exchange");
  ok((await client.runs.get(threadId, runId)).status === "success" && window.sessionStorage.getItem(`lg:stream:${threadId}`) === null, "the run succeeded; the stored run id is cleared");
  again.unload();
}

// 3. Cancel: stop() with reconnectOnMount cancels the run on the server.
async function cancel() {
  const page = openPage("streaming");
  await waitFor(() => idle(page), "a fresh page is idle");
  const s = page.s();
  const done = s.submit(
    { messages: [{ id: crypto.randomUUID(), type: "human", content: "cancel me" }], words: 1000, delay_ms: 10 },
    { streamMode: ["values"], streamSubgraphs: true, streamResumable: true },
  );
  await waitFor(() => page.s().messages.at(-1)?.type === "ai" && text(page.s().messages.at(-1)).startsWith("cancel me"), "the answer streams");
  const threadId = page.threadId;
  const runId = window.sessionStorage.getItem(`lg:stream:${threadId}`);
  await page.s().stop();
  await done.catch(() => undefined);
  await waitFor(() => idle(page), "stop() leaves the page idle");
  ok(true, "stop() ends isLoading");
  await waitRun(threadId, runId, "interrupted");
  ok(true, "runs.get says the run is interrupted (cancelled by stop())");
  let thread;
  for (let i = 0; i < 200; i += 1) {
    thread = await client.threads.get(threadId);
    if (thread.status === "idle") break;
    await sleep(25);
  }
  ok(thread.status === "idle", `the thread is idle (${thread.status})`);
  const words = text((await client.threads.getState(threadId)).values.messages.at(-1)).split(" ").length;
  ok(words < 1000, `the answer stopped early (${words} words)`);
  page.unload();
}

// agent-chat-ui's isAgentInboxInterruptSchema (src/lib/agent-inbox-interrupt.ts).
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

// 4. Answer an interrupt the Agent Inbox way (use-interrupted-actions.tsx).
async function answerInterrupt() {
  const page = openPage("palassist");
  await waitFor(() => idle(page), "a fresh page is idle");
  const { done } = sendMessage(page, "Summarize the policy");
  await done;
  await waitFor(() => idle(page) && page.s().interrupt !== undefined, "the prompt shows");
  const intr = page.s().interrupt;
  const v = Array.isArray(intr.value) ? intr.value[0] : intr.value;
  ok(isAgentInboxInterrupt(intr.value) && v.config.allow_respond, "stream.interrupt is an Agent Inbox HumanInterrupt that allows a response");
  // A reload shows the prompt too (from the thread head's tasks).
  const reloaded = openPage("palassist", page.threadId);
  await waitFor(() => idle(reloaded) && reloaded.s().interrupt !== undefined, "the reloaded page shows the prompt");
  ok(isAgentInboxInterrupt(reloaded.s().interrupt.value), "a reloaded page shows the same prompt");
  reloaded.unload();
  const pick = v.options?.find((o) => o.label === "Data Retention Policy 2024")?.label ?? "Data Retention Policy 2024";
  await page.s().submit({}, { command: { resume: [{ type: "response", args: pick }] } });
  await waitFor(() => idle(page) && page.s().interrupt === undefined && page.s().messages.at(-1)?.type === "ai", "the run finishes");
  const answer = page.s().messages.at(-1);
  ok(page.s().error === undefined && text(answer).includes("Data Retention Policy 2024"), "the response resumes the run; the answer is about the document named");
  const thread = await client.threads.get(page.threadId);
  ok(thread.status === "idle", "the thread is idle");
  page.unload();
}

// Every flow runs even when one fails (each failure is printed as `not ok`); the exit
// code is non-zero if any failed.
const started = Date.now();
const failed = [];
async function flow(name, step) {
  const t0 = Date.now();
  try {
    const out = await step();
    console.log(`# ${name}: ${((Date.now() - t0) / 1000).toFixed(2)}s`);
    return out;
  } catch (e) {
    failed.push(name);
    console.log(`not ok - flow ${name}: ${e.message}`);
    return undefined;
  }
}
const first = await flow("send and stream", sendAndStream);
if (first) {
  await flow("edit the first message", editFirst);
  await flow("regenerate", () => regenerate(first));
}
await flow("edit a later message", editLater);
await flow("reload with reconnectOnMount", reloadRejoins);
await flow("cancel", cancel);
await flow("answer an interrupt", answerInterrupt);
first?.unload();
cleanup();
if (failed.length > 0) {
  console.log(`# ${passed()} checks ok; FAILED flows: ${failed.join(", ")}`);
  process.exit(1);
}
console.log(`# ${passed()} checks passed in ${((Date.now() - started) / 1000).toFixed(1)}s against ${URL}`);
process.exit(0);
