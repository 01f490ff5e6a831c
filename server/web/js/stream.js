// Following a run's event stream: the first request, then reconnects with backoff and
// `Last-Event-ID` when the stream drops, until a terminal event.

import { ApiError, errorFrom, headers } from './api.js';
import { BACKOFF_MAX_MS, IDLE_TIMEOUT_MS } from './config.js';
import { describe } from './errors.js';
import { onEvent, fail } from './events.js';
import { readEvents, watchdog } from './sse.js';
import { sendCancel } from './stop.js';
import { refreshThreads } from './threads.js';

/** A request opener: POST `body` as JSON, asking for an event stream. */
export function jsonPost(path, body) {
  return (signal) =>
    fetch(path, {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify(body),
      signal,
    });
}

/** A request opener: join the thread's run (`GET /chat/stream`), from `Last-Event-ID` if known. */
export function reconnectRequest(live) {
  return (signal) =>
    fetch(`/chat/stream/${encodeURIComponent(live.threadId)}`, {
      headers: headers(Object.assign({ Accept: 'text/event-stream' }, live.lastEventId ? { 'Last-Event-ID': live.lastEventId } : {})),
      signal,
    });
}

// Opens one stream of `live` (the first request or a reconnect) and reads it to its end.
async function connect(live, open) {
  const ctrl = new AbortController();
  live.ctrl = ctrl;
  const dog = watchdog(IDLE_TIMEOUT_MS, () => ctrl.abort('timeout'));
  let opened = false;
  try {
    const resp = await open(ctrl.signal);
    if (!resp.ok) {
      dog.stop();
      return { kind: 'http', error: await errorFrom(resp), opened };
    }
    opened = true;
    live.connected = true;
    dog.touch();
    const run = resp.headers.get('x-run-id');
    if (run) live.runId = run;
    if (live.stopRequested && !live.cancelSent) sendCancel(live);
    if (live.kind === 'chat') refreshThreads(); // a new conversation shows up at once
    await readEvents(resp, (ev) => onEvent(live, ev), () => dog.touch());
    dog.stop();
    return { kind: 'ended', opened };
  } catch (e) {
    dog.stop();
    if (ctrl.signal.aborted) return { kind: ctrl.signal.reason === 'timeout' ? 'timeout' : 'aborted', opened };
    return { kind: 'network', error: e, opened };
  }
}

/**
 * Follows `live` from its first request to a terminal event, reconnecting when the stream
 * drops. `onStartFailed(err)` handles a first request that never got a stream.
 */
export async function drive(live, first, onStartFailed) {
  let r = await connect(live, first);
  let everOpened = r.opened;
  for (;;) {
    if (live.done || live.detached || r.kind === 'aborted') return;
    if (!everOpened) {
      // The first request got no stream: an error, not a reconnect.
      const err =
        r.kind === 'http'
          ? r.error
          : r.kind === 'timeout'
            ? new ApiError(0, 'timeout', `No response from the server for ${Math.round(IDLE_TIMEOUT_MS / 1000)} s. Try again.`)
            : new ApiError(0, 'network', String((r.error && r.error.message) || r.error));
      onStartFailed(err);
      return;
    }
    if (r.kind === 'http' && r.error.status < 500 && r.error.status !== 0) {
      fail(live, describe(r.error));
      return;
    }
    const why =
      r.kind === 'timeout'
        ? `No event from the server for ${Math.round(IDLE_TIMEOUT_MS / 1000)} s.`
        : r.kind === 'network'
          ? 'Connection lost.'
          : r.kind === 'http'
            ? `The server answered ${r.error.status}.`
            : 'The stream ended early.';
    await backoff(live, why);
    if (live.done || live.detached) return;
    r = await connect(live, reconnectRequest(live));
    everOpened = everOpened || r.opened;
  }
}

// Waits the current backoff delay (1 s doubling to 30 s), showing why and when.
function backoff(live, why) {
  const delay = live.backoff;
  live.backoff = Math.min(live.backoff * 2, BACKOFF_MAX_MS);
  return new Promise((resolve) => {
    const until = Date.now() + delay;
    const done = () => {
      clearInterval(live.retry);
      live.retry = null;
      resolve();
    };
    const paint = () => {
      if (live.done || live.detached) return done();
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      live.turn.connection(`${why} Reconnecting in ${left} s…`, done);
      if (Date.now() >= until) done();
    };
    live.retry = setInterval(paint, 250);
    paint();
  });
}
