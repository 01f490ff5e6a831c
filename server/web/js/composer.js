// The composer follows the page: Stop while a run streams; while a prompt waits, a hint
// (and "Answer" for a text prompt); prompt buttons disabled while a run goes on.

import { ui } from './dom.js';
import { assistantName, defaultPlaceholder } from './graphs.js';
import { state } from './state.js';

const HINTS = {
  text_input: (who) => `${who} is waiting for your answer: what you send now answers its question.`,
  choice: (who) => `${who} is waiting for your choice above. A new message instead cancels the question.`,
};

export function updateComposer() {
  const live = state.live;
  const running = !!(live && live.active);
  ui.stop.hidden = !running;
  ui.stop.disabled = running && live.stopRequested;
  ui.stop.textContent = running && live.stopRequested ? 'Stopping…' : 'Stop';
  const p = state.prompt;
  const textInput = !!(p && p.interrupt_type === 'text_input');
  ui.send.textContent = textInput ? 'Answer' : 'Send';
  ui.editor.dataset.placeholder = textInput
    ? `Type your answer to ${assistantName()}…`
    : p
      ? 'Pick an option above, or type a new message…'
      : defaultPlaceholder();
  ui.editor.setAttribute('aria-label', textInput ? `Your answer to ${assistantName()}` : 'Message');
  const hint = p && !running ? HINTS[textInput ? 'text_input' : 'choice'](assistantName()) : '';
  ui.composerHint.textContent = hint;
  ui.composerHint.hidden = !hint;
  for (const b of ui.promptOptions.querySelectorAll('button')) b.disabled = running;
  ui.promptCancel.disabled = running;
}
