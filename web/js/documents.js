// The user's documents in the sidebar (GET /documents) and uploads (POST /documents).

import { ApiError, api, errorFrom, headers } from './api.js';
import { h, ui } from './dom.js';
import { editor } from './editor.js';
import { showError } from './errors.js';
import { state } from './state.js';

function renderDocs() {
  ui.docList.replaceChildren();
  for (const d of state.docs) {
    ui.docList.append(
      h(
        'li',
        null,
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
      ),
    );
  }
  ui.docsEmpty.hidden = state.docs.length > 0;
}

export async function refreshDocs() {
  try {
    const list = await api('GET', '/documents');
    state.docs = Array.isArray(list) ? list : [];
    renderDocs();
  } catch (e) {
    showError(e);
  }
}

/** Uploads `.txt` / `.md` files, then lists the documents again. */
export async function upload(files) {
  if (!files.length) return;
  const form = new FormData();
  for (const f of files) form.append('file', f, f.name);
  ui.uploadStatus.textContent = 'Uploading…';
  try {
    const resp = await fetch('/documents', { method: 'POST', headers: headers(), body: form });
    if (!resp.ok) throw await errorFrom(resp);
    const created = await resp.json();
    const n = Array.isArray(created) ? created.length : 1;
    ui.uploadStatus.textContent = `Uploaded ${n} document${n === 1 ? '' : 's'}.`;
    await refreshDocs();
  } catch (e) {
    ui.uploadStatus.textContent = '';
    showError(e instanceof ApiError ? e : new ApiError(0, 'network', String(e)));
  } finally {
    ui.upload.value = '';
  }
}
