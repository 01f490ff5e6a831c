// The PalAssist prompt above the message box (an `interrupt` event): its message, its
// options as buttons, Cancel. A `text_input` prompt is answered in the message box.

import { updateComposer } from './composer.js';
import { h, scrollToEnd, ui } from './dom.js';
import { answerPrompt } from './runs.js';
import { state } from './state.js';

export function showPrompt(p) {
  state.prompt = p;
  ui.promptMessage.textContent = p.message || '';
  ui.prompt.dataset.type = p.interrupt_type || '';
  ui.promptOptions.replaceChildren();
  const textInput = p.interrupt_type === 'text_input';
  if (!textInput) {
    for (const o of p.options || []) {
      const label = o.label || (o.value === 'all' ? 'All of these' : String(o.value));
      ui.promptOptions.append(
        h('button', {
          type: 'button',
          class: 'button',
          dataset: { value: typeof o.value === 'string' ? o.value : JSON.stringify(o.value) },
          onclick: () => answerPrompt({ type: p.interrupt_type, value: o.value }, label),
          text: label,
        }),
      );
    }
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
