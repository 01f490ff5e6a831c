// Values as the inspector shows them: JSON with big parts collapsible (`<details>`), and the
// difference between a checkpoint's values and its parent's, field by field.

import { h } from './el.js';

/** Values longer than this (as JSON) are shown collapsed. */
const BIG = 160;

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** JSON text of `v`, pretty-printed. */
export function pretty(v) {
  return JSON.stringify(v === undefined ? null : v, null, 2);
}

/** A short preview of `v` (its first characters, or its size). */
function preview(v) {
  if (Array.isArray(v)) return `[${v.length} item${v.length === 1 ? '' : 's'}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).length} field${Object.keys(v).length === 1 ? '' : 's'}}`;
  const t = JSON.stringify(v);
  return t.length > 60 ? `${t.slice(0, 60)}…` : t;
}

/** `v` as JSON: inline when small, else collapsed behind its preview. */
export function jsonView(v, open) {
  const text = pretty(v);
  if (text.length <= BIG) return h('pre', { class: 'json' }, text);
  return h('details', { class: 'json-big', open: !!open }, h('summary', { text: preview(v) }), h('pre', { class: 'json' }, text));
}

/**
 * What changed from `before` to `after` (objects of field values): a list of
 * `{field, kind: 'added'|'removed'|'changed'|'appended', before, after}`; a list that grew
 * at its end is `appended` with only the new items in `after`.
 */
export function diffValues(before, after) {
  const b = before || {};
  const a = after || {};
  const out = [];
  for (const field of new Set([...Object.keys(b), ...Object.keys(a)])) {
    const had = Object.prototype.hasOwnProperty.call(b, field);
    const has = Object.prototype.hasOwnProperty.call(a, field);
    if (had && has && same(b[field], a[field])) continue;
    if (!had) out.push({ field, kind: 'added', before: undefined, after: a[field] });
    else if (!has) out.push({ field, kind: 'removed', before: b[field], after: undefined });
    else if (Array.isArray(b[field]) && Array.isArray(a[field]) && a[field].length > b[field].length
      && same(b[field], a[field].slice(0, b[field].length))) {
      out.push({ field, kind: 'appended', before: b[field], after: a[field].slice(b[field].length) });
    } else out.push({ field, kind: 'changed', before: b[field], after: a[field] });
  }
  return out;
}

/** The diff as a list (empty: a line that says nothing changed). */
export function diffView(changes) {
  if (!changes.length) return h('p', { class: 'muted small diff-none', text: 'No field changed.' });
  return h('ul', { class: 'diff' }, changes.map((c) => h('li', { class: `diff-row ${c.kind}`, dataset: { field: c.field, kind: c.kind } },
    h('div', { class: 'diff-head' }, h('code', { text: c.field }), ' ', h('span', { class: 'badge', text: kindText(c) })),
    c.kind === 'changed' ? h('div', { class: 'diff-pair' },
      h('div', { class: 'diff-before' }, h('span', { class: 'muted small', text: 'before' }), jsonView(c.before)),
      h('div', { class: 'diff-after' }, h('span', { class: 'muted small', text: 'after' }), jsonView(c.after))) : null,
    c.kind === 'added' || c.kind === 'appended' ? h('div', { class: 'diff-after' }, jsonView(c.after)) : null,
    c.kind === 'removed' ? h('div', { class: 'diff-before' }, jsonView(c.before)) : null)));
}

function kindText(c) {
  if (c.kind === 'appended') return `+${c.after.length} item${c.after.length === 1 ? '' : 's'}`;
  return c.kind;
}
