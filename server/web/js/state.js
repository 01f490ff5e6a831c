// What the page knows: the graphs, the open conversation, the conversations, the run it
// follows and the pending prompt.

export const state = {
  threadId: null,
  graphs: [], // the chat graphs (GET /chat/graphs)
  graph: null, // the one this page talks to: {graph_id, description, panels, default}
  threads: [],
  live: null, // the run this page follows (see live.js)
  prompt: null, // the pending PalAssist prompt (an `interrupt` event)
  openSeq: 0, // bumped by every openThread, so a stale history load is dropped
};

/**
 * A new id (a UUIDv7: 48 bits of the time in milliseconds, then 74 random bits), for a new
 * thread and a turn's key. Time-ordered like the server's own ids, so a new thread's rows go
 * to the end of the database's indexes rather than to a random page of them.
 */
export function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = Array.from(b, (v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
