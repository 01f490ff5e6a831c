// The chat page of `palgraph serve` (PalAssist, or any graph that speaks the chat contract:
// see graphs.js): plain JavaScript modules, no framework, no build step. This module wires
// the page's controls and starts it.
//
// It speaks the server's chat contract (server/src/api/chat.rs):
// - POST /chat and POST /chat/resume answer with a server-sent event stream, read with
//   fetch + a ReadableStream parser (sse.js, stream.js);
// - GET /chat/history/{thread} renders a conversation, GET /chat/stream/{thread} joins the
//   thread's active run (a `snapshot` first, then live events) or, with `Last-Event-ID`,
//   resumes a dropped stream exactly where it stopped;
// - POST /threads/{thread}/cancel stops a run; POST /threads/search lists conversations,
//   PATCH /threads/{thread} renames one (metadata.title), DELETE /threads/{thread} deletes it;
// - extensions add to the page through page.js (extensions.js imports their modules at
//   start): PalAssist's documents, document sets and document viewer are one.
//
// Behaviour worth knowing:
// - PalReasoning: each status line stays at least 300 ms (queued) until the answer starts
//   streaming: then the line jumps to the node writing it. The line, its document pills and
//   the web query are cleared when the answer or a prompt arrives.
// - Answers are Markdown (marked + DOMPurify, vendored in web/vendor); their `notices` are
//   shown once, above the text.
// - PalAssist: a prompt shows above the message box; while a `text_input` prompt is open,
//   what is typed is its answer (a resume), never a new turn. Cancel resumes with `cancel`
//   and the answer to the cancel is not shown.
// - A message sent while an answer streams uses the server's `interrupt` multitask
//   strategy: the streaming answer stops (kept, marked "Response interrupted") and the new
//   turn starts. Without a known active run a message uses the default `reject`; a 409
//   `thread_busy` then shows a message and the page joins the run that is going on.
// - A dropped stream reconnects with backoff (1 s, doubling to 30 s) and `Last-Event-ID`,
//   so no text is shown twice. 30 s without any byte (the server sends a heartbeat comment
//   every 15 s) counts as a dropped stream; before the stream has started it is an error.
// - Another tab or client taking the conversation over (the run ends `cancelled` with reason
//   `superseded`) is said in a notice, and the page follows the new turn.
// - Settings in localStorage: `palgraph_token` (sent as `Authorization: Bearer <token>`),
//   `palgraph_idle_timeout_ms` (the 30 s above).

import { TOKEN_KEY } from './config.js';
import { openThread } from './conversation.js';
import { graphChanged, loadExtensions } from './extensions.js';
import { loadGraphs, pickGraph } from './graphs.js';
import { ui } from './dom.js';
import { closeMentions, mentionKey, updateMentions } from './mentions.js';
import { answerPrompt, send } from './runs.js';
import { state } from './state.js';
import { stop } from './stop.js';
import { refreshThreads, threadFromHash } from './threads.js';

ui.editor.addEventListener('keydown', (e) => {
  if (e.isComposing || mentionKey(e)) return;
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    send();
  } else if (e.key === 'Enter' && e.shiftKey) {
    e.preventDefault();
    document.execCommand('insertLineBreak');
  }
});
ui.editor.addEventListener('input', () => {
  if (!ui.editor.textContent && !ui.editor.querySelector('.mention')) ui.editor.replaceChildren();
  updateMentions();
});
ui.editor.addEventListener('click', updateMentions);
ui.editor.addEventListener('blur', () => setTimeout(closeMentions, 100));
ui.editor.addEventListener('paste', (e) => {
  e.preventDefault();
  const text = (e.clipboardData || window.clipboardData).getData('text/plain');
  document.execCommand('insertText', false, text);
});
ui.editor.addEventListener('drop', (e) => e.preventDefault());

// The skip link moves the focus without touching the URL (its hash names the conversation).
document.querySelector('.skip-link').addEventListener('click', (e) => {
  e.preventDefault();
  ui.editor.focus();
});
ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
ui.stop.addEventListener('click', stop);
ui.promptCancel.addEventListener('click', () => answerPrompt({ type: 'cancel', value: null }, null));
ui.graphPicker.addEventListener('change', async () => {
  if (!pickGraph(ui.graphPicker.value)) return;
  state.threads = [];
  await Promise.all([graphChanged(), refreshThreads()]);
  await openThread(null);
});
ui.newChat.addEventListener('click', () => {
  openThread(null);
  ui.editor.focus();
});
ui.tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const t = ui.tokenInput.value.trim();
  if (t) localStorage.setItem(TOKEN_KEY, t);
  else localStorage.removeItem(TOKEN_KEY);
  location.reload();
});
window.addEventListener('popstate', () => {
  const id = threadFromHash();
  if (id !== state.threadId) openThread(id);
});

async function start() {
  await loadExtensions();
  await loadGraphs();
  await Promise.all([graphChanged(), refreshThreads()]);
  await openThread(threadFromHash(), { initial: true });
  document.body.dataset.ready = 'true';
}

start();
