// Settings of the page: timings, storage keys, the welcome examples.

function positive(v) {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Each PalReasoning status line stays on screen at least this long (queued, never dropped). */
export const MIN_STATUS_MS = 300;
/** A dropped stream reconnects after 1 s, doubling to 30 s. */
export const BACKOFF_START_MS = 1000;
export const BACKOFF_MAX_MS = 30000;
/** localStorage key of the access token (sent as `Authorization: Bearer <token>`). */
export const TOKEN_KEY = 'palgraph_token';
/** No byte for this long counts as a dropped stream (localStorage `palgraph_idle_timeout_ms`). */
export const IDLE_TIMEOUT_MS = positive(localStorage.getItem('palgraph_idle_timeout_ms')) || 30000;
