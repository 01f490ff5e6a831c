// What the page knows: the open conversation, the documents and document sets, the
// conversations, the run it follows and the pending PalAssist prompt.

export const state = {
  threadId: null,
  graphs: [], // the chat graphs (GET /chat/graphs)
  graph: null, // the one this page talks to: {graph_id, description, panels, default}
  docs: [],
  sets: [], // the user's document sets: {id, name, documents: [{id, title}], document_count}
  threads: [],
  live: null, // the run this page follows (see live.js)
  prompt: null, // the pending PalAssist prompt (an `interrupt` event)
  openSeq: 0, // bumped by every openThread, so a stale history load is dropped
};

/** A random UUID (v4). */
export function uuid() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = Array.from(b, (v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
