// The run this page follows (`state.live`), and the two ways of letting go of it.

import { BACKOFF_START_MS } from './config.js';
import { updateComposer } from './composer.js';
import { state } from './state.js';
import { refreshThreads } from './threads.js';

/** A followed run. kind: chat | resume | cancel (a prompt's cancel) | join. */
export class Live {
  constructor(threadId, turn, kind) {
    this.threadId = threadId;
    this.turn = turn;
    this.kind = kind;
    this.runId = null;
    this.lastEventId = null;
    this.ctrl = null;
    this.done = false;
    this.detached = false;
    this.probing = kind === 'join'; // not known to be running until its snapshot says so
    this.connected = false;
    this.backoff = BACKOFF_START_MS;
    this.retry = null;
    this.stopRequested = false;
    this.cancelSent = false;
    this.reloads = 0;
    this.historyEndsWithUser = false;
    this.catchUp = false; // a joined run that was queued: show its user message once it starts
    this.resend = null; // starts the same turn again (a failed run of a message)
  }

  get active() {
    return !this.done && !this.detached && !this.probing;
  }

  /** An event arrived: the connection is healthy (backoff from the start, no note). */
  healthy() {
    this.backoff = BACKOFF_START_MS;
    this.turn.connection(null);
  }
}

/** The page stops following `live` (the run goes on on the server). */
export function detach(live) {
  live.detached = true;
  if (live.ctrl) live.ctrl.abort('detach');
  clearInterval(live.retry);
  live.turn.connection(null);
  if (state.live === live) state.live = null;
}

/** `live` reached its end (a terminal event, or a start that failed). */
export function end(live) {
  clearInterval(live.retry);
  live.turn.connection(null);
  if (state.live === live) state.live = null;
  updateComposer();
  refreshThreads();
}
