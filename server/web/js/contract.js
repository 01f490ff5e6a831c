// The chat contract's shapes the page reads (DESIGN.md, "Chat contract: exact shapes"):
// - a prompt option is `{id, label}`; a button sends its `id` back as the resume value;
// - a confidence is "high" | "medium" | "low" (the 0..1 score is `confidence_score`);
// - a response may say how it was made (`answered_by`, `model`).

/** The value a prompt option sends back: its id. */
export function optionValue(o) {
  if (o === null || typeof o !== 'object') return o;
  return o.id;
}

/** How a prompt option reads: its label ("all" reads "All of these" if it has none). */
export function optionLabel(o) {
  const v = optionValue(o);
  if (o && typeof o === 'object' && o.label) return String(o.label);
  return v === 'all' ? 'All of these' : typeof v === 'string' ? v : JSON.stringify(v);
}

/** "high" | "medium" | "low" from a confidence level; null when absent or not a level. */
export function confidenceLevel(v) {
  if (typeof v !== 'string') return null;
  const s = v.toLowerCase();
  return ['high', 'medium', 'low'].includes(s) ? s : null;
}

/** A short badge for how the answer was made: "offline · extractive", a model name, or null. */
export function madeBy(r) {
  const by = r.answered_by ?? r.model ?? null;
  if (by === null || by === undefined || by === '') return null;
  if (typeof by === 'object') {
    if (by.offline || /offline|extractive/i.test(String(by.kind || by.mode || ''))) return 'offline · extractive';
    return by.model || by.name || null;
  }
  const s = String(by);
  return /offline|extractive/i.test(s) ? 'offline · extractive' : s;
}

/** "1,234 tokens · $0.0123" from `tokens_used` / `cost_usd`, or null when neither is given. */
export function usage(r) {
  const tokens = Number(r.tokens_used);
  const cost = Number(r.cost_usd);
  const hasTokens = r.tokens_used !== undefined && r.tokens_used !== null && Number.isFinite(tokens);
  const hasCost = r.cost_usd !== undefined && r.cost_usd !== null && Number.isFinite(cost);
  if (!hasTokens && !hasCost) return null;
  const t = `${(hasTokens ? tokens : 0).toLocaleString('en-US')} token${tokens === 1 ? '' : 's'}`;
  // Cents for a dollar or more; up to four decimals below (LLM calls cost fractions of a cent).
  const c = `$${hasCost ? cost.toFixed(cost < 1 ? 4 : 2).replace(/(\.\d\d\d*?)0+$/, '$1') : '0.00'}`;
  return `${t} · ${c}`;
}
