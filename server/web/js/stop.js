// Stopping the followed run: POST /threads/{thread}/cancel, then wait for its `cancelled`.

import { api } from './api.js';
import { updateComposer } from './composer.js';
import { describe, showError } from './errors.js';
import { detach } from './live.js';
import { state } from './state.js';
import { refreshThreads } from './threads.js';

/** Asks the server to stop the run of `live`. */
export async function sendCancel(live) {
  live.cancelSent = true;
  try {
    await api('POST', `/threads/${encodeURIComponent(live.threadId)}/cancel`);
  } catch (e) {
    if (live.done || live.detached) return;
    showError(`Could not stop the run: ${describe(e)} It may still be running.`);
    detach(live);
    live.turn.interrupted();
    updateComposer();
    return;
  }
  // The stream reports the stop (`cancelled`); if it does not in time, stop following.
  setTimeout(() => {
    if (live.done || live.detached) return;
    detach(live);
    live.turn.interrupted();
    updateComposer();
    refreshThreads();
  }, 5000);
}

/** The Stop button. */
export function stop() {
  const live = state.live;
  if (!live || !live.active || live.stopRequested) return;
  live.stopRequested = true;
  updateComposer();
  // Before the stream has opened the run may not exist yet: the cancel goes out then.
  if (live.connected) sendCancel(live);
}
