// The run inspector (`/inspect?thread=<id>`, see chat.test.mjs for how to run it): on the
// `approval` graph (an interrupt, a rejected draft, a revision, a publish) and on PalAssist
// (opened from the chat page's "Inspect runs" link): the graph drawn as SVG with the path
// the run took, timeline rows that match the thread's history, a step's diff, a fork from
// an old checkpoint that shows as a new branch, a state edit that changes the head, an
// invalid JSON edit refused inline with nothing changed, the latest threads listed by their
// first message and time, and the token asked for when the server needs one.
//
// Screenshots (artifacts/screenshots/):
//   10-inspector-approval.png             the approval thread, a step with its diff selected
//   11-inspector-fork.png                 after "Run again from here": the new branch
//   12-inspector-palassist.png            a PalAssist turn: its path and LLM calls
//   failure-inspector-<step>.png          the page when a step failed

import { AUTH_BASE, DOC_Q, api, check, eq, open, run, send, settled, shot, threadOf } from './lib.mjs';

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

async function historyOf(thread, opts) {
  const r = await api('POST', `/threads/${thread}/history`, { limit: 1000 }, opts);
  eq(r.status, 200, 'history status');
  return r.json;
}

/** The ids of the timeline's rows, top to bottom. */
const rowIds = (page) => page.$$eval('#timeline .step-row', (rows) => rows.map((r) => r.dataset.checkpoint));

async function ready(page) {
  await page.waitForSelector('body[data-ready="true"]');
}

/** An approval thread: drafted, rejected with a note, revised, approved and published. */
async function approvalThread(opts) {
  const t = (await api('POST', '/threads', { metadata: { graph_id: 'approval' } }, opts)).json.thread_id;
  const wait = (body) => api('POST', `/threads/${t}/runs/wait`, { assistant_id: 'approval', ...body }, opts);
  eq((await wait({ input: { messages: [{ type: 'human', content: 'otters' }] } })).status, 200, 'first run');
  eq((await wait({ command: { resume: { approve: false, note: 'shorter' } } })).status, 200, 'rejected');
  eq((await wait({ command: { resume: { approve: true } } })).status, 200, 'approved');
  return t;
}

step('approval: the path, the timeline, a diff, an edit, a refused edit and a fork', async (ctx) => {
  const t = await approvalThread();
  const before = await historyOf(t);
  const page = await open(ctx, `inspect?thread=${t}`);

  // The graph: drawn as SVG, every node of the path ran, its edges taken.
  await page.waitForSelector('#graph svg g.node[data-node="publish"]');
  for (const n of ['__start__', 'draft', 'review', 'publish', '__end__']) {
    check(await page.locator(`#graph g.node.ran[data-node="${n}"]`).count() === 1, `${n} is on the run's path`);
  }
  const taken = await page.$$eval('#graph path.taken', (ps) => ps.map((p) => `${p.dataset.from}>${p.dataset.to}`).sort());
  for (const e of ['__start__>draft', 'draft>review', 'review>publish', 'publish>__end__']) {
    check(taken.includes(e), `edge ${e} is highlighted (${taken})`);
  }

  // The timeline: one row per checkpoint, oldest first; the steps name what ran.
  eq(await rowIds(page), before.map((c) => c.checkpoint_id).reverse(), 'a row per checkpoint, oldest first');
  for (const c of before) {
    const nodes = (c.metadata.tasks || []).map((x) => x.node);
    const shown = await page.$$eval(`#timeline .step-row[data-checkpoint="${c.checkpoint_id}"] .task-chip`, (cs) => cs.map((x) => x.dataset.node));
    eq(shown, nodes, `the nodes of checkpoint ${c.checkpoint_id}`);
  }
  // Both reviews interrupted and were resumed (an answered interrupt is no longer pending:
  // the step that ran on shows it).
  const resumed = before.filter((c) => (c.metadata.tasks || []).some((x) => x.resumed)).map((c) => c.checkpoint_id);
  eq(resumed.length, 2, 'two resumed reviews');
  for (const id of resumed) {
    check(await page.locator(`.step-row[data-checkpoint="${id}"] .task-chip[data-node="review"] .badge.resumed`).count() === 1, `row ${id} shows the interrupt`);
  }
  const ms = await page.locator('.step-row .task-ms').first().textContent();
  check(/\d+(\.\d+)? (ms|s)$/.test(ms.trim()), `a duration is shown: ${ms}`);

  // A step's diff: the revised draft replaced the first one.
  const revised = before.find((c) => c.metadata.tasks && c.metadata.tasks[0].node === 'draft' && c.values.revisions === 2);
  check(revised, 'the revision step');
  await page.locator(`.step-row[data-checkpoint="${revised.checkpoint_id}"] .step-button`).click();
  await page.waitForSelector(`body[data-selected="${revised.checkpoint_id}"]`);
  const draftDiff = page.locator('.diff-row[data-field="draft"]');
  eq(await draftDiff.getAttribute('data-kind'), 'changed', 'the draft changed');
  check((await draftDiff.locator('.diff-after').textContent()).includes('Revised for: shorter'), 'the new draft is shown');
  check(await page.locator('#graph g.node.current[data-node="draft"]').count() === 1, 'the selected step\'s node is marked');
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, '10-inspector-approval.png');

  // Invalid JSON: said inline, nothing written.
  const head = before[0].checkpoint_id;
  await page.locator(`.step-row[data-checkpoint="${head}"] .step-button`).click();
  await page.waitForSelector(`body[data-selected="${head}"]`);
  await page.locator('.edit-button').click();
  await page.locator('.state-editor').fill('{"note": oops');
  await page.locator('.edit-form button[type="submit"]').click();
  await page.locator('.action-error').waitFor();
  check((await page.locator('.action-error').textContent()).includes('not valid JSON'), 'the error says what is wrong');
  eq((await historyOf(t)).length, before.length, 'a refused edit writes nothing');
  // A field the state does not have: the server's refusal, inline, nothing written.
  await page.locator('.state-editor').fill('{"nope": 1}');
  await page.locator('.edit-form button[type="submit"]').click();
  await page.waitForFunction(() => document.querySelector('.action-error').textContent.includes('refused'));
  eq((await historyOf(t)).length, before.length, 'a refused update writes nothing');

  // A valid edit: a new head with the new value.
  await page.locator('.state-editor').fill('{"note": "edited in the inspector"}');
  await page.locator('.edit-form button[type="submit"]').click();
  await page.waitForFunction((n) => document.querySelectorAll('#timeline .step-row').length === n, before.length + 1);
  await ready(page);
  const state = (await api('GET', `/threads/${t}/state`)).json;
  eq(state.values.note, 'edited in the inspector', 'the head has the edited value');
  eq(await page.locator('.step-row.selected').getAttribute('data-source'), 'update', 'the new checkpoint is selected');

  // Run again from the first step: a new branch, shown after the refresh.
  const first = before[before.length - 1].checkpoint_id;
  await page.locator(`.step-row[data-checkpoint="${first}"] .step-button`).click();
  await page.waitForSelector(`body[data-selected="${first}"]`);
  await page.locator('.fork-button').click();
  await page.waitForFunction(() => document.querySelector('.action-status') && /The run ended/.test(document.querySelector('.action-status').textContent)
    || document.querySelector('#timeline .step-row[data-source="fork"]'));
  await ready(page);
  const after = await historyOf(t);
  check(after.length > before.length + 1, 'the fork wrote checkpoints');
  check(after.some((c) => c.metadata.source === 'fork'), 'a fork checkpoint');
  await page.locator('#refresh').click();
  await ready(page);
  eq(await rowIds(page), after.map((c) => c.checkpoint_id).reverse(), 'the timeline shows every checkpoint after a refresh');
  const pending = after[0];
  check(pending.interrupts.length === 1, 'the forked run waits at its review');
  check(await page.locator(`.step-row[data-checkpoint="${pending.checkpoint_id}"] .badge.interrupt`).count() === 1, 'its pending interrupt is shown');
  check(await page.locator('#timeline .step-row[data-source="fork"] .badge.branch').count() === 1, 'the fork is marked as a branch');
  check(await page.locator('#timeline .step-row.off-branch').count() >= before.length, 'the old branch is dimmed');
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, '11-inspector-fork.png');
  eq(page.__errors, [], 'no page errors');
  await page.close();
});

step('PalAssist: from the chat page, its path and LLM calls', async (ctx) => {
  const chat = await open(ctx);
  await send(chat, DOC_Q);
  await settled(chat);
  const t = threadOf(chat);
  const link = chat.locator('#inspect-link');
  check(await link.isVisible(), 'the chat page links to the inspector');
  await link.click();
  await chat.waitForURL(/\/inspect\?thread=/);
  await ready(chat);
  const page = chat;
  await page.waitForSelector('#graph svg g.node[data-node="intent_resolver"]');
  const hist = await historyOf(t);
  eq(await rowIds(page), hist.map((c) => c.checkpoint_id).reverse(), 'a row per checkpoint');
  const ran = new Set(hist.flatMap((c) => (c.metadata.tasks || []).map((x) => x.node)));
  check(ran.has('intent_resolver') && ran.has('inquire'), `the turn's nodes: ${[...ran]}`);
  for (const n of ran) check(await page.locator(`#graph g.node.ran[data-node="${n}"]`).count() === 1, `${n} is on the path`);
  const calls = hist.flatMap((c) => (c.metadata.tasks || []).flatMap((x) => x.llm_calls || []));
  check(calls.length >= 2 && calls.every((c) => c.model === 'offline'), 'the offline LLM calls are recorded');
  check(await page.locator('.badge.llm').count() >= 1, 'LLM calls are shown in the timeline');
  const answered = hist.find((c) => (c.metadata.tasks || []).some((x) => x.node === 'inquire'));
  await page.locator(`.step-row[data-checkpoint="${answered.checkpoint_id}"] .step-button`).click();
  await page.waitForSelector(`body[data-selected="${answered.checkpoint_id}"]`);
  check(await page.locator('.llm-table').count() >= 1, 'the step lists its LLM calls');
  check(await page.locator('.diff-row[data-field="response"]').count() === 1, 'the answer is in the diff');
  await shot(page, '12-inspector-palassist.png');
  eq(page.__errors, [], 'no page errors');
  await page.close();
});

step('without a thread: the latest threads by their first message and time', async (ctx) => {
  const t = await approvalThread();
  const page = await open(ctx, 'inspect');
  const link = page.locator(`#picker-list a[href="/inspect?thread=${t}"]`);
  await link.waitFor();
  eq((await link.textContent()).trim(), 'otters', "a thread is named by its first message");
  const row = link.locator('xpath=..');
  const text = await row.textContent();
  check(text.includes('approval'), `its graph is shown: ${text}`);
  check(/\d{1,2}:\d{2}/.test(text), `its time is shown: ${text}`);
  await link.click();
  await page.waitForURL(/\/inspect\?thread=/);
  await ready(page);
  eq(page.__errors, [], 'no page errors');
  await page.close();
});

step('with authentication: the token is asked for, then the thread shows', async (ctx) => {
  if (!AUTH_BASE) return;
  const token = 'browser-key';
  const t = await approvalThread({ base: AUTH_BASE, token });
  const anon = await open(ctx, `inspect?thread=${t}`, { base: AUTH_BASE });
  await anon.locator('#token-form').waitFor();
  check((await anon.locator('#inspect-error-text').textContent()).includes('access token'), 'the token is asked for');
  await anon.close();
  const page = await open(ctx, `inspect?thread=${t}`, { base: AUTH_BASE, token });
  await page.waitForSelector('#graph svg g.node[data-node="review"]');
  eq((await rowIds(page)).length, (await historyOf(t, { base: AUTH_BASE, token })).length, 'every checkpoint with the token');
  await page.close();
});

await run('inspector', steps);
