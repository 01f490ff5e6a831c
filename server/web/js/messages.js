// Lines of the conversation other than a live turn: the user's messages, PalAssist prompts
// kept as muted lines, error lines.

import { h, scrollToEnd, ui } from './dom.js';
import { mentionables } from './extensions.js';
import { hasPanel } from './graphs.js';

// A user's text with "@Title" of what can be mentioned (a document) shown as mention chips.
function renderUserText(target, text) {
  const titles = mentionables(hasPanel)
    .filter((d) => !d.kind)
    .map((d) => d.title)
    .sort((a, b) => b.length - a.length);
  let rest = String(text);
  while (rest) {
    let best = null;
    for (const t of titles) {
      const i = rest.indexOf(`@${t}`);
      if (i >= 0 && (best === null || i < best.i)) best = { i, t };
    }
    if (!best) {
      target.append(rest);
      break;
    }
    if (best.i > 0) target.append(rest.slice(0, best.i));
    target.append(h('span', { class: 'mention', text: `@${best.t}` }));
    rest = rest.slice(best.i + best.t.length + 1);
  }
}

/** A message of the user (`id`: its id in the history, when known). */
export function addUser(text, id) {
  const e = h('article', { class: 'msg user', 'aria-label': 'You', dataset: id ? { messageId: id } : null });
  renderUserText(e, text);
  ui.messages.append(e);
  scrollToEnd();
  return e;
}

/** How an answer to a prompt reads: document titles for ids, "All of these" for "all". */
export function answerLabel(type, value) {
  if (value === null || value === undefined) return null;
  if (type === 'doc_choice') {
    if (value === 'all') return 'All of these';
    const values = Array.isArray(value) ? value : [value];
    return values
      .map((v) => {
        const d = mentionables(hasPanel).find((x) => !x.kind && x.id === v);
        return d ? d.title : String(v);
      })
      .join(', ');
  }
  if (type === 'action_choice' && typeof value === 'string') {
    return value.charAt(0).toUpperCase() + value.slice(1);
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A PalAssist prompt kept in the conversation as a muted line (answer null: cancelled). */
export function addPromptRecord(message, answer) {
  const e = h(
    'div',
    { class: 'msg system prompt-record', role: 'note' },
    h('span', { text: `PalAssist asked: ${message}` }),
    ' — ',
    answer === null
      ? h('span', { class: 'prompt-answer', text: 'Cancelled' })
      : h('span', null, 'answered: ', h('span', { class: 'prompt-answer', text: answer })),
  );
  ui.messages.append(e);
  scrollToEnd();
  return e;
}

/** An error in the conversation; with `retry`, a Retry button that runs it. */
export function addErrorLine(parent, message, retry) {
  const e = h('div', { class: 'msg error-line', role: 'alert' }, h('p', { text: message }));
  if (retry) e.append(h('button', { type: 'button', class: 'button small', text: 'Retry', onclick: retry }));
  parent.append(e);
  scrollToEnd();
  return e;
}
