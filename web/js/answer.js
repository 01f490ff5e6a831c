// One assistant answer: text, citations, notices, the "Response interrupted" mark.

import { h } from './dom.js';
import { renderRich } from './richtext.js';

export class Answer {
  constructor() {
    this.root = h('article', { class: 'msg assistant', 'aria-label': 'PalAssist' });
    this.content = h('div', { class: 'content' });
    this.root.append(this.content);
  }

  setText(text, streaming, citations) {
    renderRich(this.content, text, citations);
    this.root.classList.toggle('streaming', !!streaming);
    this.root.setAttribute('aria-busy', streaming ? 'true' : 'false');
  }

  /** The final `response` event. */
  finish(response) {
    this.setText(response.response || '', false, response.citations);
    this.addExtras(response.citations, response.notices, response.action);
  }

  addExtras(citations, notices, action) {
    if (notices && notices.length) {
      this.root.append(h('ul', { class: 'notices' }, notices.map((n) => h('li', { text: String(n) }))));
    }
    if (citations && citations.length) {
      const ol = h(
        'ol',
        null,
        citations.map((c) =>
          h('li', { value: c.marker }, h('strong', { text: c.title || c.doc_id }), ': “', c.quote || '', '”'),
        ),
      );
      this.root.append(h('details', { class: 'citations' }, h('summary', { text: `Sources (${citations.length})` }), ol));
    }
    if (action) this.root.append(h('div', { class: 'answer-meta', text: `Action: ${action}` }));
  }

  markInterrupted() {
    this.root.classList.remove('streaming');
    this.root.setAttribute('aria-busy', 'false');
    if (!this.root.querySelector('.interrupted-mark')) {
      this.root.append(h('div', { class: 'interrupted-mark', text: 'Response interrupted' }));
    }
  }
}
