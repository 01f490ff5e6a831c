// The inspector's data, read from the Agent Server API: the thread (GET /threads/{id}), its
// graph's drawing (GET /assistants/{graph_id}/graph), its whole history (POST
// /threads/{id}/history, paged 100 at a time with `before`) and its runs (GET
// /threads/{id}/runs).

import { api } from './api.js';

/** Checkpoints read at most (the newest first). */
export const MAX_CHECKPOINTS = 2000;
const PAGE = 100;

const enc = encodeURIComponent;

/** Every checkpoint of thread `id`, newest first (at most `MAX_CHECKPOINTS`). */
export async function loadHistory(id) {
  const out = [];
  let before = null;
  while (out.length < MAX_CHECKPOINTS) {
    const body = { limit: PAGE };
    if (before) body.before = before;
    const page = await api('POST', `/threads/${enc(id)}/history`, body);
    const list = Array.isArray(page) ? page : [];
    out.push(...list);
    if (list.length < PAGE) break;
    before = list[list.length - 1].checkpoint_id;
  }
  return out;
}

/** The thread, its graph's drawing, its history and its runs. */
export async function loadThread(id) {
  const thread = await api('GET', `/threads/${enc(id)}`);
  const graphId = (thread.metadata && (thread.metadata.graph_id || thread.metadata.assistant_id)) || 'palassist';
  const [drawing, history, runs] = await Promise.all([
    api('GET', `/assistants/${enc(graphId)}/graph`),
    loadHistory(id),
    api('GET', `/threads/${enc(id)}/runs?limit=1000`).catch(() => []),
  ]);
  return { thread, graphId, drawing, history, runs: Array.isArray(runs) ? runs : [] };
}

/** The most recently updated threads of every graph (for the picker). */
export async function recentThreads() {
  const list = await api('POST', '/threads/search', { limit: 50, sort_by: 'updated_at', sort_order: 'desc' });
  return Array.isArray(list) ? list : [];
}
