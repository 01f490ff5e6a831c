// The page's elements, and `h`, the one way this page builds DOM nodes.

const $ = (id) => document.getElementById(id);

/** The static elements of index.html, by role. */
export const ui = {
  threadSearch: $('thread-search'),
  threadList: $('thread-list'),
  threadsEmpty: $('threads-empty'),
  threadsNoMatch: $('threads-nomatch'),
  docList: $('doc-list'),
  docsEmpty: $('docs-empty'),
  setList: $('set-list'),
  setsEmpty: $('sets-empty'),
  setForm: $('set-form'),
  setName: $('set-name'),
  upload: $('upload-input'),
  uploadStatus: $('upload-status'),
  newChat: $('new-chat'),
  graphPicker: $('graph-picker'),
  graphPickerField: $('graph-picker-field'),
  title: $('chat-title'),
  messages: $('messages'),
  notice: $('notice'),
  noticeText: $('notice-text'),
  noticeDismiss: $('notice-dismiss'),
  error: $('error'),
  errorText: $('error-text'),
  errorRetry: $('error-retry'),
  errorDismiss: $('error-dismiss'),
  tokenForm: $('token-form'),
  tokenInput: $('token-input'),
  prompt: $('prompt'),
  promptMessage: $('prompt-message'),
  promptOptions: $('prompt-options'),
  promptHint: $('prompt-hint'),
  promptCancel: $('prompt-cancel'),
  composer: $('composer'),
  composerHint: $('composer-hint'),
  editor: $('editor'),
  mentionList: $('mention-list'),
  action: $('action'),
  web: $('web-search'),
  send: $('send'),
  stop: $('stop'),
  viewer: $('viewer'),
  viewerTitle: $('viewer-title'),
  viewerClose: $('viewer-close'),
  viewerNote: $('viewer-note'),
  viewerBody: $('viewer-body'),
  confirm: $('confirm'),
  confirmTitle: $('confirm-title'),
  confirmText: $('confirm-text'),
  confirmOk: $('confirm-ok'),
};

/** The message box's placeholder when no prompt is open. */
export const DEFAULT_PLACEHOLDER = ui.editor.dataset.placeholder;

/**
 * An element: `h('button', {class: 'x', onclick: f, text: 'Go'}, ...children)`.
 * Attributes that are null, undefined or false are left out; `text` sets the text,
 * `on<event>` adds a listener, `dataset` sets data attributes.
 */
export function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Scrolls the conversation to its last message. */
export function scrollToEnd() {
  const m = ui.messages;
  m.scrollTop = m.scrollHeight;
}
