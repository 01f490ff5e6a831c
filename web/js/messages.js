// Lines of the conversation other than a live turn: the user's messages, PalAssist prompts
// kept as muted lines, error lines.

import { h, scrollToEnd, ui } from './dom.js';
import { renderUserText } from './richtext.js';
import { state } from './state.js';

export function addUser(text) {
  const e = h('article', { class: 'msg user', 'aria-label': 'You' });
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
        const d = state.docs.find((x) => x.id === v);
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

export function addErrorLine(parent, message) {
  const e = h('div', { class: 'msg error-line', role: 'alert', text: message });
  parent.append(e);
  scrollToEnd();
  return e;
}
