// The chat page in a real browser: Debian's chromium (/usr/bin/chromium) driven by
// playwright-core, against a running `palgraph serve` (offline LLM, paced so answers take a
// few seconds: PALASSIST_OFFLINE_PACE_MS=40).
//
//   cargo test -p palgraph-server --test browser      # starts the server, runs this file
//   node tests/browser/chat.test.mjs http://127.0.0.1:8123   # against a server you started
//
// Environment (see lib.mjs): PALGRAPH_URL (or the first argument), PALGRAPH_SCREENSHOTS,
// CHROMIUM, PALGRAPH_AUTH_URL (a second server started with PALGRAPH_API_KEYS=browser-key=<user>,
// for the auth step; the step is skipped without it), PALGRAPH_BROWSER_ONLY.
//
// Screenshots (artifacts/screenshots/, kept by CI as artifacts):
//   01-statuses-and-streaming-answer.png  PalReasoning (status line, document pills) while the answer streams
//   02-answer-with-sources.png            the finished answer, its sources, the conversation in the sidebar
//   03-mention-picker.png                 typing "@reten": the document picker
//   03a-explicit-action-web-search.png    explicit action + web search with none configured: no intent step, no web query claimed
//   04-doc-choice-prompt.png              PalAssist doc_choice prompt: document pills, "All of these" apart, the composer hint
//   05-text-input-prompt.png              PalAssist text_input prompt, the message box answers it
//   06-cancelled-prompt.png               a prompt cancelled: kept as a muted line, no cancel answer
//   07-stopped-response-interrupted.png   Stop mid-answer: the partial answer marked "Response interrupted"
//   08-reload-mid-run.png                 after a reload mid-run: history, then the snapshot, then live text
//   09-reload-at-prompt.png               after a reload at a pending prompt: the prompt again
//   10-follow-on-interrupts.png           a message sent while an answer streams (interrupt strategy)
//   11-reconnecting-after-drop.png        a dropped stream: partial answer kept, "Reconnecting in N s…" (backoff)
//   12-error-server-down.png              the server cannot be reached: a message, no spinner
//   13-error-thread-busy.png              409 thread_busy: a message, and the running answer joined
//   14-error-timeout.png                  no event for the idle timeout: a message, no spinner
//   failure-chat-<step>.png               the page when a step failed
// (tests/browser/daily.test.mjs takes the 15-… to 27-… screenshots)

import {
  AMBIGUOUS,
  BASE,
  COMPARE_ONE,
  DOC_Q,
  LONG,
  api,
  check,
  eq,
  finalAnswer,
  history,
  noSpinner,
  open,
  record,
  recorded,
  run,
  send,
  settled,
  shot,
  sleep,
  threadOf,
  type,
} from './lib.mjs';

// ------------------------------------------------------------------ the steps

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

step('statuses then the streamed answer', async (ctx) => {
  const page = await open(ctx);
  await record(page);
  await send(page, DOC_Q);
  // PalReasoning under the user's message while the answer streams.
  await page.locator('.turn .reasoning .pill', { hasText: 'Data Retention Policy 2024' }).waitFor();
  await page.locator('.turn .msg.assistant.streaming', { hasText: 'Data Retention Policy 2024' }).waitFor();
  check(await page.locator('.turn .reasoning .status-text').isVisible(), 'a status line is visible while streaming');
  await shot(page, '01-statuses-and-streaming-answer.png');
  const answer = await finalAnswer(page);
  await page.waitForFunction(() => !document.querySelector('.turn .reasoning:not([hidden])'));
  const text = await answer.locator('.content').innerText();
  check(text.includes('retained for 5 years') && text.includes('retained for 7 years'), `answer text: ${text}`);
  // Three passages of the 2024 policy in force, and what the 2023 version it replaced said
  // on each.
  check(await answer.locator('.citations summary').innerText() === 'Sources (6)', 'six sources listed');
  // The statuses came in order; each stayed on screen for at least 300 ms until the answer
  // started streaming; then the line showed the node writing the answer at once.
  const rec = await recorded(page);
  const lines = rec.statuses.filter((s) => s.text !== '<cleared>').map((s) => s.text);
  const want = ['Clarifying intent...', 'Finding documents...', 'Validating request...', 'Researching your question...', 'Formatting response...'];
  let k = 0;
  for (const l of lines) {
    const i = want.indexOf(l, k);
    check(i >= 0, `status lines in order, none twice: ${JSON.stringify(lines)}`);
    k = i + 1;
  }
  // The first line shows at once, unless the answer's first text came in the same chunk
  // of the stream (a loaded machine): then the line jumps to the answer's node before the
  // page is painted, by design, and the observer never sees the first.
  const firstLine = rec.statuses.find((s) => s.text !== '<cleared>');
  if (firstLine && rec.firstTextAt - firstLine.t > 5) eq(lines[0], want[0], 'the first status line');
  eq(rec.statusAtFirstText, 'Researching your question...', 'the status line when the answer text starts');
  for (let i = 0; i + 1 < rec.statuses.length; i++) {
    const end = rec.statuses[i + 1].t;
    const shown = end - rec.statuses[i].t;
    if (rec.statuses[i].text !== '<cleared>' && end < rec.firstTextAt - 5) check(shown >= 290, `"${rec.statuses[i].text}" was shown ${shown.toFixed(0)} ms`);
  }
  // Tokens appeared as they came: many intermediate texts, each a prefix of the next.
  check(rec.answers.length > 10, `the answer streamed (${rec.answers.length} renders)`);
  // The conversation is listed, titled by its first message.
  await page.locator('.thread-item[aria-current="true"]', { hasText: DOC_Q }).waitFor();
  await shot(page, '02-answer-with-sources.png');
  await page.close();
});

step('@ mention sends a TipTap mention node and tagged_doc_ids', async (ctx) => {
  const page = await open(ctx);
  const docs = (await api('GET', '/documents')).json;
  const d2024 = docs.find((d) => d.title === 'Data Retention Policy 2024');
  await type(page, 'Per @reten');
  const list = page.locator('#mention-list');
  await list.locator('[role=option]', { hasText: 'Data Retention Policy 2023' }).waitFor();
  await list.locator('[role=option]', { hasText: 'Data Retention Policy 2024' }).waitFor();
  await shot(page, '03-mention-picker.png');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.locator(`#editor .mention[data-id="${d2024.id}"]`).waitFor();
  check(await list.isHidden(), 'the picker closes after a pick');
  await page.keyboard.type('how long are customer records kept?');
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await page.keyboard.press('Enter');
  const body = JSON.parse((await req).postData());
  eq(body.tagged_doc_ids, [d2024.id], 'tagged_doc_ids');
  eq(body.message, 'Per @Data Retention Policy 2024 how long are customer records kept?', 'message');
  eq(
    body.tiptap_json,
    {
      type: 'doc',
      content: [
        {
          type: 'paragraph',
          content: [
            { type: 'text', text: 'Per ' },
            { type: 'mention', attrs: { id: d2024.id, label: 'Data Retention Policy 2024' } },
            { type: 'text', text: ' how long are customer records kept?' },
          ],
        },
      ],
    },
    'tiptap_json',
  );
  eq(body.multitask_strategy, null, 'default multitask strategy (reject)');
  // Only the mentioned document was used.
  await page.locator('.turn .reasoning .pill', { hasText: 'Data Retention Policy 2024' }).waitFor();
  const answer = await finalAnswer(page);
  const text = await answer.innerText();
  check(text.includes('7 years') && !text.includes('Policy 2023'), `answer from the 2024 policy only: ${text}`);
  await page.locator('.msg.user .mention', { hasText: '@Data Retention Policy 2024' }).waitFor();
  await page.close();
});

step('explicit action and web search: sent; no intent step, and no web query the server cannot run', async (ctx) => {
  const page = await open(ctx);
  await record(page);
  await page.locator('#action').selectOption('inquire');
  await page.locator('#web-search').check();
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await send(page, 'What are the capital requirements in the CRR?');
  const body = JSON.parse((await req).postData());
  eq([body.action, body.enable_web_search], ['inquire', true], 'action and web search');
  await page.locator('.turn .reasoning .pill', { hasText: 'Capital Requirements Regulation (CRR)' }).waitFor();
  await shot(page, '03a-explicit-action-web-search.png');
  const answer = await finalAnswer(page);
  check((await answer.innerText()).includes('Action: inquire'), 'the answer says its action');
  check((await answer.innerText()).includes('Web search is not available'), 'the answer says it relies on the documents');
  // This server has no web search: no "Searching the web" line; an explicit action skips
  // intent classification, so the first line is the document search.
  eq(await page.locator('.turn .reasoning .web-query:not([hidden])').count(), 0, 'no web query shown');
  const lines = (await recorded(page)).statuses.filter((s) => s.text !== '<cleared>').map((s) => s.text);
  check(!lines.includes('Clarifying intent...'), `no intent step: ${JSON.stringify(lines)}`);
  eq(lines[0], 'Finding documents...', 'the first status line');
  await settled(page);
  await page.close();
});

step('upload: the title is the first "# heading" (dropped from the text), else the file name; then mention it', async (ctx) => {
  const page = await open(ctx);
  const title = `Travel Policy ${Date.now()}`;
  const plain = `meeting-notes-${Date.now()}`;
  await page.locator('#upload-input').setInputFiles([
    {
      name: 'travel.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from(`# ${title}\n\nEmployees must book economy class for flights under six hours.\n`),
    },
    { name: `${plain}.txt`, mimeType: 'text/plain', buffer: Buffer.from('Notes without a heading.\n') },
  ]);
  await page.locator('#upload-status', { hasText: 'Uploaded 2 documents.' }).waitFor();
  await page.locator('.doc-item', { hasText: title }).waitFor();
  await page.locator('.doc-item', { hasText: plain }).waitFor();
  // A click on a document in the list mentions it in the message box.
  await page.locator('.doc-item', { hasText: title }).click();
  const id = await page.locator('#editor .mention').getAttribute('data-id');
  const doc = (await api('GET', `/documents/${id}`)).json;
  eq(doc.title, title, 'the title, from the heading');
  eq(doc.content.trim(), 'Employees must book economy class for flights under six hours.', 'the text, without its heading');
  const other = (await api('GET', '/documents')).json.find((d) => d.title === plain);
  check(other, `the file without a heading is titled by its name (${plain})`);
  await page.close();
});

step('doc_choice: click an option', async (ctx) => {
  const page = await open(ctx);
  await send(page, AMBIGUOUS);
  const prompt = page.locator('#prompt');
  await prompt.waitFor();
  check((await page.locator('#prompt-message').innerText()).includes('could be several of your documents'), 'doc_choice message');
  const labels = await page.locator('#prompt-options button').allInnerTexts();
  // Every policy of the library in force (the 2023 retention policy is superseded), then
  // "All of these".
  check(labels.includes('Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy') && labels.includes('Data Retention Policy 2024'), `options: ${labels}`);
  check(!labels.includes('Data Retention Policy 2023'), `no superseded version: ${labels}`);
  eq(labels[labels.length - 1], 'All of these', 'the last option');
  // Documents as pills; "All of these" set apart; the composer says a choice is awaited.
  eq(await page.locator('#prompt-options .option-pill.doc').allInnerTexts(), labels.slice(0, -1), 'document pills');
  eq(await page.locator('#prompt-options .option-all').allInnerTexts(), ['All of these'], '"All of these", styled apart');
  await page.locator('#composer-hint', { hasText: 'waiting for your choice' }).waitFor();
  await noSpinner(page);
  await shot(page, '04-doc-choice-prompt.png');
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat/resume`);
  await page.locator('#prompt-options button', { hasText: 'Data Retention Policy 2024' }).click();
  const body = JSON.parse((await req).postData());
  const d2024 = (await api('GET', '/documents')).json.find((d) => d.title === 'Data Retention Policy 2024');
  eq(body.resume_value, { type: 'doc_choice', value: d2024.id }, 'resume value');
  await prompt.waitFor({ state: 'hidden' });
  check(await page.locator('#composer-hint').isHidden(), 'no hint once the prompt is answered');
  await page.locator('.prompt-record', { hasText: 'answered: Data Retention Policy 2024' }).waitFor();
  const answer = await finalAnswer(page);
  check((await answer.innerText()).includes('Data Retention Policy 2024'), 'the answer summarizes the chosen document');
  await settled(page);
  await page.close();
});

step('text_input: the message box answers the prompt (a resume, not a new turn)', async (ctx) => {
  const page = await open(ctx);
  await send(page, COMPARE_ONE);
  await page.locator('#prompt[data-type="text_input"]').waitFor();
  check((await page.locator('#prompt-message').innerText()).includes('Compare needs at least 2 documents'), 'text_input message');
  eq(await page.locator('#prompt-options button').count(), 0, 'no option buttons for text_input');
  eq(await page.locator('#send').innerText(), 'Answer', 'the send button answers');
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && /\/chat(\/resume)?$/.test(r.url())) posts.push({ url: r.url(), body: r.postData() });
  });
  await type(page, 'AML policy');
  await shot(page, '05-text-input-prompt.png');
  await page.keyboard.press('Enter');
  await page.locator('.prompt-record', { hasText: 'answered: AML policy' }).waitFor();
  // The comparison streams for half a minute at this pace: seeing it start is enough.
  await page.locator('.turn .msg.assistant.streaming', { hasText: 'compared with Anti-Money Laundering' }).waitFor();
  eq(posts.map((p) => p.url), [`${BASE}/chat/resume`], 'requests made by the answer');
  eq(JSON.parse(posts[0].body).resume_value, { type: 'text_input', value: 'AML policy' }, 'resume value');
  eq(await page.locator('.msg.user').count(), 1, 'no new user turn');
  await page.locator('#stop').click();
  await settled(page);
  await page.close();
});

step('cancel at a prompt: muted line, no cancel answer', async (ctx) => {
  const page = await open(ctx);
  await send(page, AMBIGUOUS);
  await page.locator('#prompt').waitFor();
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat/resume`);
  const done = page.waitForResponse((r) => r.url() === `${BASE}/chat/resume`).then((r) => r.finished());
  await page.locator('#prompt-cancel').click();
  eq(JSON.parse((await req).postData()).resume_value, { type: 'cancel', value: null }, 'cancel resume');
  await page.locator('#prompt').waitFor({ state: 'hidden' });
  await page.locator('.prompt-record', { hasText: 'Cancelled' }).waitFor();
  await done; // the resume's stream has ended: its answer was received (and not shown)
  await settled(page);
  eq(await page.locator('.msg.assistant').count(), 0, 'assistant messages after a cancel');
  await noSpinner(page);
  await shot(page, '06-cancelled-prompt.png');
  const thread = threadOf(page);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('.prompt-record', { hasText: 'could be several of your documents' }).waitFor();
  check(await page.locator('.prompt-record').innerText().then((t) => t.includes('Cancelled')), 'the muted line after a reload');
  check(await page.locator('#prompt').isHidden(), 'no prompt after the cancel');
  eq(await page.locator('.msg.assistant').count(), 0, 'assistant messages after a reload');
  eq((await history(thread)).pending_interrupt, null, 'nothing pending on the server');
  await page.close();
});

step('stop mid-run keeps the partial answer, marked "Response interrupted"', async (ctx) => {
  let page = await open(ctx);
  await send(page, LONG);
  const streaming = page.locator('.turn .msg.assistant.streaming .content');
  await page.waitForFunction(() => {
    const c = document.querySelector('.turn .msg.assistant.streaming .content');
    return c && c.textContent.length > 60;
  });
  check(await streaming.isVisible(), 'streaming');
  const cancel = page.waitForRequest((r) => /\/threads\/[^/]+\/cancel$/.test(r.url()));
  await page.locator('#stop').click();
  await cancel;
  const answer = page.locator('.msg.assistant', { has: page.locator('.interrupted-mark') });
  await answer.locator('.interrupted-mark', { hasText: 'Response interrupted' }).waitFor();
  await settled(page);
  const partial = await answer.locator('.content').innerText();
  await sleep(600);
  eq(await answer.locator('.content').innerText(), partial, 'no text after the stop');
  eq(await answer.locator('.citations').count(), 0, 'no sources on a stopped answer');
  await noSpinner(page);
  await shot(page, '07-stopped-response-interrupted.png');
  const thread = threadOf(page);
  const hist = await history(thread);
  const last = hist.messages[hist.messages.length - 1];
  eq(last.metadata.interrupted, true, 'the server kept the partial answer as interrupted');
  check(last.content.length < 600, `the partial answer is partial (${last.content.length} chars)`);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('.msg.assistant .interrupted-mark', { hasText: 'Response interrupted' }).waitFor();
  await page.close();

  // Stopped before any answer text (here by another client, at once): the history has only
  // the user's message; the page still shows the turn as interrupted.
  const quick = crypto.randomUUID();
  const run = await fetch(`${BASE}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: LONG, thread_id: quick }),
  });
  eq((await api('POST', `/threads/${quick}/cancel`)).status, 200, 'cancel');
  await run.text();
  const early = await history(quick);
  page = await open(ctx, `#/c/${quick}`);
  await page.locator('.msg.user', { hasText: LONG }).waitFor();
  await page.locator('.msg.assistant .interrupted-mark', { hasText: 'Response interrupted' }).waitFor();
  eq(await page.locator('.msg.assistant').count(), 1, `one answer (history had ${early.messages.length} messages)`);
  await page.close();
});

step('reload mid-run: history, then the snapshot, then live events', async (ctx) => {
  const page = await open(ctx);
  await send(page, LONG);
  await page.waitForFunction(() => {
    const c = document.querySelector('.turn .msg.assistant.streaming .content');
    return c && c.textContent.length > 40;
  });
  const thread = threadOf(page);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await record(page);
  await page.locator('.msg.user', { hasText: LONG }).waitFor();
  // The snapshot: the partial text so far and the current status line, then live tokens.
  await page.locator('.turn .msg.assistant.streaming').waitFor();
  await page.locator('.turn .reasoning .status-text', { hasText: 'Summarizing documents...' }).waitFor();
  await shot(page, '08-reload-mid-run.png');
  check(await page.locator('#stop').isVisible(), 'Stop is offered for the joined run');
  const answer = await finalAnswer(page);
  await settled(page);
  const text = await answer.locator('.content').innerText();
  const rec = await recorded(page);
  check(rec.answers.length > 3, `live tokens after the snapshot (${rec.answers.length} renders)`);
  const final = rec.answers[rec.answers.length - 1];
  for (const a of rec.answers) check(final.startsWith(a), `every text shown is a prefix of the final one (no duplicates): ${a.slice(-40)}`);
  const hist = await history(thread);
  const last = hist.messages[hist.messages.length - 1];
  const plain = (t) => t.replace(/\*\*/g, '').replace(/\s+/g, ' ').trim();
  eq(plain(text), plain(last.content.replace(/^\s*- /gm, '')), 'the answer shown is the one the server kept');
  eq(await page.locator('.msg.assistant').count(), 1, 'one answer');
  await page.close();
});

step('reload at a prompt shows the prompt again', async (ctx) => {
  const page = await open(ctx);
  await send(page, AMBIGUOUS);
  await page.locator('#prompt').waitFor();
  const message = await page.locator('#prompt-message').innerText();
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('#prompt').waitFor();
  eq(await page.locator('#prompt-message').innerText(), message, 'the same prompt');
  const again = await page.locator('#prompt-options button').allInnerTexts();
  check(again.includes('Data Retention Policy 2024') && again[again.length - 1] === 'All of these', `options: ${again}`);
  await page.locator('.msg.user', { hasText: AMBIGUOUS }).waitFor();
  await noSpinner(page);
  await shot(page, '09-reload-at-prompt.png');
  await page.locator('#prompt-options button', { hasText: 'All of these' }).click();
  await page.locator('.prompt-record', { hasText: 'answered: All of these' }).waitFor();
  const text = await (await finalAnswer(page)).innerText();
  check(text.includes('Anti-Money Laundering (AML) and Know Your Customer (KYC) Policy') && text.includes('Data Retention Policy 2024'), 'both documents summarized');
  await settled(page);
  await page.close();
});

step('a message sent while an answer streams interrupts it (interrupt strategy)', async (ctx) => {
  const page = await open(ctx);
  await send(page, LONG);
  await page.waitForFunction(() => {
    const c = document.querySelector('.turn .msg.assistant.streaming .content');
    return c && c.textContent.length > 30;
  });
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await send(page, DOC_Q);
  eq(JSON.parse((await req).postData()).multitask_strategy, 'interrupt', 'strategy of the follow-on');
  await page.locator('.msg.assistant .interrupted-mark', { hasText: 'Response interrupted' }).waitFor();
  await page.locator('.msg.assistant:not(.streaming) .citations').waitFor();
  await settled(page);
  await shot(page, '10-follow-on-interrupts.png');
  const hist = await history(threadOf(page));
  const roles = hist.messages.map((m) => (m.metadata.interrupted ? 'interrupted' : m.role));
  eq(roles, ['user', 'interrupted', 'user', 'assistant'], 'the server history');
  await page.close();
});

step('a dropped stream reconnects with backoff and Last-Event-ID, without duplicates', async (ctx) => {
  const page = await open(ctx);
  await record(page);
  let cutAt = null;
  let dropAt = 0;
  await page.route(`${BASE}/chat`, async (route) => {
    // Let the run go on, but deliver only its first events and end the stream early.
    const resp = await route.fetch();
    const blocks = (await resp.text()).split('\n\n').filter((b) => b.trim());
    const tokens = blocks.filter((b) => b.includes('"type":"token"'));
    const cut = blocks.indexOf(tokens[12]) + 1;
    cutAt = /id: (\S+)/.exec(blocks[cut - 1])[1];
    dropAt = Date.now();
    const keep = ['content-type', 'x-thread-id', 'x-run-id', 'cache-control'];
    const headers = Object.fromEntries(Object.entries(resp.headers()).filter(([k]) => keep.includes(k)));
    await route.fulfill({ status: resp.status(), headers, body: blocks.slice(0, cut).join('\n\n') + '\n\n' });
  });
  const streams = [];
  await page.route(`${BASE}/chat/stream/**`, async (route) => {
    streams.push({ at: Date.now(), lastEventId: route.request().headers()['last-event-id'] });
    if (streams.length === 1) await route.abort('connectionreset');
    else await route.continue();
  });
  await send(page, DOC_Q);
  await page.locator('.connection', { hasText: 'Reconnecting' }).waitFor();
  await shot(page, '11-reconnecting-after-drop.png');
  const answer = await finalAnswer(page);
  await settled(page);
  eq(streams.length, 2, 'reconnect attempts');
  eq(streams.map((s) => s.lastEventId), [cutAt, cutAt], 'Last-Event-ID of the reconnects');
  const first = streams[0].at - dropAt;
  const second = streams[1].at - streams[0].at;
  check(first >= 900 && first < 3000, `first retry after ~1 s (${first} ms)`);
  check(second >= 1900 && second < 4500, `second retry after ~2 s (${second} ms)`);
  const rec = await recorded(page);
  const final = rec.answers[rec.answers.length - 1];
  for (const a of rec.answers) check(final.startsWith(a), `no text shown twice: ${a.slice(-40)}`);
  const text = await answer.locator('.content').innerText();
  eq(text.match(/Data Retention Policy 2024 \(v4.0, in force\) says/g)?.length, 1, 'the answer opening, once');
  check(text.includes('retained for 7 years'), 'the whole answer arrived');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.close();
});

step('errors: server down, 409 thread_busy, no event within the timeout', async (ctx) => {
  // Server down: the request cannot connect.
  let page = await open(ctx);
  await page.route(`${BASE}/chat`, (route) => route.abort('connectionrefused'));
  await send(page, DOC_Q);
  await page.locator('#error', { hasText: 'Cannot reach the palgraph server' }).waitFor();
  await noSpinner(page);
  check(await page.locator('#stop').isHidden(), 'no Stop button');
  eq(await page.locator('#editor').innerText(), DOC_Q, 'the draft is given back');
  eq(await page.locator('.msg.user').count(), 0, 'the unsent message is not shown as sent');
  eq(await page.locator('#chat-title').innerText(), 'New conversation', 'the title of the unsent conversation');
  await shot(page, '12-error-server-down.png');
  await page.close();

  // 409: a run started elsewhere on this conversation.
  const thread = crypto.randomUUID();
  page = await open(ctx, `#/c/${thread}`);
  const other = await fetch(`${BASE}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: LONG, thread_id: thread }),
  });
  eq(other.status, 200, 'the other run started');
  const drain = other.text();
  await send(page, DOC_Q);
  await page.locator('#error', { hasText: '409 thread_busy' }).waitFor();
  // The page shows the conversation as it is and joins the run that is going on.
  await page.locator('.msg.user', { hasText: LONG }).waitFor();
  await page.locator('.turn .msg.assistant.streaming').waitFor();
  eq(await page.locator('#chat-title').innerText(), LONG, 'the title');
  await shot(page, '13-error-thread-busy.png');
  await finalAnswer(page);
  await settled(page);
  await drain;
  eq(await page.locator('#editor').innerText(), DOC_Q, 'the draft is given back');
  await page.close();

  // No event at all within the idle timeout (2 s here, 30 s by default).
  page = await open(ctx);
  await page.evaluate(() => localStorage.setItem('palgraph_idle_timeout_ms', '2000'));
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  const held = [];
  await page.route(`${BASE}/chat`, (route) => {
    held.push(route); // never answered
  });
  const t0 = Date.now();
  await send(page, DOC_Q);
  await page.locator('#error', { hasText: 'No response from the server for 2 s' }).waitFor();
  const waited = Date.now() - t0;
  check(waited >= 1800 && waited < 6000, `timed out after ~2 s (${waited} ms)`);
  await noSpinner(page);
  check(await page.locator('#stop').isHidden(), 'no Stop button after the timeout');
  await shot(page, '14-error-timeout.png');
  await page.evaluate(() => localStorage.removeItem('palgraph_idle_timeout_ms'));
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.close();
});

step('with auth: a 401 asks for a token, which is then sent as a bearer token', async (ctx) => {
  const authBase = process.env.PALGRAPH_AUTH_URL; // a server with PALGRAPH_API_KEYS=browser-key=...
  if (!authBase) {
    console.log('     (skipped: PALGRAPH_AUTH_URL is not set)');
    return;
  }
  const page = await ctx.newPage();
  page.__errors = [];
  await page.goto(`${authBase}/`);
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('#error', { hasText: 'needs an access token' }).waitFor();
  await page.locator('#token-input').fill('browser-key');
  const docs = page.waitForRequest((r) => r.url() === `${authBase}/documents`);
  await page.locator('#token-form button[type=submit]').click();
  eq((await docs).headers().authorization, 'Bearer browser-key', 'the Authorization header');
  await page.waitForSelector('body[data-ready="true"]');
  check(await page.locator('#error').isHidden(), 'no error once signed in');
  await page.evaluate(() => localStorage.removeItem('palgraph_token'));
  await page.close();
});

step('keyboard: every control is a reachable button', async (ctx) => {
  const page = await open(ctx);
  await send(page, AMBIGUOUS);
  await page.locator('#prompt').waitFor();
  // Tab from the message box backwards reaches the prompt's options.
  await page.locator('#editor').focus();
  let found = false;
  for (let i = 0; i < 8 && !found; i++) {
    await page.keyboard.press('Shift+Tab');
    found = await page.evaluate(() => document.activeElement && document.activeElement.closest('#prompt-options') !== null);
  }
  check(found, 'a prompt option is reachable with the keyboard');
  const label = await page.evaluate(() => document.activeElement.textContent);
  await page.keyboard.press('Enter');
  await page.locator('.prompt-record', { hasText: `answered: ${label}` }).waitFor();
  await finalAnswer(page);
  await settled(page);
  const untabbable = await page.evaluate(
    () => [...document.querySelectorAll('button')].filter((b) => b.tabIndex < 0 && !b.hidden).length,
  );
  eq(untabbable, 0, 'buttons out of the tab order');
  await page.close();
});

await run('chat', steps);
