// The user's documents in the sidebar (GET /documents): mention one, view it, delete it,
// upload more (upload.js).

import { api, confirmDialog, h, mention, showError } from '/js/page.js';
import { library, markup } from './library.js';
import { refreshSets } from './sets.js';
import { openDocument } from './viewer.js';

/** The panel (added to the sidebar by palassist.js). */
export const panel = markup(`
  <section class="panel docs-panel" aria-labelledby="docs-heading">
    <h2 id="docs-heading">Documents</h2>
    <p class="muted small">Type <kbd>@</kbd> in the message box, or pick a document here, to mention it.</p>
    <ul id="doc-list" class="doc-list scroll" aria-labelledby="docs-heading"></ul>
    <p id="docs-empty" class="muted small" hidden>No documents yet.</p>
    <div class="upload">
      <label for="upload-input" class="button">Upload .txt / .md</label>
      <input id="upload-input" class="visually-hidden" type="file" multiple
             accept=".txt,.md,.markdown,text/plain,text/markdown">
      <p id="upload-status" class="muted small" role="status"></p>
    </div>
  </section>`);

const list = panel.querySelector('#doc-list');
const empty = panel.querySelector('#docs-empty');
/** Where uploads and deletions are said. */
export const status = panel.querySelector('#upload-status');

function row(d) {
  return h(
    'li',
    { class: 'row', dataset: { docId: d.id } },
    h(
      'button',
      {
        type: 'button',
        class: 'doc-item',
        title: `Mention “${d.title}” in the message`,
        'aria-label': `Mention ${d.title}`,
        dataset: { docId: d.id },
        onclick: () => mention(d),
      },
      h('span', { class: 'doc-at', 'aria-hidden': 'true', text: '@' }),
      h('span', { class: 'doc-title', text: d.title }),
    ),
    h(
      'span',
      { class: 'row-actions' },
      h('button', {
        type: 'button',
        class: 'icon-button view',
        'aria-label': `View “${d.title}”`,
        title: 'View the text',
        text: 'View',
        onclick: () => openDocument(d.id, { title: d.title }),
      }),
      h('button', {
        type: 'button',
        class: 'icon-button danger delete',
        'aria-label': `Delete “${d.title}”`,
        title: 'Delete',
        text: '✕',
        onclick: () => askDelete(d),
      }),
    ),
  );
}

function renderDocs() {
  list.replaceChildren(...library.docs.map(row));
  empty.hidden = library.docs.length > 0;
  // An open set's document picker lists the documents too.
  if (document.querySelector('#set-list .set-docs')) refreshSets();
}

async function askDelete(d) {
  const ok = await confirmDialog({
    title: 'Delete this document?',
    text: `“${d.title}” will be deleted. Answers that cited it keep their quotes. This cannot be undone.`,
    ok: 'Delete',
  });
  if (!ok) return;
  try {
    await api('DELETE', `/documents/${encodeURIComponent(d.id)}`);
  } catch (e) {
    if (e.status !== 404) {
      showError(e, { context: 'The document was not deleted.', retry: () => askDelete(d) });
      return;
    }
  }
  library.docs = library.docs.filter((x) => x.id !== d.id);
  renderDocs();
  status.textContent = `Deleted “${d.title}”.`;
  // The document left its sets too.
  await Promise.all([refreshDocs(), refreshSets()]);
}

/** Reloads the list of documents. */
export async function refreshDocs() {
  try {
    const docs = await api('GET', '/documents');
    library.docs = Array.isArray(docs) ? docs : [];
    renderDocs();
  } catch (e) {
    showError(e, { context: 'Your documents could not be loaded.', retry: refreshDocs });
  }
}
