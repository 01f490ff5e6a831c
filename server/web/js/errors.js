// The error banner above the message box (with Retry when the failed step can be retried),
// and errors in words: the server's `detail`, never a raw parser message.

import { ApiError } from './api.js';
import { ui } from './dom.js';

let retryAction = null;

/** A server or parser message made readable: no "at line 1 column 92", no backticks. */
export function readable(message) {
  let d = String(message || '').trim();
  d = d.replace(/\s+at line \d+ column \d+/g, '');
  d = d.replace(/^(invalid request body|malformed JSON|Failed to deserialize[^:]*):\s*/i, '');
  d = d
    .replace(/missing field `([^`]+)`/g, 'the field “$1” is missing')
    .replace(/unknown field `([^`]+)`(, expected [^.;]+)?/g, 'the field “$1” is not expected')
    .replace(/unknown variant `([^`]+)`, expected ([^.;]+)/g, '“$1” is not one of $2')
    .replace(/invalid type: ([^,]+), expected ([^.;]+)/g, 'a value has the wrong type ($1 where $2 was expected)')
    .replace(/invalid value: ([^,]+), expected ([^.;]+)/g, 'a value is not valid ($1 where $2 was expected)')
    .replace(/`([^`]*)`/g, '“$1”');
  if (!d) return 'Something went wrong.';
  d = d.charAt(0).toUpperCase() + d.slice(1);
  return /[.!?”]$/.test(d) ? d : `${d}.`;
}

/** An error in words for the user. */
export function describe(err) {
  if (!(err instanceof ApiError)) return readable((err && err.message) || err);
  if (err.code === 'timeout') return err.detail;
  if (err.status === 0) return 'Cannot reach the palgraph server. Is it running? Check the connection and try again.';
  if (err.status === 401) return 'This server needs an access token: paste it below.';
  if (err.status === 409 && err.code === 'thread_busy') {
    return 'This conversation is busy: an answer is already being written (409 thread_busy). It is shown below; wait for it or press Stop, then send again.';
  }
  if (err.status >= 500) return `The server had a problem (error ${err.status}). ${readable(err.detail)}`;
  return `${readable(err.detail)} (error ${err.status})`;
}

/**
 * Shows `err` (an error or a message) in the banner; a 401 also asks for a token.
 * `retry`: what the Retry button does (no button without it); `context`: what failed.
 */
export function showError(err, { retry, context } = {}) {
  const msg = typeof err === 'string' ? err : describe(err);
  ui.errorText.textContent = context ? `${context} ${msg}` : msg;
  const unauthorized = err instanceof ApiError && err.status === 401;
  ui.tokenForm.hidden = !unauthorized;
  retryAction = retry && !unauthorized ? retry : null;
  ui.errorRetry.hidden = !retryAction;
  ui.error.hidden = false;
}

export function hideError() {
  ui.error.hidden = true;
  ui.errorText.textContent = '';
  retryAction = null;
  ui.errorRetry.hidden = true;
}

ui.errorRetry.addEventListener('click', () => {
  const f = retryAction;
  hideError();
  if (f) f();
});
ui.errorDismiss.addEventListener('click', hideError);
