// The "@" picker of the message box (a listbox under the caret's query): what the
// extensions' mention sources offer for the graph's panels (PalAssist: documents, then
// document sets, whose mention puts every document of the set in scope).

import { h, ui } from './dom.js';
import { editor } from './editor.js';
import { mentionSources } from './extensions.js';
import { hasPanel } from './graphs.js';

const mention = { open: false, items: [], index: 0, query: null };

// The "@query" right before the caret, if any.
function mentionQuery() {
  const sel = window.getSelection();
  if (!sel.rangeCount || !sel.isCollapsed) return null;
  const node = sel.anchorNode;
  if (!node || node.nodeType !== Node.TEXT_NODE || !ui.editor.contains(node)) return null;
  const before = node.nodeValue.slice(0, sel.anchorOffset);
  const at = before.lastIndexOf('@');
  if (at < 0) return null;
  if (at > 0 && !/\s/.test(before[at - 1])) return null;
  const query = before.slice(at + 1).replace(/\u00a0/g, ' ');
  if (query.length > 60 || /\n/.test(query)) return null;
  return { node, start: at, end: sel.anchorOffset, query };
}

function matching(query) {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const fits = (name) => words.every((w) => name.toLowerCase().includes(w));
  return mentionSources(hasPanel).flatMap((s) => s.items().filter((d) => fits(d.title)).slice(0, s.limit));
}

/** Opens, updates or closes the picker for what is before the caret. */
export function updateMentions() {
  const q = mentionQuery();
  const items = q ? matching(q.query) : [];
  if (!q || !items.length) return closeMentions();
  mention.open = true;
  mention.query = q;
  if (mention.items.map((d) => d.id).join() !== items.map((d) => d.id).join()) mention.index = 0;
  mention.index = Math.min(mention.index, items.length - 1);
  mention.items = items;
  renderMentions();
}

function renderMentions() {
  ui.mentionList.replaceChildren();
  mention.items.forEach((d, i) => {
    ui.mentionList.append(
      h('li', {
        id: `mention-opt-${i}`,
        role: 'option',
        'aria-selected': i === mention.index ? 'true' : 'false',
        class: d.kind ? `${d.kind}-option` : null,
        dataset: d.kind ? { [`${d.kind}Id`]: d.id } : { docId: d.id },
        text: d.kind ? `${d.title} (${d.kind})` : d.title,
        onmousedown: (e) => {
          e.preventDefault();
          editor.insertMention(d, mention.query);
        },
      }),
    );
  });
  ui.mentionList.hidden = false;
  ui.editor.setAttribute('aria-activedescendant', `mention-opt-${mention.index}`);
}

export function closeMentions() {
  mention.open = false;
  mention.items = [];
  mention.query = null;
  ui.mentionList.hidden = true;
  ui.mentionList.replaceChildren();
  ui.editor.removeAttribute('aria-activedescendant');
}

/** A key in the message box while the picker is open; true when the picker used it. */
export function mentionKey(e) {
  if (!mention.open) return false;
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    e.preventDefault();
    const n = mention.items.length;
    mention.index = (mention.index + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
    renderMentions();
    return true;
  }
  if (e.key === 'Enter' || e.key === 'Tab') {
    e.preventDefault();
    editor.insertMention(mention.items[mention.index], mention.query);
    return true;
  }
  if (e.key === 'Escape') {
    e.preventDefault();
    closeMentions();
    return true;
  }
  return false;
}
