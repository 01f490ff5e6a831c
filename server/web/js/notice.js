// The notice banner above the message box: something happened that is not an error (another
// tab took the conversation over).

import { ui } from './dom.js';

export function showNotice(text) {
  ui.noticeText.textContent = text;
  ui.notice.hidden = false;
}

export function hideNotice() {
  ui.notice.hidden = true;
  ui.noticeText.textContent = '';
}

ui.noticeDismiss.addEventListener('click', hideNotice);
