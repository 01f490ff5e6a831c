// PalReasoning: the current node's status line (each shown >= MIN_STATUS_MS, queued), the
// documents found so far, the web query.

import { MIN_STATUS_MS } from './config.js';
import { h, scrollToEnd } from './dom.js';

export class Reasoning {
  constructor(parent) {
    this.root = h('div', { class: 'reasoning', role: 'status', hidden: true });
    this.text = h('span', { class: 'status-text' });
    this.pills = h('div', { class: 'doc-pills', 'aria-label': 'Documents found' });
    this.web = h('div', { class: 'web-query', hidden: true });
    this.root.append(h('div', { class: 'status-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), this.text), this.pills, this.web);
    parent.append(this.root);
    this.queue = [];
    this.current = null;
    this.timer = null;
    this.waiters = [];
    this.docIds = new Set();
  }

  static item(s) {
    return { node: s.node, message: s.message || '', docs: s.docs_found || [], webQuery: s.web_query || null };
  }

  /** A `status` event. */
  push(s) {
    const it = Reasoning.item(s);
    const last = this.queue.length ? this.queue[this.queue.length - 1] : this.current;
    if (last && last.node === it.node && last.message === it.message) {
      // The same line with more details (documents found, a web query): merge.
      last.docs = last.docs.concat(it.docs);
      last.webQuery = it.webQuery || last.webQuery;
      if (last === this.current) this.render();
      return;
    }
    this.queue.push(it);
    this.pump();
  }

  /** The snapshot of a joined run: its last line at once, the documents of all. */
  restore(statuses) {
    if (!statuses.length) return;
    const items = statuses.map(Reasoning.item);
    const last = items[items.length - 1];
    for (const it of items) {
      for (const d of it.docs) this.addPill(d);
      if (it.webQuery) last.webQuery = last.webQuery || it.webQuery;
    }
    this.queue = [];
    this.show(last);
  }

  pump() {
    if (this.timer) return;
    const next = this.queue.shift();
    if (!next) {
      const w = this.waiters;
      this.waiters = [];
      w.forEach((f) => f());
      return;
    }
    this.show(next);
  }

  show(it) {
    this.current = it;
    this.render();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, MIN_STATUS_MS);
  }

  addPill(d) {
    if (!d || this.docIds.has(d.id)) return;
    this.docIds.add(d.id);
    this.pills.append(h('span', { class: 'pill', dataset: { docId: d.id }, text: d.title || d.id }));
  }

  render() {
    const it = this.current;
    if (!it) return;
    this.root.hidden = false;
    this.text.textContent = it.message;
    for (const d of it.docs) this.addPill(d);
    if (it.webQuery) {
      this.web.hidden = false;
      this.web.textContent = `Searching the web for “${it.webQuery}”`;
    }
    scrollToEnd();
  }

  /**
   * The answer of `node` started streaming: its status line shows at once, and the lines
   * queued before it are dropped (their documents and web query are kept).
   */
  follow(node) {
    if (this.current && this.current.node === node && !this.queue.length) return;
    let at = -1;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i].node === node) {
        at = i;
        break;
      }
    }
    if (at < 0 && this.current && this.current.node === node) return;
    if (at < 0) at = this.queue.length - 1;
    if (at < 0) return;
    const it = this.queue[at];
    for (const skipped of this.queue.slice(0, at)) {
      for (const d of skipped.docs) this.addPill(d);
      it.webQuery = it.webQuery || skipped.webQuery;
    }
    this.queue = this.queue.slice(at + 1);
    this.show(it);
  }

  /** Runs `fn` once every queued line had its time on screen. */
  whenDrained(fn) {
    if (!this.timer && !this.queue.length) fn();
    else this.waiters.push(fn);
  }

  clear() {
    clearTimeout(this.timer);
    this.timer = null;
    this.queue = [];
    this.waiters = [];
    this.current = null;
    this.root.hidden = true;
    this.text.textContent = '';
    this.pills.replaceChildren();
    this.web.hidden = true;
    this.web.textContent = '';
    this.docIds.clear();
  }
}
