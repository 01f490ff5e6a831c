// Opening a conversation: its history (GET /chat/history), its pending prompt, then its
// active run if any; the welcome screen for a new one.

import { api } from './api.js';
import { Answer } from './answer.js';
import { updateComposer } from './composer.js';
import { h, scrollToEnd, ui } from './dom.js';
import { extensionWelcome } from './extensions.js';
import { assistantName } from './graphs.js';
import { hideError, showError } from './errors.js';
import { hideNotice } from './notice.js';
import { detach } from './live.js';
import { closeMentions } from './mentions.js';
import { addPromptRecord, addUser, answerLabel } from './messages.js';
import { hidePrompt, showPrompt } from './prompt.js';
import { join } from './runs.js';
import { state } from './state.js';
import { customTitle, setThread, setTitle } from './threads.js';

function renderHistory(hist) {
  let firstUser = null;
  for (const m of hist.messages || []) {
    const md = m.metadata || {};
    if (m.role === 'user') {
      if (firstUser === null) firstUser = m.content;
      addUser(m.content, m.id);
    } else if (md.kind === 'palassist_prompt') {
      addPromptRecord(m.content, answerLabel(md.interrupt_type, md.answer));
    } else {
      const a = new Answer();
      a.setText(m.content, false, md.citations);
      a.addExtras(md);
      if (md.interrupted) a.markInterrupted(md.interrupted_reason || md.reason);
      ui.messages.append(a.root);
    }
  }
  const listed = state.threads.find((t) => t.thread_id === hist.thread_id);
  setTitle(customTitle(listed) || firstUser);
  scrollToEnd();
}

// An extension's welcome for the graph, or the graph's name and description.
function welcome() {
  const g = state.graph || {};
  ui.messages.append(
    extensionWelcome() ||
      h('div', { class: 'welcome' }, h('h2', { text: `Chat with ${assistantName()}` }), g.description ? h('p', { text: g.description }) : null),
  );
}

/** Shows a conversation (null: a new one): its history, its pending prompt, its active run. */
export async function openThread(id, opts) {
  // A reload (or the first load) keeps the error shown; a navigation clears it.
  const reloading = !!(opts && (opts.reload || opts.initial));
  if (state.live) detach(state.live);
  state.live = null;
  hidePrompt();
  if (!reloading) {
    hideError();
    hideNotice();
  }
  closeMentions();
  setThread(id);
  ui.messages.replaceChildren();
  setTitle('');
  updateComposer();
  const seq = ++state.openSeq;
  if (!id) {
    welcome();
    return;
  }
  let hist;
  try {
    hist = await api('GET', `/chat/history/${encodeURIComponent(id)}`);
  } catch (e) {
    if (seq !== state.openSeq) return;
    if (e.status === 404) {
      // Not there (yet): a new conversation under this id; the first message creates it.
      welcome();
      return;
    }
    showError(e, { context: 'This conversation could not be loaded.', retry: () => openThread(id, opts) });
    return;
  }
  if (seq !== state.openSeq) return;
  renderHistory(hist);
  if (hist.pending_interrupt) showPrompt(hist.pending_interrupt);
  const msgs = hist.messages || [];
  const known = (opts && opts.reload) || state.threads.some((t) => t.thread_id === id);
  if (!msgs.length && !hist.pending_interrupt && !known) {
    // A new conversation (or one that does not exist): nothing to join.
    welcome();
    return;
  }
  const last = msgs[msgs.length - 1];
  join(id, { historyEndsWithUser: !!last && last.role === 'user', reloads: (opts && opts.reloads) || 0 });
}

/**
 * Shows the user's messages the history has and the page does not, above the turn of
 * `live` (a joined run that was queued when the history was read: its message came later).
 */
export async function showMissingMessages(live) {
  let hist;
  try {
    hist = await api('GET', `/chat/history/${encodeURIComponent(live.threadId)}`);
  } catch (_) {
    return;
  }
  if (state.threadId !== live.threadId || !live.turn.root.isConnected) return;
  const shown = new Set(Array.from(ui.messages.querySelectorAll('[data-message-id]'), (e) => e.dataset.messageId));
  for (const m of hist.messages || []) {
    if (m.role === 'user' && m.id && !shown.has(m.id)) live.turn.root.before(addUser(m.content, m.id));
  }
}

/** Shows the open conversation `id` again from the server (after its run ended elsewhere). */
export function reloadThread(id, reloads) {
  if (state.threadId === id) openThread(id, { reload: true, reloads: reloads || 0 });
}
