// The user's documents in the sidebar (GET /documents): mention one, view it, delete it.

import { api } from './api.js';
import { confirmDialog } from './dialogs.js';
import { h, ui } from './dom.js';
import { editor } from './editor.js';
import { showError } from './errors.js';
import { refreshSets } from './sets.js';
import { state } from './state.js';
import { openDocument } from './viewer.js';

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
        onclick: () => editor.insertMention(d, null),
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
  ui.docList.replaceChildren(...state.docs.map(row));
  ui.docsEmpty.hidden = state.docs.length > 0;
  // An open set's document picker lists the documents too.
  if (ui.setList.querySelector('.set-docs')) refreshSets();
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
  state.docs = state.docs.filter((x) => x.id !== d.id);
  renderDocs();
  ui.uploadStatus.textContent = `Deleted “${d.title}”.`;
  // The document left its sets too.
  await Promise.all([refreshDocs(), refreshSets()]);
}

/** Reloads the list of documents. */
export async function refreshDocs() {
  try {
    const list = await api('GET', '/documents');
    state.docs = Array.isArray(list) ? list : [];
    renderDocs();
  } catch (e) {
    showError(e, { context: 'Your documents could not be loaded.', retry: refreshDocs });
  }
}
