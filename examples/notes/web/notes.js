// The "Notes" panel of the chat page: the caller's notes (GET /notes), shown while the
// `notes` graph is the one talked to, reloaded when the page starts, when the graph is
// picked and after each answer. It uses only the page's interface, /js/page.js.

import { addPanel, api, h, hasPanel, onGraph, onResponse, showError } from '/js/page.js';

const list = h('ul', { class: 'doc-list scroll', 'aria-labelledby': 'notes-heading' });
const empty = h('p', { class: 'muted small', text: 'No notes yet: tell the assistant something.' });
const panel = h(
  'section',
  { class: 'panel notes-panel', 'aria-labelledby': 'notes-heading' },
  h('h2', { id: 'notes-heading', text: 'Notes' }),
  list,
  empty,
);

async function refresh() {
  if (!hasPanel('notes')) return;
  try {
    const notes = await api('GET', '/notes');
    list.replaceChildren(...notes.map((text) => h('li', { class: 'row note', text })));
    empty.hidden = notes.length > 0;
  } catch (e) {
    showError(e, { context: 'Your notes could not be loaded.', retry: refresh });
  }
}

addPanel('notes', panel);
onGraph(refresh);
onResponse(refresh);
