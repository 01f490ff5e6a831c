// The chat page as a team uses it every day, in a real browser against the
// real server: layout with many conversations and documents, Markdown, notices, readable
// errors with Retry, answer details and Copy, conversations renamed / searched / deleted,
// documents viewed / deleted, citations opening the cited passage, another tab taking over,
// the welcome examples, dark mode, keyboard and screen-reader use.
//
//   cargo test -p palgraph-server --test browser      # starts the servers, runs chat.test.mjs then this file
//   node tests/browser/daily.test.mjs http://127.0.0.1:8123   # against a server you started
//
// Environment: as chat.test.mjs (see lib.mjs). PALGRAPH_AUTH_URL is a second server (API key
// `browser-key`): the layout step fills its user's sidebar there, away from the other steps.
//
// A few steps feed the page a stream written here (page.route): chat-contract shapes the
// offline server does not produce on demand (a model's `answered_by`, `reset` tokens, a
// `web_query` from a server with web search), Markdown the offline model never writes
// (tables, code), and errors. Every other step is the real server end to end.
//
// Screenshots (artifacts/screenshots/):
//   15-sidebar-many-conversations.png    35 conversations, 30 documents: the lists and the conversation scroll on their own
//   16-markdown-and-answer-details.png   Markdown (emphasis, numbered + nested lists, table, code), one notice, confidence dot, tokens · cost, model badge, Copy
//   17-notice-once.png                   a real notice from the server, shown once (not as "_Note: …_" in the text)
//   18-error-readable-retry.png          a request refused with a parser message: readable, with Retry
//   19-run-error-retry.png               a run that failed: a readable line in the conversation, with Retry
//   20-doc-choice-id-label.png           a prompt with `{id, label}` options: document pills, "All of these" apart
//   21-conversations-rename-search.png   a conversation renamed inline (after the list was searched)
//   22-delete-conversation-confirm.png   the confirmation before a conversation is deleted
//   23-citation-document-viewer.png      a citation opened: the document with the cited passage highlighted
//   24-superseded-by-another-tab.png     another tab sent a message: the notice, the stopped answer, the new turn
//   25-welcome-examples.png              the welcome examples (the third compares two named documents)
//   26-dark-mode.png                     dark mode (prefers-color-scheme: dark)
//   27-keyboard-focus.png                keyboard focus visible on a conversation's actions
//   failure-daily-<step>.png             the page when a step failed

import http from 'node:http';

import {
  AUTH_BASE,
  BASE,
  DOC_Q,
  LONG,
  api,
  check,
  eq,
  finalAnswer,
  history,
  open,
  record,
  recorded,
  run,
  send,
  settled,
  shot,
  threadOf,
} from './lib.mjs';

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

const COMPARE_EXAMPLE = 'Compare the Data Retention Policy 2023 with the Data Retention Policy 2024';
const SERDE = 'invalid request body: missing field `id` at line 1 column 92';

// ------------------------------------------------------------------ helpers of this file

// Streams written here are served by a small HTTP server of this file, one event every
// `gap` ms, so the page reads them as it reads the server's: chunk by chunk.
const scripts = new Map();
const stub = http.createServer(async (req, res) => {
  const script = scripts.get(req.url);
  if (!script) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-run-id': '00000000-0000-7000-8000-000000000000' });
  for (const [i, e] of script.events.entries()) {
    res.write(`id: 00000000-0000-7000-8000-000000000000:${i + 1}\ndata: ${JSON.stringify(e)}\n\n`);
    await new Promise((r) => setTimeout(r, script.gap));
  }
  res.end();
});
await new Promise((r) => stub.listen(0, '127.0.0.1', r));
stub.unref();
const STUB = `http://127.0.0.1:${stub.address().port}`;

/** `text` as token events of about three words each. */
function tokens(messageId, text, node = 'inquire') {
  const words = text.match(/\S+\s*|\s+/g) || [];
  const out = [];
  for (let i = 0; i < words.length; i += 3) out.push({ type: 'token', node, message_id: messageId, content: words.slice(i, i + 3).join('') });
  return out;
}

/**
 * The POSTs to `path` on this page get the stream of `events` (one every `gap` ms) instead
 * of the server's; their bodies are pushed to `seen`.
 */
async function serveStream(page, path, events, seen, gap = 15) {
  await page.route(`${BASE}${path}`, async (route) => {
    if (seen) seen.push(JSON.parse(route.request().postData() || 'null'));
    const key = `/stream/${crypto.randomUUID()}`;
    scripts.set(key, { events, gap });
    await route.continue({ url: STUB + key });
  });
}

async function docByTitle(title) {
  const d = (await api('GET', '/documents')).json.find((x) => x.title === title);
  check(d, `the sample document "${title}"`);
  return d;
}

/** A conversation answered by the real server (POST /chat, read to its end): its id. */
async function answeredThread(message) {
  const id = crypto.randomUUID();
  const r = await fetch(`${BASE}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, thread_id: id }),
  });
  const body = await r.text();
  check(body.includes('"type":"response"'), `the answer to "${message}" completed`);
  return id;
}

function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

// ------------------------------------------------------------------ the steps

step('layout: with 35 conversations and 30 documents the sidebar and the conversation scroll on their own', async (ctx) => {
  check(AUTH_BASE, 'PALGRAPH_AUTH_URL is set (a second server, so this user can be filled up)');
  const auth = { base: AUTH_BASE, token: 'browser-key' };
  await Promise.all(
    Array.from({ length: 35 }, (_, i) =>
      api('POST', '/threads', { metadata: { graph_id: 'palassist', title: `Audit backlog item ${i + 1}` } }, auth),
    ),
  );
  await Promise.all(
    Array.from({ length: 25 }, (_, i) =>
      api('POST', '/documents', { title: `Procedure ${String(i + 1).padStart(2, '0')}`, content: `Step ${i + 1}: check the records.` }, auth),
    ),
  );
  const page = await open(ctx, '', auth);
  await page.locator('.thread-item', { hasText: 'Audit backlog item 1' }).first().waitFor();
  check((await page.locator('.thread-item').count()) >= 35, 'the 35 conversations are listed');
  check((await page.locator('.doc-item').count()) >= 25, 'the documents are listed');
  const geometry = () =>
    page.evaluate(() => ({
      windowScroll: window.scrollY,
      pageHeight: document.scrollingElement.scrollHeight,
      viewport: window.innerHeight,
      threads: document.getElementById('thread-list').scrollTop,
      docs: document.getElementById('doc-list').scrollTop,
      messages: document.getElementById('messages').scrollTop,
    }));
  let g = await geometry();
  check(g.pageHeight <= g.viewport, `the page is no taller than the window (${g.pageHeight} > ${g.viewport})`);
  // The documents panel and its upload button are on the first screen.
  const uploadBox = await page.locator('label[for="upload-input"]').boundingBox();
  check(uploadBox && uploadBox.y + uploadBox.height <= g.viewport, `the upload button is visible (${JSON.stringify(uploadBox)})`);
  check(await page.locator('#docs-heading').isVisible(), 'the documents heading is visible');
  // The wheel over the conversations scrolls them, not the window.
  const list = await page.locator('#thread-list').boundingBox();
  await page.mouse.move(list.x + list.width / 2, list.y + Math.min(60, list.height / 2));
  await page.mouse.wheel(0, 713);
  await page.waitForFunction(() => document.getElementById('thread-list').scrollTop > 0);
  g = await geometry();
  eq(g.windowScroll, 0, 'the window did not scroll with the conversations');
  // The wheel over the documents scrolls them.
  const docs = await page.locator('#doc-list').boundingBox();
  await page.mouse.move(docs.x + docs.width / 2, docs.y + Math.min(30, docs.height / 2));
  await page.mouse.wheel(0, 400);
  await page.waitForFunction(() => document.getElementById('doc-list').scrollTop > 0);
  // A conversation longer than the screen scrolls on its own (this server answers at once).
  for (let i = 0; i < 5; i++) {
    await send(page, DOC_Q);
    await page.locator('.msg.assistant:not(.streaming)').nth(i).waitFor();
    await settled(page);
  }
  const before = await geometry();
  check(
    await page.evaluate(() => {
      const m = document.getElementById('messages');
      return m.scrollHeight > m.clientHeight;
    }),
    'the conversation is taller than its pane',
  );
  const pane = await page.locator('#messages').boundingBox();
  await page.mouse.move(pane.x + pane.width / 2, pane.y + pane.height / 2);
  await page.mouse.wheel(0, -1500);
  await page.waitForFunction((top) => document.getElementById('messages').scrollTop < top, before.messages);
  g = await geometry();
  eq([g.windowScroll, g.threads], [0, before.threads], 'the window and the conversation list stayed where they were');
  await shot(page, '15-sidebar-many-conversations.png');
  await page.evaluate(() => localStorage.removeItem('palgraph_token'));
  await page.close();
});

step('Markdown: emphasis, numbered and nested lists, a table, code; sanitized; answer details and Copy', async (ctx) => {
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  const d2024 = await docByTitle('Data Retention Policy 2024');
  const md = [
    '_Note: Web search is off for comparisons: a comparison works on your documents only._',
    '',
    'The two policies *differ* in **two** ways:',
    '',
    '1. Retention',
    '   - customer account records: 5 → 7 years [1]',
    '   - email: 2 years',
    '2. Deletion',
    '',
    '| Record | 2023 | 2024 |',
    '|---|---|---|',
    '| Customer accounts | 5 years | 7 years |',
    '',
    '```',
    'retain(customer_accounts, years = 7)',
    '```',
    '',
    '<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2"> [a link](javascript:window.__xss=3)',
  ].join('\n');
  const citation = {
    doc_id: d2024.id,
    title: d2024.title,
    quote: 'Customer account records must be retained for 7 years after the account is closed.',
    marker: 1,
  };
  const page = await open(ctx);
  await serveStream(page, '/chat', [
    { type: 'status', node: 'compare', message: 'Comparing documents...' },
    ...tokens('m1', md, 'compare'),
    {
      type: 'response',
      response: md,
      citations: [citation],
      action: 'compare',
      notices: ['Web search is off for comparisons: a comparison works on your documents only.'],
      inference_confidence: 'high',
      retrieval_confidence: 'high',
      tokens_used: 1234,
      cost_usd: 0.0123,
      answered_by: 'gpt-4o-mini',
    },
  ]);
  await send(page, 'Compare the retention policies');
  const answer = await finalAnswer(page);
  const content = answer.locator('.content');
  eq(await content.locator('em').allInnerTexts(), ['differ'], 'emphasis');
  eq(await content.locator('strong').allInnerTexts(), ['two'], 'bold');
  eq(await content.locator('ol > li').count(), 2, 'a numbered list of two items');
  eq(await content.locator('ol > li > ul > li').count(), 2, 'a list nested in the first item');
  eq(await content.locator('table th').allInnerTexts(), ['Record', '2023', '2024'], 'the table header');
  eq(await content.locator('table td').allInnerTexts(), ['Customer accounts', '5 years', '7 years'], 'the table row');
  eq((await content.locator('pre code').innerText()).trim(), 'retain(customer_accounts, years = 7)', 'the code block');
  eq(await content.locator('script, img, [onerror]').count(), 0, 'no script or image from the answer');
  eq(await content.locator('a[href^="javascript"]').count(), 0, 'no javascript: link');
  eq(await page.evaluate(() => window.__xss), undefined, 'nothing from the answer ran');
  // The notice once, and not as raw text.
  eq(await answer.locator('.notices li').allInnerTexts(), ['Web search is off for comparisons: a comparison works on your documents only.'], 'the notice, once');
  const text = await content.innerText();
  check(!text.includes('_Note') && !text.includes('Note:'), `no raw notice in the text: ${text.slice(0, 80)}`);
  // Details: a green dot from retrieval_confidence, tokens · cost, the model.
  await answer.locator('.confidence[data-level="high"] .dot.high').waitFor();
  eq(await answer.locator('.usage').innerText(), '1,234 tokens · $0.0123', 'tokens and cost');
  eq(await answer.locator('.made-by').innerText(), 'gpt-4o-mini', 'the model badge');
  // Copy puts the answer's Markdown on the clipboard.
  await answer.getByRole('button', { name: 'Copy the answer' }).click();
  await answer.getByRole('button', { name: 'Copy the answer' }).filter({ hasText: 'Copied' }).waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check(copied.startsWith('The two policies *differ*') && copied.includes('| Customer accounts | 5 years | 7 years |'), `the clipboard: ${copied.slice(0, 60)}`);
  check(!copied.includes('_Note'), 'the notice is not copied as answer text');
  await shot(page, '16-markdown-and-answer-details.png');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.close();
});

step('contract shapes: confidence levels, a web query, reset tokens, offline badge, {id, label} options', async (ctx) => {
  const page = await open(ctx);
  await record(page);
  // A web query (a server with web search), a token that replaces the text so far.
  await serveStream(page, '/chat', [
    { type: 'status', node: 'inquire', message: 'Researching your question...', web_query: 'CRR leverage ratio' },
    { type: 'token', node: 'inquire', message_id: 'm1', content: 'A first draft ' },
    { type: 'token', node: 'inquire', message_id: 'm1', content: 'that is wrong.' },
    { type: 'token', node: 'inquire', message_id: 'm1', content: 'The corrected ', reset: true },
    { type: 'token', node: 'inquire', message_id: 'm1', content: 'answer.' },
    { type: 'response', response: 'The corrected answer.', citations: [], action: 'inquire', retrieval_confidence: 'medium', inference_confidence: 'high', confidence_score: 0.5, tokens_used: 0, cost_usd: 0, answered_by: 'offline' },
  ], undefined, 80);
  await send(page, 'A question');
  await page.locator('.turn .reasoning .web-query', { hasText: 'Searching the web for “CRR leverage ratio”' }).waitFor();
  const answer = await finalAnswer(page);
  eq(await answer.locator('.content').innerText(), 'The corrected answer.', 'the text after the reset');
  const rec = await recorded(page);
  check(rec.answers.includes('The corrected '), `the reset text was shown as it streamed: ${JSON.stringify(rec.answers)}`);
  check(!rec.answers.some((a) => a.includes('wrong.The')), 'a reset replaces the text, never appends to it');
  await answer.locator('.confidence[data-level="medium"] .dot.medium').waitFor();
  eq(await answer.locator('.usage').innerText(), '0 tokens · $0.00', 'tokens and cost');
  eq(await answer.locator('.made-by').innerText(), 'offline · extractive', 'the offline badge');
  await page.unrouteAll({ behavior: 'ignoreErrors' });

  // A prompt with `{id, label}` options: each button sends its id.
  await serveStream(page, '/chat', [
    {
      type: 'interrupt',
      interrupt_type: 'doc_choice',
      interrupt_id: 'i1',
      message: 'Which policy do you mean?',
      options: [
        { id: 'doc-a', label: 'Retention Policy A' },
        { id: 'doc-b', label: 'Retention Policy B' },
        { id: 'all', label: 'All of these' },
      ],
    },
  ]);
  await send(page, 'Summarize the policy');
  await page.locator('#prompt').waitFor();
  eq(await page.locator('#prompt-options .option-pill.doc').allInnerTexts(), ['Retention Policy A', 'Retention Policy B'], 'document pills');
  eq(await page.locator('#prompt-options .option-all').allInnerTexts(), ['All of these'], '"All of these" apart');
  await page.locator('#composer-hint', { hasText: 'waiting for your choice' }).waitFor();
  await shot(page, '20-doc-choice-id-label.png');
  const resumes = [];
  await serveStream(
    page,
    '/chat/resume',
    [{ type: 'response', response: 'Policy B says seven years.', citations: [], action: 'summarize', retrieval_confidence: 'low', tokens_used: 10, cost_usd: 0.5 }],
    resumes,
  );
  await page.getByRole('button', { name: 'Retention Policy B' }).click();
  await page.locator('.prompt-record', { hasText: 'answered: Retention Policy B' }).waitFor();
  const second = page.locator('.msg.assistant', { hasText: 'Policy B says seven years.' });
  await second.locator('.confidence[data-level="low"] .dot.low').waitFor();
  eq(resumes.map((r) => r.resume_value), [{ type: 'doc_choice', value: 'doc-b' }], 'the resume sends the option id');
  eq(await second.locator('.usage').innerText(), '10 tokens · $0.50', 'tokens and cost');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.close();
});

step('a notice from the server is shown once, live and after a reload', async (ctx) => {
  const page = await open(ctx);
  // This request tags a document the user does not have, so the server adds its notice.
  await page.route(`${BASE}/chat`, (route) => {
    const body = JSON.parse(route.request().postData());
    route.continue({ postData: JSON.stringify({ ...body, tagged_doc_ids: ['no-such-document'] }) });
  });
  await send(page, DOC_Q);
  const answer = await finalAnswer(page);
  await settled(page);
  const want = '"no-such-document" is not among your documents, so I left it out.';
  eq(await answer.locator('.notices li').allInnerTexts(), [want], 'the notice, once');
  const text = await answer.locator('.content').innerText();
  check(!text.includes('_') && !text.includes('Note:'), `no raw "_Note: …_" in the answer: ${text.slice(0, 100)}`);
  check(text.includes('retained for 7 years'), 'the answer itself');
  const hist = await history(threadOf(page));
  const last = hist.messages[hist.messages.length - 1];
  check(!last.content.includes(want), 'the notice is not in the answer text');
  eq(last.metadata.notices, [want], 'the notice is in the answer message metadata');
  await shot(page, '17-notice-once.png');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  const again = await finalAnswer(page);
  eq(await again.locator('.notices li').allInnerTexts(), [want], 'the notice, once, after a reload');
  await page.close();
});

step('errors are readable and can be retried: a refused request, a failed run', async (ctx) => {
  const page = await open(ctx);
  await page.route(`${BASE}/chat`, (route) =>
    route.fulfill({ status: 422, contentType: 'application/json', body: JSON.stringify({ detail: SERDE, code: 'invalid' }) }),
  );
  await send(page, DOC_Q);
  const banner = page.locator('#error');
  await banner.waitFor();
  const said = await page.locator('#error-text').innerText();
  check(said.includes('The field “id” is missing'), `the detail in words: ${said}`);
  check(!/line \d+ column \d+|`/.test(said), `no parser position or backticks: ${said}`);
  eq(await page.locator('#editor').innerText(), DOC_Q, 'the draft is given back');
  await shot(page, '18-error-readable-retry.png');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.getByRole('button', { name: 'Retry' }).click();
  await banner.waitFor({ state: 'hidden' });
  await page.locator('.msg.assistant:not(.streaming) .citations').waitFor();
  await settled(page);
  eq(await page.locator('.msg.user').count(), 1, 'the message was sent once');

  // A run that fails: a readable line with Retry, which sends the message again.
  await serveStream(page, '/chat', [
    { type: 'status', node: 'intent_resolver', message: 'Clarifying intent...' },
    { type: 'error', message: 'missing field `id` at line 1 column 92' },
  ]);
  await send(page, 'How long are emails kept?');
  const line = page.locator('.msg.error-line');
  await line.waitFor();
  const lineText = await line.locator('p').innerText();
  check(lineText.startsWith('PalAssist could not finish this answer.') && lineText.includes('The field “id” is missing'), `the failed run in words: ${lineText}`);
  check(!/line \d+ column \d+|`/.test(lineText), `no parser position: ${lineText}`);
  await shot(page, '19-run-error-retry.png');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  const retried = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await line.getByRole('button', { name: 'Retry' }).click();
  eq(JSON.parse((await retried).postData()).message, 'How long are emails kept?', 'the message sent again');
  await line.waitFor({ state: 'detached' });
  await page.locator('.msg.assistant:not(.streaming)', { hasText: 'mail' }).last().waitFor();
  await settled(page);
  eq(await page.locator('.msg.user', { hasText: 'How long are emails kept?' }).count(), 1, 'the retried message is shown once');
  await page.close();
});

step('conversations: search, rename, delete (with a confirmation)', async (ctx) => {
  const stamp = Date.now();
  const made = [];
  for (const name of ['Alpha', 'Bravo', 'Charlie']) {
    const r = await api('POST', '/threads', { metadata: { graph_id: 'palassist', title: `${name} review ${stamp}` } });
    eq(r.status, 200, 'thread created');
    made.push(r.json.thread_id);
  }
  const page = await open(ctx, `#/c/${made[1]}`);
  await page.locator('.thread-item[aria-current="true"]', { hasText: `Bravo review ${stamp}` }).waitFor();
  eq(await page.locator('#chat-title').innerText(), `Bravo review ${stamp}`, 'the header shows the title');
  // Search.
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill(`review ${stamp}`);
  eq(await page.locator('.thread-item .thread-title').allInnerTexts(), [`Charlie review ${stamp}`, `Bravo review ${stamp}`, `Alpha review ${stamp}`], 'the search finds the three');
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill(`alpha review ${stamp}`);
  eq(await page.locator('.thread-item .thread-title').allInnerTexts(), [`Alpha review ${stamp}`], 'the search narrows (case-insensitive)');
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill(`nothing like this ${stamp}`);
  await page.locator('#threads-nomatch', { hasText: 'No conversation matches' }).waitFor();
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill(`review ${stamp}`);
  eq(await page.locator('.thread-item').count(), 3, 'the three again');
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  // Rename the open conversation inline.
  const patch = page.waitForRequest((r) => r.url() === `${BASE}/threads/${made[1]}` && r.method() === 'PATCH');
  await page.getByRole('button', { name: `Rename “Bravo review ${stamp}”` }).click();
  const input = page.getByRole('textbox', { name: `New title for the conversation “Bravo review ${stamp}”` });
  check(await input.evaluate((e) => e === document.activeElement), 'the title field has the focus');
  await input.fill(`Retention audit ${stamp}`);
  await shot(page, '21-conversations-rename-search.png');
  await input.press('Enter');
  eq(JSON.parse((await patch).postData()), { metadata: { title: `Retention audit ${stamp}` } }, 'the PATCH body');
  await page.locator('.thread-item[aria-current="true"]', { hasText: `Retention audit ${stamp}` }).waitFor();
  await page.locator('#chat-title', { hasText: `Retention audit ${stamp}` }).waitFor();
  eq((await api('GET', `/threads/${made[1]}`)).json.metadata.title, `Retention audit ${stamp}`, 'the server kept the title');
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.locator('.thread-item[aria-current="true"]', { hasText: `Retention audit ${stamp}` }).waitFor();
  // Delete: Cancel keeps it; Delete removes it, and the open conversation with it.
  await page.getByRole('button', { name: `Delete “Retention audit ${stamp}”` }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this conversation?' });
  await dialog.waitFor();
  await shot(page, '22-delete-conversation-confirm.png');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  eq((await api('GET', `/threads/${made[1]}`)).status, 200, 'Escape deleted nothing');
  await page.getByRole('button', { name: `Delete “Retention audit ${stamp}”` }).click();
  const del = page.waitForResponse((r) => r.url() === `${BASE}/threads/${made[1]}` && r.request().method() === 'DELETE');
  await dialog.getByRole('button', { name: 'Delete' }).click();
  eq((await del).status(), 204, 'DELETE /threads/{id}');
  await page.locator('.thread-item', { hasText: `Retention audit ${stamp}` }).waitFor({ state: 'detached' });
  await page.locator('.welcome').waitFor();
  eq(await page.locator('#chat-title').innerText(), 'New conversation', 'the deleted conversation is closed');
  eq((await api('GET', `/threads/${made[1]}`)).status, 404, 'the server deleted it');
  const left = (await page.locator('.thread-item .thread-title').allInnerTexts()).filter((t) => t.includes(String(stamp)));
  eq(left, [`Charlie review ${stamp}`, `Alpha review ${stamp}`], 'the others stay');
  await page.close();
});

step('citations open the cited passage in the document viewer; documents can be viewed and deleted', async (ctx) => {
  const page = await open(ctx);
  await send(page, DOC_Q);
  const answer = await finalAnswer(page);
  await settled(page);
  // The first marker: a button named after its source.
  const cite = answer.getByRole('button', { name: 'Source 1: Data Retention Policy 2024' });
  await cite.click();
  const viewer = page.getByRole('dialog', { name: 'Data Retention Policy 2024' });
  await viewer.waitFor();
  await page.locator('#viewer-body[data-loaded="true"]').waitFor();
  const mark = page.locator('#viewer-body mark');
  eq(await mark.allInnerTexts(), ['Customer account records must be retained for 7 years after the account is closed.'], 'the cited passage, highlighted');
  const [markBox, bodyBox] = [await mark.first().boundingBox(), await page.locator('#viewer-body').boundingBox()];
  check(markBox.y >= bodyBox.y && markBox.y + markBox.height <= bodyBox.y + bodyBox.height, 'the passage is scrolled into view');
  await shot(page, '23-citation-document-viewer.png');
  await page.keyboard.press('Escape');
  await viewer.waitFor({ state: 'hidden' });
  check(await cite.evaluate((e) => e === document.activeElement), 'the focus is back on the citation');
  // The sources list opens the passages too.
  await answer.locator('.citations summary').click();
  // (the older version the answer quotes as replaced: what it said on each point)
  await answer.getByRole('button', { name: /^Open source \d+, Data Retention Policy 2023/ }).first().click();
  await page.getByRole('dialog', { name: 'Data Retention Policy 2023' }).waitFor();
  await page.locator('#viewer-body mark', { hasText: 'retained for 5 years after the account is closed' }).waitFor();
  await page.getByRole('button', { name: 'Close the document' }).click();

  // A document's text from the sidebar, then deleted.
  const title = `Expense Policy ${Date.now()}`;
  const made = await api('POST', '/documents', { title, content: 'Receipts are kept for **ten** years.\n\n- Meals\n- Travel' });
  eq(made.status, 201, 'document created');
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.getByRole('button', { name: `View “${title}”` }).click();
  await page.getByRole('dialog', { name: title }).waitFor();
  await page.locator('#viewer-body[data-loaded="true"]').waitFor();
  eq(await page.locator('#viewer-body strong').innerText(), 'ten', 'the document as Markdown');
  eq(await page.locator('#viewer-body li').allInnerTexts(), ['Meals', 'Travel'], 'its list');
  eq(await page.locator('#viewer-body mark').count(), 0, 'nothing highlighted without a citation');
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: `Delete “${title}”` }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this document?' });
  await dialog.waitFor();
  const del = page.waitForResponse((r) => r.url() === `${BASE}/documents/${made.json.id}` && r.request().method() === 'DELETE');
  await dialog.getByRole('button', { name: 'Delete' }).click();
  eq((await del).status(), 204, 'DELETE /documents/{id}');
  await page.locator('.doc-item', { hasText: title }).waitFor({ state: 'detached' });
  eq((await api('GET', `/documents/${made.json.id}`)).status, 404, 'the server deleted it');
  await page.close();
});

step('another tab takes the conversation over: a notice, the stopped answer, the new turn', async (ctx) => {
  const first = await open(ctx);
  await send(first, LONG);
  await first.waitForFunction(() => {
    const c = document.querySelector('.turn .msg.assistant.streaming .content');
    return c && c.textContent.length > 30;
  });
  const thread = threadOf(first);
  const second = await open(ctx, `#/c/${thread}`);
  await second.locator('.turn .msg.assistant.streaming').waitFor(); // joined the running answer
  await send(second, DOC_Q);
  await first.locator('#notice', { hasText: 'Another tab or client sent a new message' }).waitFor();
  await first.locator('.msg.user', { hasText: DOC_Q }).waitFor();
  await first.locator('.msg.assistant .interrupted-mark', { hasText: 'Response interrupted' }).first().waitFor();
  await first.locator('.msg.assistant:not(.streaming) .citations').waitFor(); // the new answer, followed live
  await settled(first);
  await shot(first, '24-superseded-by-another-tab.png');
  const hist = await history(thread);
  const roles = hist.messages.map((m) => (m.metadata.interrupted ? `interrupted:${m.metadata.reason || m.metadata.interrupted_reason}` : m.role));
  eq(roles, ['user', 'interrupted:superseded', 'user', 'assistant'], 'the server history');
  await settled(second);
  check(await second.locator('#notice').isHidden(), 'the tab that sent the message gets no notice');
  await second.close();
  await first.close();
});

step('welcome examples work as written: the third compares two named documents', async (ctx) => {
  const page = await open(ctx);
  const examples = page.locator('.welcome .example');
  eq(await examples.allInnerTexts(), [DOC_Q, LONG, COMPARE_EXAMPLE], 'the examples (the first two are asked in other steps)');
  await shot(page, '25-welcome-examples.png');
  await examples.nth(2).click();
  eq(await page.locator('#editor').innerText(), COMPARE_EXAMPLE, 'the example is in the message box');
  check(await page.locator('#editor').evaluate((e) => e === document.activeElement), 'the message box has the focus');
  await page.keyboard.press('Enter');
  // Both documents found, the comparison streams, no question about a second document.
  await page.locator('.turn .reasoning .pill', { hasText: 'Data Retention Policy 2023' }).waitFor();
  await page.locator('.turn .reasoning .pill', { hasText: 'Data Retention Policy 2024' }).waitFor();
  await page.locator('.turn .msg.assistant.streaming').waitFor();
  check(await page.locator('#prompt').isHidden(), 'no prompt');
  eq(await page.locator('.turn .reasoning .status-text').innerText(), 'Comparing documents...', 'the status line follows the answer');
  await page.locator('#stop').click();
  await settled(page);
  await page.close();
});

step('dark mode follows the system', async (ctx) => {
  const thread = await answeredThread(DOC_Q);
  const page = await ctx.newPage();
  page.__errors = [];
  page.on('pageerror', (e) => page.__errors.push(e.message));
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${BASE}/#/c/${thread}`);
  await page.waitForSelector('body[data-ready="true"]');
  await finalAnswer(page);
  const colors = await page.evaluate(() => {
    const css = (sel, prop) => getComputedStyle(document.querySelector(sel))[prop];
    return {
      bg: css('html', 'backgroundColor'),
      text: css('html', 'color'),
      answer: css('.msg.assistant', 'backgroundColor'),
      sidebar: css('.sidebar', 'backgroundColor'),
      editor: css('#editor', 'backgroundColor'),
    };
  });
  check(luminance(colors.bg) < 0.15, `a dark page: ${colors.bg}`);
  check(luminance(colors.text) > 0.75, `light text: ${colors.text}`);
  for (const k of ['answer', 'sidebar', 'editor']) check(luminance(colors[k]) < 0.2, `a dark ${k}: ${colors[k]}`);
  await shot(page, '26-dark-mode.png');
  await page.emulateMedia({ colorScheme: 'light' });
  check(luminance(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)) > 0.9, 'light again with a light system');
  await page.close();
});

step('keyboard and screen reader: landmarks, names, focus order, visible focus, dialogs', async (ctx) => {
  const thread = await answeredThread(DOC_Q);
  const page = await open(ctx, `#/c/${thread}`);
  await finalAnswer(page);
  await settled(page);
  // Landmarks and named regions.
  for (const [role, name] of [
    ['complementary', 'Conversations and documents'],
    ['navigation', 'Conversations'],
    ['search', null],
    ['main', null],
    ['log', null],
    ['form', 'Message'],
  ]) {
    eq(await page.getByRole(role, name ? { name } : {}).count(), 1, `one ${role}${name ? ` "${name}"` : ''}`);
  }
  // Every control a keyboard reaches has a name.
  const unnamed = await page.evaluate(() => {
    const focusable = [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"]), [contenteditable="true"]')];
    const nameOf = (e) => {
      const by = e.getAttribute('aria-labelledby');
      return (
        e.getAttribute('aria-label') ||
        (by && by.split(' ').map((id) => document.getElementById(id)?.textContent || '').join(' ').trim()) ||
        (e.labels && [...e.labels].map((l) => l.textContent).join(' ').trim()) ||
        e.textContent.trim() ||
        e.getAttribute('title') ||
        ''
      );
    };
    return focusable.filter((e) => e.offsetParent !== null && e.type !== 'file' && !nameOf(e)).map((e) => e.outerHTML.slice(0, 80));
  });
  eq(unnamed, [], 'controls without an accessible name');
  // The first Tab reaches the skip link, which moves the focus to the message box.
  await page.locator('body').focus();
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('Tab');
  eq(await page.evaluate(() => document.activeElement.textContent), 'Skip to the message box', 'the first stop');
  await page.keyboard.press('Enter');
  eq(await page.evaluate(() => document.activeElement.id), 'editor', 'the skip link goes to the message box');
  // Tab order in the sidebar: new conversation, search, then each conversation and its actions.
  await page.getByRole('button', { name: 'New conversation' }).focus();
  await page.keyboard.press('Tab');
  eq(await page.evaluate(() => document.activeElement.id), 'thread-search', 'then the search');
  await page.keyboard.press('Tab');
  eq(await page.evaluate(() => document.activeElement.className), 'thread-item', 'then the first conversation');
  await page.keyboard.press('Tab');
  const renameName = await page.evaluate(() => document.activeElement.getAttribute('aria-label'));
  check(/^Rename “/.test(renameName), `then its Rename button (${renameName})`);
  const focus = await page.evaluate(() => {
    const s = getComputedStyle(document.activeElement);
    return { style: s.outlineStyle, width: parseFloat(s.outlineWidth), opacity: getComputedStyle(document.activeElement.parentElement).opacity };
  });
  check(focus.style !== 'none' && focus.width >= 2 && focus.opacity === '1', `a visible focus ring on a visible button: ${JSON.stringify(focus)}`);
  await shot(page, '27-keyboard-focus.png');
  await page.keyboard.press('Tab');
  const deleteButton = await page.evaluateHandle(() => document.activeElement);
  check(/^Delete “/.test(await deleteButton.evaluate((e) => e.getAttribute('aria-label'))), 'then its Delete button');
  // A dialog takes the focus and gives it back.
  await page.keyboard.press('Enter');
  await page.getByRole('dialog', { name: 'Delete this conversation?' }).waitFor();
  eq(await page.evaluate(() => document.activeElement.closest('dialog')?.id), 'confirm', 'the focus is in the dialog');
  eq(await page.evaluate(() => document.activeElement.textContent), 'Cancel', 'on the safe choice');
  await page.keyboard.press('Escape');
  check(await deleteButton.evaluate((e) => e === document.activeElement), 'the focus is back on the Delete button');
  // Citations and sources are buttons with names; the answer's details are text.
  check((await page.getByRole('button', { name: /^Source \d+: Data Retention Policy/ }).count()) >= 2, 'citation buttons named after their source');
  await page.getByRole('button', { name: /^Source 1:/ }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('dialog', { name: 'Data Retention Policy 2024' }).waitFor();
  eq(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Close the document', 'the viewer takes the focus');
  await page.keyboard.press('Escape');
  eq(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Source 1: Data Retention Policy 2024', 'and gives it back');
  await page.close();
});

await run('daily', steps);
