// What each chat event does to the followed run and the page: status, token, the terminal
// events (response, interrupt, error, cancelled) and the snapshot of a joined run.

import { assistantName } from './graphs.js';
import { api } from './api.js';
import { Answer } from './answer.js';
import { updateComposer } from './composer.js';
import { reloadThread, showMissingMessages } from './conversation.js';
import { scrollToEnd, ui } from './dom.js';
import { responded } from './extensions.js';
import { end } from './live.js';
import { readable } from './errors.js';
import { addErrorLine } from './messages.js';
import { showNotice } from './notice.js';
import { showPrompt } from './prompt.js';
import { state } from './state.js';

/** One event `{id, data}` of the stream of `live`. */
export function onEvent(live, ev) {
  if (live.detached || live.done) return;
  if (ev.id) live.lastEventId = ev.id;
  live.healthy();
  const d = ev.data || {};
  switch (d.type) {
    case 'snapshot':
      applySnapshot(live, d);
      break;
    case 'status':
      if (live.catchUp) {
        // The joined run has started: its user message is in the history now.
        live.catchUp = false;
        showMissingMessages(live);
      }
      live.turn.reasoning.push(d);
      break;
    case 'token':
      live.turn.token(d.message_id, d.content || '', d.node, d.reset === true);
      break;
    case 'response':
      finishResponse(live, d);
      responded(d);
      break;
    case 'interrupt':
      finishInterrupt(live, d);
      break;
    case 'error':
      fail(live, `${assistantName()} could not finish this answer. ${readable(d.detail || d.message || 'The run failed.')}`, true);
      break;
    case 'cancelled':
      finishCancelled(live, d.reason);
      break;
    default:
      break;
  }
}

function applySnapshot(live, s) {
  if (s.status === 'running' || s.status === 'pending') {
    live.probing = false;
    if (!live.historyEndsWithUser && live.kind === 'join') {
      // The history was read before this run's user message was written (the run was
      // queued, e.g. just sent by another tab): show it once the run has started.
      if ((s.statuses || []).length) showMissingMessages(live);
      else live.catchUp = true;
    }
    if (s.run_id) live.runId = s.run_id;
    live.turn.reasoning.restore(s.statuses || []);
    live.turn.partial(s.message_id, s.partial_text);
    if (state.live === live) updateComposer();
    return;
  }
  // Nothing runs any more.
  live.done = true;
  const wasFollowed = !live.probing;
  live.turn.remove();
  end(live);
  if (s.status === 'interrupted' && s.pending_interrupt) {
    if (!state.prompt || state.prompt.interrupt_id !== s.pending_interrupt.interrupt_id) {
      if (wasFollowed) reloadThread(live.threadId, live.reloads + 1);
      else showPrompt(s.pending_interrupt);
    }
  } else if (s.status === 'error') {
    addErrorLine(ui.messages, `The last answer failed. ${readable(s.error || 'Unknown error.')}`);
  } else if (live.historyEndsWithUser && !(s.result && s.result.response) && s.run_id) {
    // The last turn left no answer: stopped before any text (the history keeps no trace
    // of that; its run does).
    markStoppedWithoutText(live.threadId, s.run_id);
  } else if ((wasFollowed || live.historyEndsWithUser) && live.reloads < 2) {
    // It ended while we were away: the history holds its result (or its stop).
    reloadThread(live.threadId, live.reloads + 1);
  }
}

async function markStoppedWithoutText(threadId, runId) {
  let run;
  try {
    run = await api('GET', `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}`);
  } catch (_) {
    return;
  }
  if (state.threadId !== threadId || state.live || !run || run.status !== 'interrupted') return;
  const last = ui.messages.lastElementChild;
  if (!last || !last.classList.contains('user')) return;
  const a = new Answer();
  a.markInterrupted();
  ui.messages.append(a.root);
  scrollToEnd();
}

function finishResponse(live, d) {
  live.done = true;
  const t = live.turn;
  if (live.kind === 'cancel' || (d.cancelled && live.kind !== 'chat')) {
    // The answer to a prompt's Cancel is not shown: the muted line says it all.
    t.dropAnswer();
  } else {
    t.ensureAnswer().finish(d);
  }
  t.reasoning.whenDrained(() => t.reasoning.clear());
  end(live);
}

function finishInterrupt(live, p) {
  live.done = true;
  const t = live.turn;
  if (!t.text) t.dropAnswer();
  end(live);
  t.reasoning.whenDrained(() => {
    t.reasoning.clear();
    if (state.threadId === live.threadId && !state.live) showPrompt(p);
  });
}

function finishCancelled(live, reason) {
  live.done = true;
  live.turn.interrupted(reason);
  end(live);
  if (reason === 'superseded') {
    // Another tab or client sent a message on this conversation: say so, and show the
    // conversation as it is now (the new message and its answer, joined live).
    showNotice('Another tab or client sent a new message in this conversation, so the answer you were watching stopped. The new message and its answer are shown now.');
    reloadThread(live.threadId);
  }
}

/**
 * The run of `live` failed (or its stream cannot go on): a message in the turn, with a
 * Retry button when `retryable` and the run knows how to start again.
 */
export function fail(live, message, retryable) {
  live.done = true;
  live.turn.reasoning.clear();
  if (live.turn.answer) live.turn.answer.markInterrupted('failed');
  const retry = retryable && live.resend ? () => live.resend() : null;
  addErrorLine(live.turn.root, message, retry);
  end(live);
}
