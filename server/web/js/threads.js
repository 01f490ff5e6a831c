// The conversations (POST /threads/search; PATCH and DELETE /threads/{id}), the open one
// (in the URL: `#/c/<id>`), its title.

import { api } from './api.js';
import { ui } from './dom.js';
import { showError } from './errors.js';
import { state } from './state.js';
import { assistantName } from './graphs.js';
import { renderThreads } from './threadlist.js';

export { customTitle, threadTitle } from './titles.js';

/** The conversation's title in the header and the window title. */
export function setTitle(text) {
  const t = String(text || '').trim();
  ui.title.textContent = t ? (t.length > 80 ? `${t.slice(0, 80)}…` : t) : 'New conversation';
  document.title = t ? `${ui.title.textContent} · ${assistantName()}` : `${assistantName()} · palgraph`;
}

let threadsPending = null;

/** Reloads the list of conversations of the current graph (one request at a time each). */
export function refreshThreads() {
  const graph = state.graph ? state.graph.graph_id : 'palassist';
  // A refresh under way for another graph is not this one's: start this graph's own.
  if (threadsPending && threadsPending.graph === graph) return threadsPending.promise;
  const promise = api('POST', '/threads/search', { limit: 100, metadata: { graph_id: graph } })
    .then((list) => {
      // The page moved to another graph meanwhile: that graph's list is the one to show.
      if ((state.graph ? state.graph.graph_id : 'palassist') !== graph) return;
      state.threads = (Array.isArray(list) ? list : []).sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
      renderThreads();
    })
    .catch((e) => {
      if (e.status === 401) showError(e);
    })
    .finally(() => {
      if (threadsPending && threadsPending.promise === promise) threadsPending = null;
    });
  threadsPending = { graph, promise };
  return promise;
}

/** Makes `id` the open conversation (in the URL too). */
export function setThread(id) {
  state.threadId = id;
  ui.inspectLink.hidden = !id;
  ui.inspectLink.href = id ? `/inspect?thread=${encodeURIComponent(id)}` : '/inspect';
  const want = id ? `#/c/${id}` : '#/';
  if (location.hash !== want) history.pushState(null, '', want);
  renderThreads();
}

/** The conversation the URL names, if any. */
export function threadFromHash() {
  const m = /^#\/c\/([0-9a-fA-F-]{36})$/.exec(location.hash);
  return m ? m[1] : null;
}

/** Gives conversation `id` the title `title` (empty: back to its first message). */
export async function renameThread(id, title) {
  const clean = String(title || '').trim();
  const t = await api('PATCH', `/threads/${encodeURIComponent(id)}`, { metadata: { title: clean || null } });
  const i = state.threads.findIndex((x) => x.thread_id === id);
  if (i >= 0) state.threads[i].metadata = (t && t.metadata) || { ...state.threads[i].metadata, title: clean || null };
  renderThreads();
  if (state.threadId === id) {
    const firstUser = ui.messages.querySelector('.msg.user');
    setTitle(clean || (firstUser ? firstUser.textContent : ''));
  }
}

/** Deletes conversation `id` (its runs and checkpoints too). */
export async function deleteThread(id) {
  await api('DELETE', `/threads/${encodeURIComponent(id)}`);
  state.threads = state.threads.filter((x) => x.thread_id !== id);
  renderThreads();
}
