// The PalAssist prompt above the message box (an `interrupt` event): its message, its
// options `[{id, label}]` (documents as pills, "All of these" set apart; a button resumes
// with its option's `id`), Cancel. A `text_input` prompt (options null) is answered in the
// message box.

import { updateComposer } from './composer.js';
import { optionLabel, optionValue } from './contract.js';
import { h, scrollToEnd, ui } from './dom.js';
import { answerPrompt } from './runs.js';
import { state } from './state.js';

function optionButton(p, o) {
  const id = optionValue(o);
  const label = optionLabel(o);
  const all = id === 'all';
  const doc = p.interrupt_type === 'doc_choice' && !all;
  return h('button', {
    type: 'button',
    class: all ? 'option-all' : `option-pill${doc ? ' doc' : ''}`,
    dataset: { optionId: typeof id === 'string' ? id : JSON.stringify(id) },
    onclick: () => answerPrompt({ type: p.interrupt_type, value: id }, label),
    text: label,
  });
}

export function showPrompt(p) {
  state.prompt = p;
  ui.promptMessage.textContent = p.message || '';
  ui.prompt.dataset.type = p.interrupt_type || '';
  ui.promptOptions.replaceChildren();
  const textInput = p.interrupt_type === 'text_input';
  if (!textInput) {
    const options = p.options || [];
    const picks = options.filter((o) => optionValue(o) !== 'all');
    const all = options.filter((o) => optionValue(o) === 'all');
    for (const o of picks) ui.promptOptions.append(optionButton(p, o));
    if (all.length && picks.length) ui.promptOptions.append(h('span', { class: 'option-sep', 'aria-hidden': 'true', text: 'or' }));
    for (const o of all) ui.promptOptions.append(optionButton(p, o));
  }
  ui.promptHint.hidden = !textInput;
  ui.prompt.hidden = false;
  updateComposer();
  if (textInput) ui.editor.focus();
  scrollToEnd();
}

export function hidePrompt() {
  state.prompt = null;
  ui.prompt.hidden = true;
  ui.promptOptions.replaceChildren();
  updateComposer();
}
