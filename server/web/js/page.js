// The chat page's interface for extensions. An extension's page module (its files served
// at /ext/{id}/, its entry imported by the page at start: see the server's `WebModule`)
// imports only this module, by its absolute path:
//
//   import { addPanel, api, h, hasPanel, onGraph } from '/js/page.js';
//
// What it can add:
// - addPanel(name, element): a sidebar section, shown while the graph talked to asks for
//   panel `name` (GET /chat/graphs, `panels`). The page's styles for panels apply: a
//   `section.panel` with an `h2`, lists `ul.doc-list` of `li.row` holding a `.doc-item`
//   button and `.row-actions` of `.icon-button`s, `.muted.small` notes, `.button`s.
// - addMentionSource({panel, items, limit}): what "@" in the message box offers while the
//   graph has `panel`: `items()` gives `{id, title, kind?}` (a document has no kind; a
//   document set has `kind: 'set'`, which the chat contract sends as `tagged_set_ids`);
//   up to `limit` (8) that match what is typed are listed.
// - setCitationOpener(fn): what clicking a citation (`{marker, doc_id, title, quote}`) does;
//   without one citations are not clickable.
// - addWelcome(fn): the empty conversation's welcome; `fn()` returns an element, or null to
//   leave it to the next extension or the page.
// - onGraph(fn): `async fn()` runs at start and whenever another graph is picked (reload
//   the panel's data when `hasPanel(name)`).
// - onResponse(fn): `fn(event)` runs when a turn's answer arrives (the chat contract's
//   `response` event), e.g. to reload what the turn changed.
// - addDialog(element): a `<dialog>` added to the page.
// And what it can use: api(method, path, body) (the server's API with the page's token;
// throws ApiError), h(tag, attrs, ...children) (builds elements), mention(item) (puts a
// mention chip in the message box), showError(err, {context, retry}), describe(err),
// confirmDialog({title, text, ok}), markdownFragment(text), highlight(root, quote),
// hasPanel(name), setMessage(text) (fills the message box).

import { editor } from './editor.js';
import { added } from './extensions.js';
import { hasPanel } from './graphs.js';

export { api, ApiError } from './api.js';
export { confirmDialog } from './dialogs.js';
export { h } from './dom.js';
export { describe, showError } from './errors.js';
export { hasPanel } from './graphs.js';
export { highlight } from './highlight.js';
export { markdownFragment } from './markdown.js';

/** Adds `element` to the sidebar, shown while the graph asks for panel `name`. */
export function addPanel(name, element) {
  element.dataset.panel = name;
  element.hidden = !hasPanel(name);
  document.querySelector('.sidebar').append(element);
  added.panels.push({ name, element });
}

/** Adds what "@" offers while the graph has `panel`. */
export function addMentionSource({ panel, items, limit = 8 }) {
  added.mentionSources.push({ panel, items, limit });
}

/** Makes `fn(citation)` what clicking a citation does. */
export function setCitationOpener(fn) {
  added.citationOpener = fn;
}

/** Adds a welcome for empty conversations (`fn()`: an element, or null). */
export function addWelcome(fn) {
  added.welcomes.push(fn);
}

/** Runs `fn` at start and whenever another graph is picked. */
export function onGraph(fn) {
  added.graphHooks.push(fn);
}

/** Runs `fn(event)` when a turn's answer (`response` event) arrives. */
export function onResponse(fn) {
  added.responseHooks.push(fn);
}

/** Adds a dialog to the page. */
export function addDialog(element) {
  document.body.append(element);
}

/** Puts `text` in the message box (replacing what was there) and focuses it. */
export function setMessage(text) {
  editor.setText(text);
  document.getElementById('editor').focus();
}

/** Puts a mention chip for `item` (`{id, title, kind?}`) in the message box. */
export function mention(item) {
  editor.insertMention(item, null);
}
