// Time travel from any checkpoint: "Run again from here" (a new run from the checkpoint:
// POST /threads/{id}/runs with `checkpoint_id` and no input, then waited for with
// GET /threads/{id}/runs/{run_id}/join) and "Edit state here" (POST /threads/{id}/state with
// the update, the checkpoint and `as_node`). Both leave the old history as it was: the new
// checkpoints start a branch.

import { api } from './api.js';

const enc = encodeURIComponent;

/** Starts a run of `graphId` on thread `threadId` from checkpoint `checkpointId` and waits
 * for it to end; resolves to the run (its id and final status). */
export async function runFrom(threadId, graphId, checkpointId) {
  const run = await api('POST', `/threads/${enc(threadId)}/runs`, {
    assistant_id: graphId,
    input: null,
    checkpoint_id: checkpointId,
  });
  await api('GET', `/threads/${enc(threadId)}/runs/${enc(run.run_id)}/join`);
  return api('GET', `/threads/${enc(threadId)}/runs/${enc(run.run_id)}`);
}

/**
 * Parses the editor's text as a JSON object: `{values}` or `{error}` (what is wrong, said
 * for people).
 */
export function parseUpdate(text) {
  let values;
  try {
    values = JSON.parse(text);
  } catch (e) {
    return { error: `That is not valid JSON: ${e.message}` };
  }
  if (!values || typeof values !== 'object' || Array.isArray(values)) {
    return { error: 'The update must be a JSON object of fields and their new values.' };
  }
  return { values };
}

/** Applies `values` at checkpoint `checkpointId` as if `asNode` (may be empty) wrote them;
 * resolves to the new checkpoint's id. */
export async function editState(threadId, checkpointId, values, asNode) {
  const body = { values, checkpoint_id: checkpointId };
  if (asNode) body.as_node = asNode;
  const r = await api('POST', `/threads/${enc(threadId)}/state`, body);
  return r && r.checkpoint && r.checkpoint.checkpoint_id;
}

/** What the editor starts with: the checkpoint's plain fields (neither lists nor objects, so
 * sending them back unchanged adds nothing through a list's reducer). */
export function editableFields(values) {
  const out = {};
  for (const [k, v] of Object.entries(values || {})) {
    if (v === null || typeof v !== 'object') out[k] = v;
  }
  return out;
}
