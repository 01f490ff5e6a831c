// The conversations in the sidebar (POST /threads/search), the open one, the title.

import { api } from './api.js';
import { openThread } from './conversation.js';
import { h, ui } from './dom.js';
import { showError } from './errors.js';
import { state } from './state.js';

/** The conversation's title in the header and the window title. */
export function setTitle(text) {
  const t = String(text || '').trim();
  ui.title.textContent = t ? (t.length > 80 ? `${t.slice(0, 80)}…` : t) : 'New conversation';
  document.title = t ? `${ui.title.textContent} · PalAssist` : 'PalAssist · palgraph';
}

function threadTitle(t) {
  const msgs = (t.values && t.values.messages) || [];
  const first = msgs.find((m) => m.type === 'human' || m.role === 'user');
  const text = first && typeof first.content === 'string' ? first.content : '';
  return text.trim() || 'New conversation';
}

export function renderThreads() {
  ui.threadList.replaceChildren();
  for (const t of state.threads) {
    const badge = t.status === 'busy' ? 'answering' : t.status === 'interrupted' ? 'waiting for you' : t.status === 'error' ? 'failed' : '';
    let title = threadTitle(t);
    if (t.thread_id === state.threadId && title === 'New conversation') title = ui.title.textContent;
    ui.threadList.append(
      h(
        'li',
        null,
        h(
          'button',
          {
            type: 'button',
            class: 'thread-item',
            'aria-current': t.thread_id === state.threadId ? 'true' : null,
            dataset: { threadId: t.thread_id },
            title,
            onclick: () => openThread(t.thread_id),
          },
          h('span', { class: 'thread-title', text: title }),
          badge ? h('span', { class: 'thread-badge', text: badge }) : null,
        ),
      ),
    );
  }
  ui.threadsEmpty.hidden = state.threads.length > 0;
}

let threadsPending = null;

/** Reloads the list of conversations (one request at a time). */
export function refreshThreads() {
  if (threadsPending) return threadsPending;
  threadsPending = api('POST', '/threads/search', { limit: 100, metadata: { graph_id: 'palassist' } })
    .then((list) => {
      state.threads = (Array.isArray(list) ? list : []).sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
      renderThreads();
    })
    .catch((e) => {
      if (e.status === 401) showError(e);
    })
    .finally(() => {
      threadsPending = null;
    });
  return threadsPending;
}

/** Makes `id` the open conversation (in the URL too: `#/c/<id>`). */
export function setThread(id) {
  state.threadId = id;
  const want = id ? `#/c/${id}` : '#/';
  if (location.hash !== want) history.pushState(null, '', want);
  renderThreads();
}

/** The conversation the URL names, if any. */
export function threadFromHash() {
  const m = /^#\/c\/([0-9a-fA-F-]{36})$/.exec(location.hash);
  return m ? m[1] : null;
}
