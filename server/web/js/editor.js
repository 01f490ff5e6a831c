// The message box (a contenteditable): its text, its TipTap JSON with mention nodes, and
// mention chips.

import { h, ui } from './dom.js';
import { closeMentions } from './mentions.js';

function placeCaretAtEnd() {
  const r = document.createRange();
  r.selectNodeContents(ui.editor);
  r.collapse(false);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(r);
}

export const editor = {
  /** The message as plain text, as a TipTap document (mention nodes), and its mentions. */
  read() {
    const paragraphs = [[]];
    const mentions = [];
    let text = '';
    const para = () => paragraphs[paragraphs.length - 1];
    const pushText = (s) => {
      if (!s) return;
      const p = para();
      const last = p[p.length - 1];
      if (last && last.type === 'text') last.text += s;
      else p.push({ type: 'text', text: s });
      text += s;
    };
    const walk = (node) => {
      for (const n of node.childNodes) {
        if (n.nodeType === Node.TEXT_NODE) {
          pushText(n.nodeValue.replace(/\u00a0/g, ' ').replace(/\u200b/g, ''));
        } else if (n.nodeType === Node.ELEMENT_NODE) {
          if (n.classList.contains('mention') && n.dataset.id) {
            // A set mention carries `kind: "set"` (README, "The chat contract").
            const attrs = { id: n.dataset.id, label: n.dataset.label };
            if (n.dataset.kind) attrs.kind = n.dataset.kind;
            para().push({ type: 'mention', attrs });
            text += `@${attrs.label}`;
            if (!mentions.some((m) => m.id === attrs.id)) mentions.push(attrs);
          } else if (n.tagName === 'BR') {
            para().push({ type: 'hardBreak' });
            text += '\n';
          } else if (n.tagName === 'DIV' || n.tagName === 'P') {
            if (para().length) {
              paragraphs.push([]);
              text += '\n';
            }
            walk(n);
          } else {
            walk(n);
          }
        }
      }
    };
    walk(ui.editor);
    for (const p of paragraphs) {
      while (p.length && p[p.length - 1].type === 'hardBreak') p.pop();
    }
    const doc = {
      type: 'doc',
      content: paragraphs.map((c) => (c.length ? { type: 'paragraph', content: c } : { type: 'paragraph' })),
    };
    return {
      text: text.replace(/\s+$/, ''),
      doc,
      mentions,
      nodes: Array.from(ui.editor.childNodes, (n) => n.cloneNode(true)),
      action: ui.action.value || null,
      webSearch: ui.web.checked,
    };
  },

  isEmpty() {
    return !ui.editor.textContent.trim() && !ui.editor.querySelector('.mention');
  },

  clear() {
    ui.editor.replaceChildren();
  },

  /** Puts back a draft returned by `read()`. */
  restore(draft) {
    ui.editor.replaceChildren(...draft.nodes);
  },

  setText(t) {
    ui.editor.replaceChildren(document.createTextNode(t));
    placeCaretAtEnd();
  },

  /**
   * Inserts a mention chip for `doc` (`{id, title, kind?}`; `kind: 'set'` for a document
   * set), replacing the typed "@query" `q` when given.
   */
  insertMention(doc, q) {
    const dataset = { id: doc.id, label: doc.title };
    if (doc.kind) dataset.kind = doc.kind;
    const cls = doc.kind ? `mention ${doc.kind}-mention` : 'mention';
    const chip = h('span', { class: cls, contenteditable: 'false', dataset, text: `@${doc.title}` });
    const space = document.createTextNode('\u00a0');
    const range = document.createRange();
    if (q && q.node.isConnected) {
      range.setStart(q.node, q.start);
      range.setEnd(q.node, q.end);
      range.deleteContents();
    } else {
      const sel = window.getSelection();
      if (sel.rangeCount && ui.editor.contains(sel.getRangeAt(0).startContainer)) {
        range.setStart(sel.getRangeAt(0).startContainer, sel.getRangeAt(0).startOffset);
        range.collapse(true);
      } else {
        range.selectNodeContents(ui.editor);
        range.collapse(false);
      }
    }
    range.insertNode(space);
    range.insertNode(chip);
    ui.editor.focus();
    const sel = window.getSelection();
    const after = document.createRange();
    after.setStartAfter(space);
    after.collapse(true);
    sel.removeAllRanges();
    sel.addRange(after);
    closeMentions();
  },
};
