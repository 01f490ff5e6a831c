// The page's elements, and `h` (el.js), the one way this page builds DOM nodes.

export { h } from './el.js';

const $ = (id) => document.getElementById(id);

/** The static elements of index.html, by role. */
export const ui = {
  threadSearch: $('thread-search'),
  threadList: $('thread-list'),
  threadsEmpty: $('threads-empty'),
  threadsNoMatch: $('threads-nomatch'),
  newChat: $('new-chat'),
  graphPicker: $('graph-picker'),
  graphPickerField: $('graph-picker-field'),
  title: $('chat-title'),
  inspectLink: $('inspect-link'),
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
  confirm: $('confirm'),
  confirmTitle: $('confirm-title'),
  confirmText: $('confirm-text'),
  confirmOk: $('confirm-ok'),
};

/** The message box's placeholder when no prompt is open. */
export const DEFAULT_PLACEHOLDER = ui.editor.dataset.placeholder;

/** Scrolls the conversation to its last message. */
export function scrollToEnd() {
  const m = ui.messages;
  m.scrollTop = m.scrollHeight;
}
