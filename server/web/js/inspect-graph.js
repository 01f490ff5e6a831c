// The graph, drawn from its Mermaid (GET /assistants/{id}/graph) by the vendored Mermaid
// (web/vendor/mermaid.min.js, a classic script that defines `window.mermaid`), with the path
// a run took highlighted (its turn's path: a resumed run continues the path of the run it
// resumed): the nodes it ran (`ran`), the edges between its consecutive steps
// (`taken`), the selected checkpoint's nodes (`current`) and what is due after it (`next`).
//
// The server's Mermaid is parsed into nodes and edges and written again with ids `n0`,
// `n1`, ... (a node may be named like a Mermaid keyword, `style` or `end`); each drawn node
// then carries `data-node` (its name) and each edge `data-from` / `data-to`, which the
// highlighting (and the browser test) use.

import { h } from './el.js';

const START = '__start__';
const END = '__end__';

/** `{nodes: [{id, name}], edges: [{from, to, conditional}]}` of the server's Mermaid. */
export function parseMermaid(text) {
  const names = new Map();
  const edges = [];
  for (const raw of String(text || '').split('\n')) {
    const line = raw.trim();
    let m = /^([^\s[(]+)\["(.*)"\]$/.exec(line);
    if (m) {
      names.set(m[1], m[2]);
      continue;
    }
    m = /^([^\s[(]+)\(\[(.*)\]\)$/.exec(line);
    if (m) {
      names.set(m[1], m[1] === START || m[1] === END ? m[1] : m[2]);
      continue;
    }
    m = /^(.+?) (-->|-\.->) (\S+)$/.exec(line);
    if (m) {
      for (const from of m[1].split(' & ')) edges.push({ from: from.trim(), to: m[3], conditional: m[2] === '-.->' });
    }
  }
  const ids = new Map();
  const nodes = [];
  const add = (mid) => {
    if (!ids.has(mid)) {
      ids.set(mid, `n${ids.size}`);
      nodes.push({ id: ids.get(mid), name: names.get(mid) || mid });
    }
    return ids.get(mid);
  };
  for (const mid of names.keys()) add(mid);
  return {
    nodes,
    edges: edges.map((e) => ({ from: add(e.from), to: add(e.to), conditional: e.conditional })),
  };
}

function label(name) {
  if (name === START) return '([START])';
  if (name === END) return '([END])';
  return `["${name.replace(/"/g, "'")}"]`;
}

/** Mermaid source for `graph` (from `parseMermaid`). */
export function mermaidSource(graph) {
  const lines = ['flowchart TD'];
  for (const n of graph.nodes) lines.push(`  ${n.id}${label(n.name)}`);
  for (const e of graph.edges) lines.push(`  ${e.from} ${e.conditional ? '-.->' : '-->'} ${e.to}`);
  return lines.join('\n');
}

let rendered = 0;

/** Draws `graph` into `box` (an SVG); resolves when drawn. */
export async function drawGraph(box, graph) {
  const mermaid = window.mermaid;
  if (!mermaid) throw new Error('the graph drawing library did not load');
  const dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: dark ? 'dark' : 'default' });
  rendered += 1;
  const { svg } = await mermaid.render(`inspect-graph-${rendered}`, mermaidSource(graph));
  box.innerHTML = svg;
  const byId = new Map(graph.nodes.map((n) => [n.id, n.name]));
  for (const g of box.querySelectorAll('g.node')) {
    const m = /flowchart-(n\d+)-\d+$/.exec(g.id || '');
    if (m) g.dataset.node = byId.get(m[1]);
  }
  for (const p of box.querySelectorAll('path[id*="L_"]')) {
    const m = /L_(n\d+)_(n\d+)_\d+$/.exec(p.id);
    if (m) {
      p.dataset.from = byId.get(m[1]);
      p.dataset.to = byId.get(m[2]);
    }
  }
}

/** The edges a run took along `path` (steps, oldest first) that the graph has. */
function takenEdges(graph, path) {
  const names = new Set(graph.nodes.map((n) => n.name));
  const has = new Set(graph.edges.map((e) => `${graph.nodes.find((n) => n.id === e.from).name}>${graph.nodes.find((n) => n.id === e.to).name}`));
  const out = new Set();
  let prev = [];
  for (const s of path) {
    const now = s.tasks.map((t) => t.node).filter((n) => names.has(n));
    if (!now.length) {
      if (s.source === 'input' || s.source === 'fork') prev = [START];
      continue;
    }
    for (const a of prev) for (const b of now) if (has.has(`${a}>${b}`)) out.add(`${a}>${b}`);
    prev = now;
  }
  const last = path[path.length - 1];
  if (last && !last.next.length && last.source === 'loop') for (const a of prev) if (has.has(`${a}>${END}`)) out.add(`${a}>${END}`);
  return out;
}

/** Highlights in `box` (drawn by `drawGraph`) the path of `path` and the step `selected`. */
export function highlight(box, graph, path, selected) {
  const taken = takenEdges(graph, path);
  const ran = new Set(path.flatMap((s) => s.tasks.map((t) => t.node)));
  for (const key of taken) for (const n of key.split('>')) ran.add(n);
  const current = new Set(selected ? selected.tasks.map((t) => t.node) : []);
  const next = new Set(selected ? selected.next : []);
  for (const g of box.querySelectorAll('g.node[data-node]')) {
    const n = g.dataset.node;
    g.classList.toggle('ran', ran.has(n));
    g.classList.toggle('current', current.has(n));
    g.classList.toggle('next', next.has(n));
  }
  for (const p of box.querySelectorAll('path[data-from]')) {
    p.classList.toggle('taken', taken.has(`${p.dataset.from}>${p.dataset.to}`));
  }
}

/** The legend under the drawing. */
export function legend() {
  return h('p', { class: 'graph-legend muted small' },
    h('span', { class: 'key ran' }), ' on the path of this turn ',
    h('span', { class: 'key current' }), ' made this checkpoint ',
    h('span', { class: 'key next' }), ' due next');
}
