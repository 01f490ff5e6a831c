// The run inspector (`/inspect?thread=<id>[&checkpoint=<id>]`, linked from the chat page's
// header for the open conversation): for a thread of any graph the server serves, the graph
// drawn with the path the selected run took, a timeline of its steps (durations, retries,
// interrupts, LLM calls with tokens and cost), the state at each checkpoint and what each
// step changed, and "run again from here" / "edit state here" from any checkpoint.
// Without `thread` it lists the latest threads to pick from. The access token is the chat
// page's (localStorage `palgraph_token`); a 401 asks for it.

import { TOKEN_KEY } from './config.js';
import { h } from './el.js';
import { renderDetail } from './inspect-detail.js';
import { drawGraph, highlight, legend, parseMermaid } from './inspect-graph.js';
import { loadThread, recentThreads } from './inspect-load.js';
import { buildSteps, lastStepOf, runPath } from './inspect-steps.js';
import { renderTimeline } from './inspect-timeline.js';
import { threadTitle } from './titles.js';

const $ = (id) => document.getElementById(id);
const view = {
  title: $('inspect-title'), sub: $('inspect-sub'), back: $('back-link'), refresh: $('refresh'),
  error: $('inspect-error'), errorText: $('inspect-error-text'), tokenForm: $('token-form'), tokenInput: $('token-input'),
  picker: $('picker'), pickerList: $('picker-list'), pickerForm: $('picker-form'), pickerInput: $('picker-input'),
  main: $('inspect-main'), graph: $('graph'), graphNote: $('graph-note'), timeline: $('timeline'), detail: $('detail'),
};

const page = { threadId: null, data: null, graph: null, steps: [], selected: null };

function showError(e) {
  view.errorText.textContent = e.status === 401
    ? 'This server needs an access token: paste yours below.'
    : `Could not load: ${e.message || e}`;
  view.tokenForm.hidden = e.status !== 401;
  view.error.hidden = false;
}

function setUrl(checkpointId) {
  const url = new URL(location.href);
  url.searchParams.set('thread', page.threadId);
  if (checkpointId) url.searchParams.set('checkpoint', checkpointId);
  else url.searchParams.delete('checkpoint');
  history.replaceState(null, '', url.pathname + url.search);
}

function select(step) {
  page.selected = step;
  setUrl(step.id);
  renderTimeline(view.timeline, page.steps, page.data.runs, step.id, select);
  const last = (step.runId && lastStepOf(page.steps, step.runId)) || step;
  if (page.graph) highlight(view.graph, page.graph, runPath(page.steps, last), step);
  renderDetail(view.detail, step, {
    threadId: page.threadId,
    graphId: page.data.graphId,
    nodes: page.graph ? page.graph.nodes.map((n) => n.name).filter((n) => !n.startsWith('__')) : [],
    afterChange: (checkpointId, runId) => reload(checkpointId, runId),
  });
  document.body.dataset.selected = step.id;
}

/** Loads the thread again and selects `checkpointId`, else the last step of `runId`, else
 * the head. */
async function reload(checkpointId, runId) {
  document.body.dataset.ready = 'false';
  try {
    page.data = await loadThread(page.threadId);
  } catch (e) {
    showError(e);
    document.body.dataset.ready = 'true';
    return;
  }
  view.error.hidden = true;
  page.steps = buildSteps(page.data.history);
  const { thread, graphId } = page.data;
  view.title.textContent = `Run inspector · ${graphId}`;
  view.sub.textContent = `thread ${thread.thread_id} · ${thread.status} · ${page.steps.length} checkpoints`;
  view.back.href = `/?graph=${encodeURIComponent(graphId)}#/c/${thread.thread_id}`;
  view.main.hidden = false;
  if (!page.graph || page.graph.graphId !== graphId) {
    page.graph = Object.assign(parseMermaid(page.data.drawing.mermaid), { graphId });
    try {
      await drawGraph(view.graph, page.graph);
      view.graphNote.replaceChildren(legend());
    } catch (e) {
      view.graphNote.textContent = `The graph could not be drawn: ${e.message || e}`;
    }
  }
  const want = page.steps.find((s) => s.id === checkpointId)
    || (runId && lastStepOf(page.steps, runId))
    || page.steps[page.steps.length - 1]
    || null;
  if (want) select(want);
  else view.detail.replaceChildren(h('p', { class: 'muted', text: 'This thread has no checkpoint yet.' }));
  document.body.dataset.ready = 'true';
}

async function showPicker() {
  view.title.textContent = 'Run inspector';
  view.sub.textContent = 'Pick a thread to inspect.';
  view.picker.hidden = false;
  try {
    const list = await recentThreads();
    view.pickerList.replaceChildren(...list.map((t) => {
      const title = threadTitle(t, '(no message yet)');
      return h('li', {},
        h('a', {
          href: `/inspect?thread=${encodeURIComponent(t.thread_id)}`,
          text: title.length > 90 ? `${title.slice(0, 90)}…` : title,
          title: `${title}\n${t.thread_id}`,
        }), ' ',
        h('span', { class: 'badge', text: (t.metadata && t.metadata.graph_id) || '?' }), ' ',
        h('span', { class: 'muted small', text: `${new Date(t.created_at).toLocaleString()} · ${t.status}` }),
        h('span', { class: 'muted small thread-id', text: t.thread_id }));
    }));
    if (!list.length) view.pickerList.replaceChildren(h('li', { class: 'muted', text: 'No threads yet.' }));
  } catch (e) {
    showError(e);
  }
  document.body.dataset.ready = 'true';
}

view.refresh.addEventListener('click', () => page.threadId && reload(page.selected && page.selected.id));
view.tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const t = view.tokenInput.value.trim();
  if (t) localStorage.setItem(TOKEN_KEY, t);
  else localStorage.removeItem(TOKEN_KEY);
  location.reload();
});
view.pickerForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const id = view.pickerInput.value.trim();
  if (id) location.href = `/inspect?thread=${encodeURIComponent(id)}`;
});

const params = new URLSearchParams(location.search);
page.threadId = params.get('thread');
if (page.threadId) reload(params.get('checkpoint'));
else showPicker();
