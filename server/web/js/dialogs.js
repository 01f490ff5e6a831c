// A confirmation dialog ("Delete …?"): resolves true when confirmed. Escape or Cancel: false.

import { ui } from './dom.js';

/** Asks `text` under `title`; `ok` labels the confirming button. */
export function confirmDialog({ title, text, ok }) {
  const before = document.activeElement;
  ui.confirmTitle.textContent = title;
  ui.confirmText.textContent = text;
  ui.confirmOk.textContent = ok || 'Delete';
  ui.confirm.returnValue = '';
  ui.confirm.showModal();
  return new Promise((resolve) => {
    ui.confirm.addEventListener(
      'close',
      () => {
        if (before && before.isConnected) before.focus();
        resolve(ui.confirm.returnValue === 'ok');
      },
      { once: true },
    );
  });
}
