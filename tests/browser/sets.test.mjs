// Document sets in the chat page, in a real browser (see chat.test.mjs for how to run it):
// create a set, pick its documents, mention it with "@" (every document of the set is in
// scope: the request carries `tagged_set_ids` and a TipTap mention node with
// `kind: "set"`), rename it, delete it (its documents stay).
//
// Screenshots (artifacts/screenshots/):
//   03b-document-set.png                  a document set with its document picker open
//   failure-sets-<step>.png               the page when a step failed

import { BASE, api, check, eq, finalAnswer, open, run, settled, shot, type } from './lib.mjs';

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

step('document sets: create one, pick its documents, mention it; every document is in scope', async (ctx) => {
  const page = await open(ctx);
  const docs = (await api('GET', '/documents')).json;
  const crr = docs.find((d) => d.title.startsWith('Capital Requirements'));
  const aml = docs.find((d) => d.title.startsWith('Anti-Money'));
  const name = `Basel ${Date.now()}`;
  await page.locator('#set-name').fill(name);
  await page.locator('#set-form button[type=submit]').click();
  const row = page.locator('.set-row', { hasText: name });
  // A new set opens its document picker: tick two documents.
  await row.locator(`.set-docs input[data-doc-id="${crr.id}"]`).check();
  await row.locator('.set-count', { hasText: '1 document' }).waitFor();
  await row.locator(`.set-docs input[data-doc-id="${aml.id}"]`).check();
  await row.locator('.set-count', { hasText: '2 documents' }).waitFor();
  const set = (await api('GET', '/document-sets')).json.find((s) => s.name === name);
  eq(set.documents.map((d) => d.id).sort(), [crr.id, aml.id].sort(), 'the set holds the ticked documents');
  await shot(page, '03b-document-set.png');

  // "@" offers the set after the documents; picking it puts a set mention in the message.
  await type(page, `Summarize @${name.slice(0, 5)}`);
  const options = page.locator('#mention-list [role=option]');
  await page.locator('#mention-list .set-option', { hasText: name }).waitFor();
  const at = (await options.evaluateAll((os) => os.map((o) => o.dataset.setId || ''))).indexOf(set.id);
  check(at >= 0, 'the set is offered');
  for (let i = 0; i < at; i++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.locator(`#editor .mention.set-mention[data-id="${set.id}"]`).waitFor();
  const req = page.waitForRequest((r) => r.url() === `${BASE}/chat` && r.method() === 'POST');
  await page.keyboard.press('Enter');
  const body = JSON.parse((await req).postData());
  eq(body.tagged_set_ids, [set.id], 'tagged_set_ids');
  eq(body.tagged_doc_ids, [], 'no document tagged');
  eq(
    body.tiptap_json.content[0].content[1],
    { type: 'mention', attrs: { id: set.id, label: name, kind: 'set' } },
    'the set mention node',
  );
  // Both documents of the set were found.
  await page.locator('.turn .reasoning .pill', { hasText: crr.title }).waitFor();
  await page.locator('.turn .reasoning .pill', { hasText: aml.title }).waitFor();
  await finalAnswer(page);
  await settled(page);

  // Rename it, then delete it (its documents stay).
  await row.hover();
  await row.locator('.rename').click();
  await page.locator('.set-row .rename-input').fill(`${name} II`);
  await page.keyboard.press('Enter');
  const renamed = page.locator('.set-row', { hasText: `${name} II` });
  await renamed.waitFor();
  await renamed.hover();
  await renamed.locator('.delete').click();
  await page.locator('#confirm-ok').click();
  await renamed.waitFor({ state: 'detached' });
  eq((await api('GET', `/document-sets/${set.id}`)).status, 404, 'the set is gone');
  eq((await api('GET', `/documents/${crr.id}`)).status, 200, 'its documents stay');
  await page.close();
});

await run('sets', steps);
