// The timeline: the thread's checkpoints oldest first, grouped by the run that wrote them;
// each row is one step with the nodes that ran (duration, retries, LLM calls with tokens and
// cost), its interrupts and errors, and where a branch forks off. Rows off the branch that
// ends at the head are dimmed.

import { h } from './el.js';
import { formatCost, formatMs, llmTotals } from './inspect-steps.js';

function shortId(id) {
  return id ? String(id).slice(-8) : '';
}

function llmText(t) {
  if (!t.calls) return '';
  const tokens = t.input + t.output;
  return `${t.calls} LLM call${t.calls === 1 ? '' : 's'} · ${tokens.toLocaleString('en')} tok · ${formatCost(t.cost)}`;
}

function taskChip(t) {
  const llm = llmTotals(t.llm);
  return h('span', { class: `task-chip${t.attempts > 1 ? ' retried' : ''}`, dataset: { node: t.node } },
    h('span', { class: 'task-node', text: t.node }),
    t.ms !== null && t.ms !== undefined ? h('span', { class: 'task-ms', text: `${t.measured ? '' : '≈'}${formatMs(t.ms)}` }) : null,
    t.attempts > 1 ? h('span', { class: 'badge warn', text: `${t.attempts} attempts` }) : null,
    t.cached ? h('span', { class: 'badge', text: 'cached' }) : null,
    t.resumed ? h('span', { class: 'badge interrupt resumed', text: 'interrupted, resumed' }) : null,
    llm.calls ? h('span', { class: 'badge llm', text: llmText(llm) }) : null);
}

function sourceText(s) {
  if (s.source === 'input') return 'input';
  if (s.source === 'fork') return 'fork';
  if (s.source === 'update') return 'state edited';
  return `step ${s.step}`;
}

function row(s, selectedId, onSelect, maxMs) {
  const width = s.ms && maxMs ? Math.max(2, Math.round((s.ms / maxMs) * 100)) : 0;
  return h('li', { class: `step-row${s.onHead ? '' : ' off-branch'}${s.id === selectedId ? ' selected' : ''}`, dataset: { checkpoint: s.id, source: s.source } },
    h('button', { type: 'button', class: 'step-button', 'aria-pressed': s.id === selectedId ? 'true' : 'false', onclick: () => onSelect(s) },
      h('span', { class: `step-source ${s.source}`, text: sourceText(s) }),
      h('span', { class: 'step-tasks' }, s.tasks.length ? s.tasks.map(taskChip) : h('span', { class: 'muted small', text: s.next.length ? `due: ${s.next.join(', ')}` : 'end' })),
      h('span', { class: 'step-meta' },
        s.interrupts.length ? h('span', { class: 'badge interrupt', text: `interrupt${s.interrupts.length > 1 ? ` ×${s.interrupts.length}` : ''}` }) : null,
        s.errors.length ? h('span', { class: 'badge error', text: 'error' }) : null,
        s.forksFrom ? h('span', { class: 'badge branch', text: `branch from ${shortId(s.forksFrom.checkpoint_id)}` }) : null,
        s.onHead ? null : h('span', { class: 'badge muted', text: 'other branch' }),
        s.ms !== null ? h('span', { class: 'step-ms', text: formatMs(s.ms) }) : null),
      width ? h('span', { class: 'step-bar', style: null, dataset: { width: String(width) } }) : null));
}

/** Renders `steps` into `list`; `runs` (from the API) give each run's status. */
export function renderTimeline(list, steps, runs, selectedId, onSelect) {
  const status = new Map(runs.map((r) => [r.run_id, r.status]));
  const maxMs = Math.max(0, ...steps.map((s) => s.ms || 0));
  const out = [];
  let run = undefined;
  for (const s of steps) {
    if (s.runId !== run) {
      run = s.runId;
      out.push(h('li', { class: 'run-row', dataset: { run: run || '' } },
        h('span', { class: 'run-title', text: run ? `Run …${shortId(run)}` : 'Without a run' }),
        status.get(run) ? h('span', { class: `badge run-${status.get(run)}`, text: status.get(run) }) : null,
        h('span', { class: 'muted small', text: new Date(s.createdAt).toLocaleString() })));
    }
    out.push(row(s, selectedId, onSelect, maxMs));
  }
  list.replaceChildren(...out);
  // Bar widths are set here, not in a style attribute (the page's CSP allows no inline styles
  // in attributes it does not need).
  for (const bar of list.querySelectorAll('.step-bar')) bar.style.width = `${bar.dataset.width}%`;
}
