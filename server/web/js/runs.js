// Starting runs: a message (POST /chat), an answer to a prompt (POST /chat/resume), and
// joining the thread's active run (GET /chat/stream).

import { updateComposer } from './composer.js';
import { reloadThread } from './conversation.js';
import { ui } from './dom.js';
import { editor } from './editor.js';
import { hideError, showError } from './errors.js';
import { Live, detach, end } from './live.js';
import { closeMentions } from './mentions.js';
import { addPromptRecord, addUser } from './messages.js';
import { hideNotice } from './notice.js';
import { hidePrompt, showPrompt } from './prompt.js';
import { hasPanel } from './graphs.js';
import { state, uuid } from './state.js';
import { drive, jsonPost, reconnectRequest } from './stream.js';
import { setThread, setTitle } from './threads.js';
import { Turn } from './turn.js';

/** Sends what the message box holds: a new turn, or the answer to an open text prompt. */
export function send() {
  closeMentions();
  const draft = editor.read();
  const p = state.prompt;
  if (p && p.interrupt_type === 'text_input') {
    // The answer to the open prompt: a resume, never a new turn.
    if (!draft.text.trim()) return;
    editor.clear();
    answerPrompt({ type: 'text_input', value: draft.text.trim() }, draft.text.trim());
    return;
  }
  if (!draft.text.trim()) return;
  editor.clear();
  submit(draft);
}

// Starts a turn with `draft` (what `editor.read()` returned): the user's message, then the
// run's statuses and answer. A start that fails gives the draft back.
async function submit(draft) {
  const p = state.prompt;
  let strategy = null;
  const current = state.live;
  if (current) {
    if (current.active) {
      // The server's `interrupt` strategy: the streaming answer stops and is kept.
      strategy = 'interrupt';
      detach(current);
      current.turn.interrupted();
    } else {
      detach(current);
      current.turn.remove();
    }
  }
  if (p) {
    // The server abandons a pending prompt when a new message comes: keep it as a line.
    hidePrompt();
    addPromptRecord(p.message, null);
  }
  const fresh = !state.threadId;
  if (fresh) setThread(uuid());
  const threadId = state.threadId;
  hideError();
  hideNotice();
  for (const w of ui.messages.querySelectorAll('.welcome')) w.remove();
  const userEl = addUser(draft.text);
  if (ui.messages.querySelectorAll('.msg.user').length === 1) setTitle(draft.text);
  const turn = new Turn();
  const live = new Live(threadId, turn, 'chat');
  // A failed run can be sent again: the thread kept nothing of it.
  live.resend = () => {
    if (state.threadId !== threadId || (state.live && state.live.active)) return;
    userEl.remove();
    turn.remove();
    submit(draft);
  };
  state.live = live;
  updateComposer();
  const body = {
    message: draft.text,
    thread_id: threadId,
    client_turn_id: uuid(),
    multitask_strategy: strategy,
    on_disconnect: 'continue',
  };
  // A new conversation is with the graph picked on the page; an old one keeps its own.
  if (fresh && state.graph) body.graph_id = state.graph.graph_id;
  if (hasPanel('documents')) {
    // PalAssist's own fields (see DESIGN.md, "Chat contract: exact shapes").
    Object.assign(body, {
      tiptap_json: draft.doc,
      tagged_doc_ids: draft.mentions.filter((m) => !m.kind).map((m) => m.id),
      tagged_set_ids: draft.mentions.filter((m) => m.kind === 'set').map((m) => m.id),
      action: draft.action,
      enable_web_search: draft.webSearch,
    });
  }
  await drive(live, jsonPost('/chat', body), (err) => {
    userEl.remove();
    turn.remove();
    if (!ui.messages.querySelector('.msg.user')) setTitle('');
    live.done = true;
    end(live);
    if (editor.isEmpty()) editor.restore(draft);
    const retry = err.status === 409 || err.status === 401 ? null : () => send();
    showError(err, { retry, context: err.status === 409 || err.status === 0 ? '' : 'Your message was not sent.' });
    // Show what is going on in the conversation: its history and the running answer.
    if (err.status === 409) reloadThread(threadId);
  });
}

/** Answers the open prompt with `value` ({type, value}); `label` is how the answer reads. */
export function answerPrompt(value, label) {
  const p = state.prompt;
  if (!p || (state.live && state.live.active)) return;
  if (state.live) {
    // A join still probing the thread: this answer supersedes it.
    state.live.turn.remove();
    detach(state.live);
  }
  hidePrompt();
  hideError();
  const cancel = value.type === 'cancel';
  const record = addPromptRecord(p.message, cancel ? null : label);
  const turn = new Turn();
  const live = new Live(state.threadId, turn, cancel ? 'cancel' : 'resume');
  state.live = live;
  updateComposer();
  drive(live, jsonPost('/chat/resume', { thread_id: state.threadId, resume_value: value, on_disconnect: 'continue' }), (err) => {
    turn.remove();
    record.remove();
    live.done = true;
    end(live);
    const again = err.status === 400 || err.status === 409;
    showError(err, { retry: again ? null : () => answerPrompt(value, label), context: 'Your answer was not sent.' });
    if (again) reloadThread(live.threadId);
    else showPrompt(p);
  });
}

/** Joins the thread's active run, if any (GET /chat/stream: a snapshot, then live events). */
export function join(threadId, opts) {
  const turn = new Turn();
  const live = new Live(threadId, turn, 'join');
  live.historyEndsWithUser = !!(opts && opts.historyEndsWithUser);
  live.reloads = (opts && opts.reloads) || 0; // history reloads in a row, bounded
  if (state.live) detach(state.live);
  state.live = live;
  drive(live, reconnectRequest(live), (err) => {
    turn.remove();
    live.done = true;
    end(live);
    if (err.status !== 404) showError(err);
  });
}
