// The composer's controls follow the page: Stop while a run streams, "Answer" while a text
// prompt waits, prompt buttons disabled while a run goes on.

import { DEFAULT_PLACEHOLDER, ui } from './dom.js';
import { state } from './state.js';

export function updateComposer() {
  const live = state.live;
  const running = !!(live && live.active);
  ui.stop.hidden = !running;
  ui.stop.disabled = running && live.stopRequested;
  ui.stop.textContent = running && live.stopRequested ? 'Stopping…' : 'Stop';
  const textInput = !!(state.prompt && state.prompt.interrupt_type === 'text_input');
  ui.send.textContent = textInput ? 'Answer' : 'Send';
  ui.editor.dataset.placeholder = textInput ? 'Type your answer to PalAssist…' : DEFAULT_PLACEHOLDER;
  ui.editor.setAttribute('aria-label', textInput ? 'Your answer to PalAssist' : 'Message');
  for (const b of ui.promptOptions.querySelectorAll('button')) b.disabled = running;
  ui.promptCancel.disabled = running;
}
