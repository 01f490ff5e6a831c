// The chat graphs the server serves (GET /chat/graphs) and the one this page talks to.
//
// The page works for any graph that speaks the chat contract. The panels extensions add
// (PalAssist's documents and document sets), @mentions and PalAssist's action and
// web-search fields show only when the graph asks for them (`panels`). With more than one chat graph a picker appears above the
// conversations; the choice is kept in localStorage (`palgraph_graph`) and `?graph=<id>`
// in the URL picks one directly. Conversations are listed per graph.

import { api } from './api.js';
import { DEFAULT_PLACEHOLDER, ui } from './dom.js';
import { added } from './extensions.js';
import { state } from './state.js';

const GRAPH_KEY = 'palgraph_graph';

/** The graph's name as the page says it. */
export function assistantName() {
  const g = state.graph;
  if (!g || g.graph_id === 'palassist') return 'PalAssist';
  return g.graph_id;
}

/** Whether the current graph needs the page's panel `name` (`documents`, `document_sets`). */
export function hasPanel(name) {
  return !!(state.graph && state.graph.panels.includes(name));
}

/** The message box's placeholder when no prompt is open. */
export function defaultPlaceholder() {
  return hasPanel('documents') ? DEFAULT_PLACEHOLDER : `Message ${assistantName()}…`;
}

/** Shows the panels and fields the current graph needs, and names it. */
function apply() {
  const docs = hasPanel('documents');
  for (const p of added.panels) p.element.hidden = !hasPanel(p.name);
  for (const el of [ui.action.closest('.field'), ui.web.closest('.field')]) el.hidden = !docs;
  ui.editor.dataset.placeholder = defaultPlaceholder();
  document.querySelector('.brand').firstChild.textContent = `${assistantName()} `;
  ui.graphPicker.value = state.graph ? state.graph.graph_id : '';
  document.body.dataset.graph = state.graph ? state.graph.graph_id : '';
}

/** Loads the chat graphs and picks the one to talk to. */
export async function loadGraphs() {
  let list = [];
  try {
    const r = await api('GET', '/chat/graphs');
    list = (r && Array.isArray(r.graphs)) ? r.graphs : [];
  } catch {
    list = [];
  }
  // An older server without the list: PalAssist with its panels.
  state.graphs = list.length ? list : [{ graph_id: 'palassist', default: true, description: '', panels: ['documents', 'document_sets'] }];
  const wanted = new URLSearchParams(location.search).get('graph') || localStorage.getItem(GRAPH_KEY);
  state.graph = state.graphs.find((g) => g.graph_id === wanted || g.assistant_id === wanted) || state.graphs[0];
  ui.graphPicker.replaceChildren(
    ...state.graphs.map((g) => {
      const o = document.createElement('option');
      o.value = g.graph_id;
      // The name only: a description would cut the list's names short; it is the tooltip.
      o.textContent = g.graph_id === 'palassist' ? 'PalAssist' : g.graph_id;
      if (g.description) o.title = g.description;
      return o;
    }),
  );
  ui.graphPickerField.hidden = state.graphs.length < 2;
  apply();
}

/** Switches to graph `id` (kept for the next visit). */
export function pickGraph(id) {
  const g = state.graphs.find((x) => x.graph_id === id);
  if (!g) return false;
  state.graph = g;
  localStorage.setItem(GRAPH_KEY, g.graph_id);
  const url = new URL(location.href);
  url.searchParams.delete('graph');
  history.replaceState(null, '', url.pathname + url.search + url.hash);
  apply();
  return true;
}
