// The view of one run: PalReasoning, the streamed answer, notes on the connection.

import { Answer } from './answer.js';
import { h, scrollToEnd, ui } from './dom.js';
import { Reasoning } from './reasoning.js';

export class Turn {
  constructor() {
    this.root = h('div', { class: 'turn' });
    ui.messages.append(this.root);
    this.reasoning = new Reasoning(this.root);
    this.answer = null;
    this.text = '';
    this.messageId = null;
    this.conn = null;
  }

  ensureAnswer() {
    if (!this.answer) {
      this.answer = new Answer();
      this.root.append(this.answer.root);
    }
    return this.answer;
  }

  /**
   * A `token` event: `content` appended to the answer `messageId` (or, with `reset`, its
   * text so far replaced by `content`). The status line follows: it shows the node
   * writing the answer from its first token on.
   */
  token(messageId, content, node, reset) {
    if (messageId !== this.messageId) {
      this.messageId = messageId;
      this.text = '';
      this.reasoning.follow(node);
    }
    this.text = reset ? content : this.text + content;
    this.ensureAnswer().setText(this.text, true);
    scrollToEnd();
  }

  /** The partial text of a snapshot. */
  partial(messageId, text) {
    this.messageId = messageId;
    this.text = text || '';
    if (this.text) this.ensureAnswer().setText(this.text, true);
  }

  dropAnswer() {
    if (this.answer) this.answer.root.remove();
    this.answer = null;
  }

  /** The run stopped (`reason`: user_cancelled, superseded, ...): the answer so far is kept. */
  interrupted(reason) {
    this.reasoning.clear();
    this.ensureAnswer().markInterrupted(reason);
    scrollToEnd();
  }

  /** A note on the connection ("Reconnecting in 2 s…" with a Retry button), or none. */
  connection(message, onRetry) {
    if (!message) {
      if (this.conn) this.conn.remove();
      this.conn = null;
      return;
    }
    if (!this.conn) {
      this.connText = h('span');
      this.connRetry = h('button', { type: 'button', class: 'button quiet', text: 'Retry now' });
      this.connRetry.addEventListener('click', () => this.onRetry && this.onRetry());
      this.conn = h('div', { class: 'connection', role: 'status' }, this.connText, this.connRetry);
      this.root.append(this.conn);
      scrollToEnd();
    }
    this.onRetry = onRetry;
    this.connRetry.hidden = !onRetry;
    if (this.connText.textContent !== message) this.connText.textContent = message;
  }

  remove() {
    this.reasoning.clear();
    this.root.remove();
  }
}
