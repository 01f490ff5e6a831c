// The document viewer (a modal dialog): a document's text as Markdown, and for a citation
// the cited passage highlighted and scrolled into view.

import { addDialog, api, describe, h, highlight, markdownFragment } from '/js/page.js';
import { markup } from './library.js';

const dialog = markup(`
  <dialog id="viewer" class="viewer" aria-labelledby="viewer-title">
    <header class="viewer-header">
      <h2 id="viewer-title">Document</h2>
      <button id="viewer-close" type="button" class="button quiet" aria-label="Close the document">Close</button>
    </header>
    <p id="viewer-note" class="viewer-note muted small" hidden></p>
    <div id="viewer-body" class="viewer-body markdown" tabindex="0" aria-label="Document text"></div>
  </dialog>`);
addDialog(dialog);
const ui = {
  viewer: dialog,
  viewerTitle: dialog.querySelector('#viewer-title'),
  viewerClose: dialog.querySelector('#viewer-close'),
  viewerNote: dialog.querySelector('#viewer-note'),
  viewerBody: dialog.querySelector('#viewer-body'),
};

let opener = null;
let seq = 0;

ui.viewerClose.addEventListener('click', () => ui.viewer.close());
ui.viewer.addEventListener('click', (e) => {
  if (e.target === ui.viewer) ui.viewer.close(); // a click on the backdrop
});
ui.viewer.addEventListener('close', () => {
  if (opener && opener.isConnected) opener.focus();
  opener = null;
});

function note(text) {
  ui.viewerNote.textContent = text || '';
  ui.viewerNote.hidden = !text;
}

/**
 * Opens document `docId` (its `title` shown while it loads); with `quote`, the passage is
 * highlighted. Focus returns to the element that was focused before, when it closes.
 */
export async function openDocument(docId, { title, quote } = {}) {
  const mine = ++seq;
  opener = document.activeElement;
  ui.viewerTitle.textContent = title || 'Document';
  ui.viewerBody.replaceChildren(h('p', { class: 'muted', text: 'Loading…' }));
  ui.viewerBody.removeAttribute('data-loaded');
  note('');
  if (!ui.viewer.open) ui.viewer.showModal();
  ui.viewerClose.focus();
  let doc;
  try {
    doc = await api('GET', `/documents/${encodeURIComponent(docId)}`);
  } catch (e) {
    if (mine !== seq) return;
    ui.viewerBody.replaceChildren(
      h('p', { text: e.status === 404 ? 'This document no longer exists.' : `The document could not be loaded. ${describe(e)}` }),
    );
    ui.viewerBody.dataset.loaded = 'error';
    return;
  }
  if (mine !== seq) return;
  ui.viewerTitle.textContent = doc.title || title || 'Document';
  ui.viewerBody.replaceChildren(markdownFragment(doc.content || ''));
  ui.viewerBody.scrollTop = 0;
  if (quote) {
    const mark = highlight(ui.viewerBody, quote);
    if (mark) {
      note('The cited passage is highlighted.');
      mark.scrollIntoView({ block: 'center' });
    } else {
      note('The cited passage is no longer in this document; it read:');
      ui.viewerNote.append(' “', quote, '”');
    }
  }
  ui.viewerBody.dataset.loaded = 'true';
}

/** Opens the passage a citation quotes. */
export function openCitation(c) {
  return openDocument(c.doc_id, { title: c.title, quote: c.quote });
}
