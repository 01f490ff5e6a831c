// Text as the page shows it: an answer's small, safe Markdown subset, a user's mentions.

import { h } from './dom.js';
import { state } from './state.js';

/** Paragraphs, "- " lists, **bold**, [n] citation markers. */
export function renderRich(target, text, citations) {
  const byMarker = new Map();
  for (const c of citations || []) byMarker.set(String(c.marker), c);
  const frag = document.createDocumentFragment();
  let list = null;
  let para = null;
  const inline = (parent, line) => {
    for (const part of line.split(/(\*\*[^*]+\*\*|\[\d+\])/)) {
      if (!part) continue;
      if (part.startsWith('**') && part.endsWith('**') && part.length > 4) {
        parent.append(h('strong', { text: part.slice(2, -2) }));
      } else if (part.includes('**') && !part.slice(part.indexOf('**') + 2).includes('*')) {
        // Bold still streaming in (its closing ** has not arrived): bold already, so the
        // text shown grows into the final one instead of flashing the asterisks.
        const open = part.indexOf('**');
        if (open > 0) parent.append(part.slice(0, open));
        parent.append(h('strong', { text: part.slice(open + 2) }));
      } else if (/^\[\d+\]$/.test(part)) {
        const c = byMarker.get(part.slice(1, -1));
        parent.append(h('span', { class: 'cite', title: c ? `${c.title}: ${c.quote}` : null, text: part }));
      } else {
        parent.append(part);
      }
    }
  };
  for (const line of String(text).split('\n')) {
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    if (item) {
      para = null;
      if (!list) {
        list = h('ul');
        frag.append(list);
      }
      const li = h('li');
      inline(li, item[1]);
      list.append(li);
    } else if (line.trim() === '') {
      list = null;
      para = null;
    } else {
      list = null;
      if (!para) {
        para = h('p');
        frag.append(para);
      } else {
        para.append(h('br'));
      }
      inline(para, line);
    }
  }
  target.replaceChildren(frag);
}

/** A user's text with "@Document title" shown as mention chips. */
export function renderUserText(target, text) {
  const titles = state.docs.map((d) => d.title).sort((a, b) => b.length - a.length);
  let rest = String(text);
  while (rest) {
    let best = null;
    for (const t of titles) {
      const i = rest.indexOf(`@${t}`);
      if (i >= 0 && (best === null || i < best.i)) best = { i, t };
    }
    if (!best) {
      target.append(rest);
      break;
    }
    if (best.i > 0) target.append(rest.slice(0, best.i));
    target.append(h('span', { class: 'mention', text: `@${best.t}` }));
    rest = rest.slice(best.i + best.t.length + 1);
  }
}
