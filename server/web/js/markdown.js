// Markdown to safe DOM: `marked` (GFM: emphasis, nested lists, tables, code) then DOMPurify,
// both vendored in web/vendor. Answers and documents are shown through here only.

import { Marked } from '../vendor/marked.esm.js';
import DOMPurify from '../vendor/purify.es.mjs';

const md = new Marked({ gfm: true, breaks: false });

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  // Links open elsewhere and tell the target nothing.
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'img'],
  FORBID_ATTR: ['style', 'id', 'class'],
};

// Text still streaming in, made to render as it will once complete: an unclosed ** or code
// fence is closed, a trailing line of only "-", "=" or "*" (a heading underline or a rule in
// the making) is held back.
function completed(text) {
  let t = text.replace(/\n[ \t]*[-=*_]+[ \t]*$/, '\n').replace(/(^|[^*])\*$/, '$1');
  if ((t.match(/^[ \t]*```/gm) || []).length % 2 === 1) t += '\n```';
  if ((t.match(/\*\*/g) || []).length % 2 === 1) {
    t = /\*\*\s*$/.test(t) ? t.replace(/\*\*\s*$/, '') : `${t.replace(/\s+$/, '')}**`;
  }
  return t;
}

const BLOCK = new Set(['P', 'UL', 'OL', 'LI', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'PRE', 'BLOCKQUOTE', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HR', 'DIV']);
const isBlock = (n) => !n || (n.nodeType === Node.ELEMENT_NODE && BLOCK.has(n.tagName));

// Drops the line breaks marked writes between block elements, so the text of a rendering
// is the text read (and a partial answer's text is the beginning of the final one's).
function dropBlockNewlines(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const drop = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (/^\s*\n\s*$/.test(n.data) && isBlock(n.previousSibling) && isBlock(n.nextSibling) && !n.parentElement?.closest('pre')) drop.push(n);
  }
  for (const n of drop) n.remove();
}

/** The Markdown `text` as a sanitized DocumentFragment (`streaming`: the text is partial). */
export function markdownFragment(text, streaming) {
  const src = streaming ? completed(String(text || '')) : String(text || '');
  const html = md.parse(src, { async: false });
  const frag = DOMPurify.sanitize(html, PURIFY);
  dropBlockNewlines(frag);
  return frag;
}

/**
 * Turns the `[n]` markers of `root` into citation buttons (`onCite(citation, button)`) for
 * the citations known, or plain marks for the others. Code is left alone.
 */
export function linkCitations(root, citations, onCite) {
  const byMarker = new Map();
  for (const c of citations || []) byMarker.set(String(c.marker), c);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement && n.parentElement.closest('code, pre, a') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (/\[\d+\]/.test(n.data)) nodes.push(n);
  for (const node of nodes) {
    const frag = document.createDocumentFragment();
    for (const part of node.data.split(/(\[\d+\])/)) {
      if (!part) continue;
      const m = /^\[(\d+)\]$/.exec(part);
      if (!m) {
        frag.append(part);
        continue;
      }
      const c = byMarker.get(m[1]);
      let e;
      if (c && onCite) {
        e = document.createElement('button');
        e.type = 'button';
        e.setAttribute('aria-label', `Source ${m[1]}: ${c.title || c.doc_id}`);
        e.addEventListener('click', () => onCite(c, e));
      } else {
        e = document.createElement('span');
      }
      e.className = 'cite';
      if (c) e.title = `${c.title}: ${c.quote}`;
      e.dataset.marker = m[1];
      e.textContent = part;
      frag.append(e);
    }
    node.replaceWith(frag);
  }
}
