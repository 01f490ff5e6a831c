// The selected checkpoint: what ran (each task, its attempts and LLM calls), its interrupts
// and errors, what the step changed (a diff against the parent checkpoint), the state, and
// the two time-travel actions with their forms.

import { h } from './el.js';
import { editableFields, editState, parseUpdate, runFrom } from './inspect-actions.js';
import { diffValues, diffView, jsonView, pretty } from './inspect-json.js';
import { formatCost, formatMs } from './inspect-steps.js';

function llmTable(calls) {
  return h('table', { class: 'llm-table' },
    h('thead', {}, h('tr', {}, ['model', 'input tok', 'output tok', 'cost', 'time'].map((t) => h('th', { text: t })))),
    h('tbody', {}, calls.map((c) => h('tr', {},
      h('td', { text: c.model || '' }),
      h('td', { text: String(c.input_tokens || 0) }),
      h('td', { text: String(c.output_tokens || 0) }),
      h('td', { text: formatCost(c.cost_usd || 0) }),
      h('td', { text: formatMs(c.duration_ms) })))));
}

function tasksView(step) {
  if (!step.tasks.length) return null;
  return h('section', { class: 'detail-section', 'aria-label': 'Tasks' },
    h('h3', { text: 'What ran' }),
    h('ul', { class: 'task-list' }, step.tasks.map((t) => h('li', { class: 'task-item', dataset: { node: t.node } },
      h('div', {}, h('strong', { text: t.node }), ' ',
        h('span', { class: 'muted small', text: [
          t.ms !== null ? `${t.measured ? '' : '≈ '}${formatMs(t.ms)}` : '',
          t.startedAt ? `started ${new Date(t.startedAt).toLocaleTimeString()}` : '',
          t.attempts > 1 ? `${t.attempts} attempts (${t.attempts - 1} retr${t.attempts === 2 ? 'y' : 'ies'})` : '',
          t.cached ? 'from the node cache' : '',
          t.resumed ? 'resumed after an interrupt' : '',
        ].filter(Boolean).join(' · ') })),
      t.llm.length ? llmTable(t.llm) : null))));
}

function interruptsView(step) {
  if (!step.interrupts.length && !step.errors.length) return null;
  return h('section', { class: 'detail-section', 'aria-label': 'Interrupts and errors' },
    step.interrupts.length ? h('h3', { text: 'Waiting for an answer' }) : null,
    step.interrupts.map((i) => h('div', { class: 'interrupt-item' }, jsonView(i.value, true))),
    step.errors.length ? h('h3', { text: 'Errors' }) : null,
    step.errors.map((e) => h('p', { class: 'error-item' }, h('strong', { text: `${e.node}: ` }), typeof e.error === 'string' ? e.error : pretty(e.error))));
}

/** The fork and edit actions of `step`; `ctx`: {threadId, graphId, nodes, afterChange(id)}. */
function actionsView(step, ctx) {
  const status = h('p', { class: 'action-status small', role: 'status' });
  const error = h('p', { class: 'action-error small', role: 'alert', hidden: true });
  const fail = (msg) => {
    error.textContent = msg;
    error.hidden = false;
    status.textContent = '';
  };
  const editor = h('textarea', { class: 'state-editor', rows: '8', spellcheck: 'false', 'aria-label': 'The update, as JSON' });
  editor.value = pretty(editableFields(step.snapshot.values));
  const asNode = h('select', { class: 'as-node', 'aria-label': 'Apply as node' },
    h('option', { value: '', text: '(no node: what is due stays due)' }),
    ctx.nodes.map((n) => h('option', { value: n, text: n })));
  const form = h('form', { class: 'edit-form', hidden: true },
    h('label', { class: 'small', text: 'Update (JSON object; applied through the fields\' reducers)' }), editor,
    h('label', { class: 'small field' }, 'As node ', asNode),
    h('div', { class: 'form-row' },
      h('button', { type: 'submit', class: 'button primary small', text: 'Apply the update' }),
      h('button', { type: 'button', class: 'button quiet small', text: 'Cancel', onclick: () => { form.hidden = true; } })));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    const parsed = parseUpdate(editor.value);
    if (parsed.error) return fail(parsed.error);
    status.textContent = 'Saving…';
    try {
      const id = await editState(ctx.threadId, step.id, parsed.values, asNode.value);
      status.textContent = 'Saved: a new checkpoint.';
      await ctx.afterChange(id);
    } catch (err) {
      fail(`The server refused the update: ${err.message}`);
    }
  });
  const fork = h('button', { type: 'button', class: 'button small fork-button', text: 'Run again from here' });
  fork.addEventListener('click', async () => {
    error.hidden = true;
    fork.disabled = true;
    status.textContent = 'Running from this checkpoint…';
    try {
      const run = await runFrom(ctx.threadId, ctx.graphId, step.id);
      status.textContent = `The run ended: ${run.status}.`;
      await ctx.afterChange(null, run.run_id);
    } catch (err) {
      fail(`The run could not start: ${err.message}`);
    } finally {
      fork.disabled = false;
    }
  });
  const edit = h('button', { type: 'button', class: 'button small edit-button', text: 'Edit state here', onclick: () => {
    form.hidden = !form.hidden;
    if (!form.hidden) editor.focus();
  } });
  return h('section', { class: 'detail-section actions', 'aria-label': 'Time travel' },
    h('div', { class: 'form-row' }, fork, edit), form, status, error);
}

/** Renders `step` into `box`. */
export function renderDetail(box, step, ctx) {
  const parentValues = step.parent ? step.parent.values : {};
  const parts = [
    h('header', { class: 'detail-header' },
      h('h2', { text: step.source === 'loop' ? `Step ${step.step}` : `Checkpoint (${step.source})` }),
      h('p', { class: 'muted small' },
        h('code', { class: 'checkpoint-id', text: step.id }), ' · ', new Date(step.createdAt).toLocaleString(),
        step.onHead ? '' : ' · on another branch')),
    actionsView(step, ctx),
    tasksView(step),
    interruptsView(step),
    h('section', { class: 'detail-section', 'aria-label': 'What changed' },
      h('h3', { text: step.parent ? 'What this step changed' : 'The first values' }),
      diffView(diffValues(parentValues, step.snapshot.values))),
    h('section', { class: 'detail-section', 'aria-label': 'State' },
      h('h3', { text: 'State at this checkpoint' }),
      h('div', { class: 'state-view' }, jsonView(step.snapshot.values, false))),
  ];
  box.replaceChildren(...parts.filter(Boolean));
}
