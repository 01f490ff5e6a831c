// The page for any chat graph (see chat.test.mjs for how to run it): the server serves
// PalAssist and every example graph on /chat; the page offers each by its name, shows
// PalAssist's panels (documents, sets, action, web search) only for PalAssist, sends
// only the contract's envelope to the other graph, and lists each graph's conversations
// apart.
//
// Screenshots (artifacts/screenshots/):
//   07-other-graph.png                    a conversation with the `streaming` graph
//   failure-graphs-<step>.png             the page when a step failed

import { BASE, api, check, eq, finalAnswer, history, open, run, send, settled, shot, threadOf } from './lib.mjs';

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

const visible = (page, sel) => page.locator(sel).isVisible();

step('another chat graph: picked on the page, only its panels, its own conversations', async (ctx) => {
  const graphs = (await api('GET', '/chat/graphs')).json.graphs;
  eq(graphs[0].graph_id, 'palassist', 'PalAssist is the default chat graph, listed first');
  eq(graphs[0].panels, ['documents', 'document_sets'], "PalAssist's panels");
  const streaming = graphs.find((g) => g.graph_id === 'streaming');
  check(streaming, 'the streaming graph is a chat graph');
  eq(streaming.panels, [], 'the streaming graph needs no panel');

  const assistants = (await api('POST', '/assistants/search', { limit: 100 })).json;
  const served = [...new Set(assistants.map((a) => a.graph_id))].sort();
  eq(graphs.map((g) => g.graph_id).sort(), served, 'every served graph is a chat graph');

  const page = await open(ctx);
  check(await visible(page, '#graph-picker'), 'the picker shows with several chat graphs');
  const options = await page.locator('#graph-picker option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  eq(options.map(([id]) => id).sort(), served, 'the picker offers every served graph');
  for (const [id, name] of options) eq(name, id === 'palassist' ? 'PalAssist' : id, `${id} is offered by its name`);
  check(await visible(page, '.docs-panel'), 'PalAssist shows its documents');
  check(await visible(page, '#action'), "PalAssist's action field");

  await page.selectOption('#graph-picker', 'streaming');
  await page.locator('.welcome h2', { hasText: 'Chat with streaming' }).waitFor();
  check(!(await visible(page, '.docs-panel')), 'no documents panel for the streaming graph');
  check(!(await visible(page, '.sets-panel')), 'no sets panel for the streaming graph');
  check(!(await visible(page, '#action')), 'no action field for the streaming graph');
  check(!(await visible(page, '#web-search')), 'no web search for the streaming graph');

  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await send(page, 'ping pong');
  const body = JSON.parse((await req).postData());
  eq(body.graph_id, 'streaming', 'a new conversation names its graph');
  eq(
    Object.keys(body).sort(),
    ['client_turn_id', 'graph_id', 'message', 'multitask_strategy', 'on_disconnect', 'thread_id'],
    'only the envelope goes to a graph without PalAssist panels',
  );
  const answer = await finalAnswer(page);
  await settled(page);
  check((await answer.textContent()).includes('ping pong ping pong'), 'the graph answered (it echoes the question)');
  const thread = threadOf(page);
  eq((await history(thread)).messages.map((m) => m.role), ['user', 'assistant'], 'the conversation was stored');
  await page.locator(`#thread-list li[data-thread-id="${thread}"]`).waitFor();
  await shot(page, '07-other-graph.png');

  // A second message on the thread keeps its graph without naming it.
  const req2 = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await send(page, 'second');
  const body2 = JSON.parse((await req2).postData());
  check(!('graph_id' in body2), 'an existing conversation keeps its own graph');
  await settled(page);
  eq((await history(thread)).messages.length, 4, 'both turns stored');

  // A reload keeps the choice; PalAssist again shows its panels and not this conversation.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  eq(await page.locator('#graph-picker').inputValue(), 'streaming', 'the choice survives a reload');
  await page.locator('.msg.assistant').nth(1).waitFor();
  await page.selectOption('#graph-picker', 'palassist');
  await page.locator('.docs-panel').waitFor();
  check(await visible(page, '#action'), "PalAssist's action field is back");
  await page.waitForFunction((t) => !document.querySelector(`#thread-list li[data-thread-id="${t}"]`), thread);
  eq(page.__errors, [], 'no page errors');
  await page.close();
});

await run('graphs', steps);
