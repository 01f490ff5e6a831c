// The user's document sets in the sidebar (GET /document-sets): named folders of
// documents. Mention one (all its documents are then in scope), pick its documents, rename
// it, delete it (its documents stay).

import { api, confirmDialog, h, mention, showError } from '/js/page.js';
import { library, markup } from './library.js';

/** The panel (added to the sidebar by palassist.js). */
export const panel = markup(`
  <section class="panel sets-panel" aria-labelledby="sets-heading">
    <h2 id="sets-heading">Document sets</h2>
    <p class="muted small">A set is a folder of documents: mention it to ask about all of them.</p>
    <ul id="set-list" class="doc-list scroll" aria-labelledby="sets-heading"></ul>
    <p id="sets-empty" class="muted small" hidden>No sets yet.</p>
    <form id="set-form" class="set-form">
      <label for="set-name" class="visually-hidden">New set name</label>
      <input id="set-name" type="text" maxlength="100" placeholder="New set name" autocomplete="off">
      <button type="submit" class="button">Create set</button>
    </form>
  </section>`);

const list = panel.querySelector('#set-list');
const empty = panel.querySelector('#sets-empty');
const nameInput = panel.querySelector('#set-name');
panel.querySelector('#set-form').addEventListener('submit', createSet);

let editing = null; // the id of the set whose documents are shown for picking
let renaming = null; // the id of the set being renamed

/** A set as a mention target: `{id, title, kind: 'set'}`. */
export function setMention(s) {
  return { id: s.id, title: s.name, kind: 'set' };
}

function count(s) {
  return `${s.document_count} document${s.document_count === 1 ? '' : 's'}`;
}

function renameForm(s) {
  const input = h('input', { type: 'text', class: 'rename-input', value: s.name, maxlength: '100', 'aria-label': `New name for “${s.name}”` });
  const form = h(
    'form',
    {
      class: 'set-rename-form',
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          await api('PATCH', `/document-sets/${encodeURIComponent(s.id)}`, { name: input.value });
          renaming = null;
          await refreshSets();
        } catch (err) {
          showError(err, { context: 'The set was not renamed.' });
        }
      },
      onkeydown: (e) => {
        if (e.key === 'Escape') {
          renaming = null;
          renderSets();
        }
      },
    },
    input,
    h('button', { type: 'submit', class: 'button quiet', text: 'Save' }),
  );
  setTimeout(() => input.focus(), 0);
  return h('li', { class: 'row set-row', dataset: { setId: s.id } }, form);
}

async function toggle(s, docId, on) {
  const path = `/document-sets/${encodeURIComponent(s.id)}/documents`;
  try {
    if (on) await api('POST', path, { document_ids: [docId] });
    else await api('DELETE', `${path}/${encodeURIComponent(docId)}`);
  } catch (err) {
    if (on || err.status !== 404) showError(err, { context: 'The set was not changed.' });
  }
  await refreshSets();
}

function picker(s) {
  const inSet = new Set(s.documents.map((d) => d.id));
  return h(
    'ul',
    { class: 'set-docs', 'aria-label': `Documents of “${s.name}”` },
    ...library.docs.map((d) =>
      h(
        'li',
        {},
        h(
          'label',
          {},
          h('input', { type: 'checkbox', checked: inSet.has(d.id), dataset: { docId: d.id }, onchange: (e) => toggle(s, d.id, e.target.checked) }),
          h('span', { text: d.title }),
        ),
      ),
    ),
  );
}

function row(s) {
  if (renaming === s.id) return renameForm(s);
  const open = editing === s.id;
  const action = (cls, label, text, onclick) =>
    h('button', { type: 'button', class: `icon-button ${cls}`, 'aria-label': `${label} “${s.name}”`, title: label, text, onclick });
  return h(
    'li',
    { class: `row set-row${open ? ' open' : ''}`, dataset: { setId: s.id } },
    h(
      'button',
      {
        type: 'button',
        class: 'doc-item set-item',
        title: `Mention the set “${s.name}” (all its documents) in the message`,
        'aria-label': `Mention the set ${s.name}`,
        onclick: () => mention(setMention(s)),
      },
      h('span', { class: 'doc-at', 'aria-hidden': 'true', text: '@' }),
      h('span', { class: 'doc-title', text: s.name }),
      h('span', { class: 'set-count muted small', text: count(s) }),
    ),
    h(
      'span',
      { class: 'row-actions' },
      action('edit', 'Choose the documents of', '☰', () => {
        editing = open ? null : s.id;
        renderSets();
      }),
      action('rename', 'Rename', '✎', () => {
        renaming = s.id;
        renderSets();
      }),
      action('danger delete', 'Delete', '✕', () => askDelete(s)),
    ),
    open ? picker(s) : null,
  );
}

function renderSets() {
  list.replaceChildren(...library.sets.map(row));
  empty.hidden = library.sets.length > 0;
}

async function askDelete(s) {
  const ok = await confirmDialog({
    title: 'Delete this set?',
    text: `The set “${s.name}” will be deleted. Its documents stay.`,
    ok: 'Delete',
  });
  if (!ok) return;
  try {
    await api('DELETE', `/document-sets/${encodeURIComponent(s.id)}`);
  } catch (err) {
    if (err.status !== 404) {
      showError(err, { context: 'The set was not deleted.', retry: () => askDelete(s) });
      return;
    }
  }
  await refreshSets();
}

// Creates a set from the form's name.
async function createSet(e) {
  e.preventDefault();
  const name = nameInput.value.trim();
  if (!name) return;
  try {
    const s = await api('POST', '/document-sets', { name });
    nameInput.value = '';
    editing = s.id;
    await refreshSets();
  } catch (err) {
    showError(err, { context: 'The set was not created.' });
  }
}

/** Reloads the list of sets. */
export async function refreshSets() {
  try {
    const list = await api('GET', '/document-sets');
    library.sets = Array.isArray(list) ? list : [];
    renderSets();
  } catch (err) {
    showError(err, { context: 'Your document sets could not be loaded.', retry: refreshSets });
  }
}
