// HTTP: JSON requests with the access token, and errors as `ApiError` (status, code, detail).

import { TOKEN_KEY } from './config.js';

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

/** Request headers: `extra` plus the bearer token when one is saved. */
export function headers(extra) {
  const out = Object.assign({}, extra || {});
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}

/** The `ApiError` of a failed response (its JSON `{detail, code}` when it has one). */
export async function errorFrom(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch (_) {
    body = null;
  }
  const code = (body && body.code) || `http_${resp.status}`;
  const detail = (body && (body.detail || body.message)) || resp.statusText || 'request failed';
  return new ApiError(resp.status, code, detail);
}

/** A JSON request; resolves to the JSON answer (null for 204), rejects with an `ApiError`. */
export async function api(method, path, body) {
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'network', e.message || String(e));
  }
  if (!resp.ok) throw await errorFrom(resp);
  if (resp.status === 204) return null;
  return resp.json();
}
