// The timeline's model, from a thread's history: one step per checkpoint, oldest first,
// with the tasks that produced it (`metadata.tasks`, recorded by the engine: node, start,
// duration, attempts, LLM calls; for checkpoints written before those were recorded, the
// parent's due tasks, timed by the difference of the two checkpoints' `created_at`), its
// interrupts and errors, its run, and whether it lies on the branch that ends at the head.

/** The nodes ran to produce checkpoint `c` whose parent is `parent` (may be null). */
function tasksOf(c, parent) {
  const meta = c.metadata || {};
  if (Array.isArray(meta.tasks)) {
    return meta.tasks.map((t) => ({
      node: t.node,
      startedAt: t.started_at_ms,
      ms: t.duration_ms,
      attempts: t.attempts || 1,
      llm: Array.isArray(t.llm_calls) ? t.llm_calls : [],
      cached: !!t.cached,
      resumed: !!t.resumed,
      measured: true,
    }));
  }
  if (meta.source !== 'loop' || !parent) return [];
  const ms = Date.parse(c.created_at) - Date.parse(parent.created_at);
  return (parent.next || []).map((node) => ({
    node, startedAt: null, ms: Number.isFinite(ms) ? ms : null, attempts: 1, llm: [], cached: false, resumed: false, measured: false,
  }));
}

/** Tokens, cost and count of a list of LLM calls. */
export function llmTotals(calls) {
  return calls.reduce(
    (t, c) => ({
      calls: t.calls + 1,
      input: t.input + (c.input_tokens || 0),
      output: t.output + (c.output_tokens || 0),
      cost: t.cost + (c.cost_usd || 0),
    }),
    { calls: 0, input: 0, output: 0, cost: 0 },
  );
}

/**
 * The steps of `history` (newest first, as the API returns it), oldest first. Each step:
 * `{id, parentId, step, source, runId, createdAt, tasks, ms, llm, interrupts, errors, next,
 * onHead, forksFrom, snapshot}`.
 */
export function buildSteps(history) {
  const byId = new Map(history.map((c) => [c.checkpoint_id, c]));
  const head = history[0] || null;
  const onHead = new Set();
  for (let c = head; c; c = byId.get(c.parent_checkpoint_id)) onHead.add(c.checkpoint_id);
  const ordered = history.slice().reverse();
  return ordered.map((c, i) => {
    const parent = byId.get(c.parent_checkpoint_id) || null;
    const tasks = tasksOf(c, parent);
    const durations = tasks.map((t) => t.ms).filter((x) => typeof x === 'number');
    const meta = c.metadata || {};
    const prev = i > 0 ? ordered[i - 1] : null;
    const errors = (c.tasks || []).filter((t) => t.error).map((t) => ({ node: t.name, error: t.error }));
    return {
      id: c.checkpoint_id,
      parentId: c.parent_checkpoint_id || null,
      step: meta.step,
      source: meta.source || 'loop',
      runId: meta.run_id || null,
      turn: meta.turn,
      createdAt: c.created_at,
      tasks,
      ms: durations.length ? Math.max(...durations) : null,
      llm: llmTotals(tasks.flatMap((t) => t.llm)),
      interrupts: c.interrupts || [],
      errors,
      next: c.next || [],
      onHead: onHead.has(c.checkpoint_id),
      forksFrom: parent && prev && prev.checkpoint_id !== parent.checkpoint_id ? parent : null,
      snapshot: c,
      parent,
    };
  });
}

/** The path to step `last`, oldest first: the steps of its turn on the chain that ends at
 * `last` (a run that resumed an interrupt continues the turn of the run it resumed), back to
 * the turn's input (or fork) checkpoint. */
export function runPath(steps, last) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const chain = [];
  for (let s = last; s && s.turn === last.turn; s = byId.get(s.parentId)) {
    chain.unshift(s);
    if (s.source === 'input' || s.source === 'fork') break;
  }
  return chain;
}

/** The last step of run `runId` (the newest checkpoint it wrote). */
export function lastStepOf(steps, runId) {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i].runId === runId) return steps[i];
  return null;
}

/** A duration for people: `812 ms`, `2.4 s`. */
export function formatMs(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

/** A cost in USD for people (`$0.0031`). */
export function formatCost(usd) {
  if (!usd) return '$0';
  return usd >= 0.01 ? `$${usd.toFixed(2)}` : `$${usd.toPrecision(2)}`;
}
