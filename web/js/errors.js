// The error banner above the message box, and how an error is put into words.

import { ApiError } from './api.js';
import { ui } from './dom.js';

/** An error in words for the user. */
export function describe(err) {
  if (!(err instanceof ApiError)) return String((err && err.message) || err);
  if (err.code === 'timeout') return err.detail;
  if (err.status === 0) return 'Cannot reach the palgraph server. Is it running? Check the connection and try again.';
  if (err.status === 401) return 'This server needs an access token: paste it below.';
  if (err.status === 409 && err.code === 'thread_busy') {
    return 'This conversation is busy: an answer is already being written (409 thread_busy). It is shown below; wait for it or press Stop, then send again.';
  }
  return `${err.detail} (${err.status}${err.code ? ` ${err.code}` : ''})`;
}

/** Shows `err` (an error or a message) in the banner; a 401 also asks for a token. */
export function showError(err) {
  const msg = typeof err === 'string' ? err : describe(err);
  ui.errorText.textContent = msg;
  ui.tokenForm.hidden = !(err instanceof ApiError && err.status === 401);
  ui.error.hidden = false;
}

export function hideError() {
  ui.error.hidden = true;
  ui.errorText.textContent = '';
}
