// One assistant answer: its notices (each once), its Markdown text with citation buttons,
// its sources, a footer (confidence dot, tokens · cost, how it was made, action, Copy) and
// the "Response interrupted" mark.

import { assistantName } from './graphs.js';
import { copyText } from './clipboard.js';
import { confidenceLevel, madeBy, usage } from './contract.js';
import { h } from './dom.js';
import { linkCitations, markdownFragment } from './markdown.js';
import { mergeNotices, splitNotices } from './notices.js';
import { added } from './extensions.js';

const INTERRUPTED = {
  superseded: 'Response interrupted: another tab or client took over',
  failed: 'Response interrupted: the run failed',
};

export class Answer {
  constructor() {
    this.root = h('article', { class: 'msg assistant', 'aria-label': assistantName() });
    this.notices = h('ul', { class: 'notices', 'aria-label': 'Notes' });
    this.content = h('div', { class: 'content markdown' });
    this.root.append(this.notices, this.content);
    this.body = '';
    this.extraNotices = [];
  }

  /** Shows `text` (Markdown, with its `_Note: ..._` paragraphs taken out as notices). */
  setText(text, streaming, citations) {
    const { notices, body } = splitNotices(text);
    this.body = body;
    this.textNotices = notices;
    this.renderNotices();
    this.content.replaceChildren(markdownFragment(body, streaming));
    linkCitations(this.content, citations, added.citationOpener);
    this.root.classList.toggle('streaming', !!streaming);
    this.root.setAttribute('aria-busy', streaming ? 'true' : 'false');
  }

  renderNotices() {
    const all = mergeNotices(this.textNotices || [], this.extraNotices);
    if (all.join('\n') === this.shownNotices) return;
    this.shownNotices = all.join('\n');
    this.notices.replaceChildren(...all.map((n) => h('li', { text: n })));
  }

  /** The final `response` event. */
  finish(r) {
    this.setText(r.response || '', false, r.citations);
    this.addExtras(r);
  }

  /**
   * Sources, notices and the footer, from a `response` event or a history message's
   * metadata (`{citations, notices, action, retrieval_confidence, tokens_used, ...}`).
   */
  addExtras(r) {
    this.extraNotices = r.notices || [];
    this.renderNotices();
    const citations = r.citations || [];
    if (citations.length) {
      const ol = h(
        'ol',
        null,
        citations.map((c) => {
          const open = added.citationOpener;
          const parts = [h('span', { class: 'source-title', text: c.title || c.doc_id }), ': “', c.quote || '', '”'];
          const source = open
            ? h('button', { type: 'button', class: 'source-open', 'aria-label': `Open source ${c.marker}, ${c.title || c.doc_id}, at the cited passage`, onclick: () => open(c) }, ...parts)
            : h('span', { class: 'source-text' }, ...parts);
          return h('li', { value: c.marker }, source);
        }),
      );
      this.root.append(h('details', { class: 'citations' }, h('summary', { text: `Sources (${citations.length})` }), ol));
    }
    this.addFooter(r);
  }

  addFooter(r) {
    const footer = h('div', { class: 'answer-footer' });
    const level = confidenceLevel(r.retrieval_confidence);
    if (level) {
      footer.append(
        h(
          'span',
          { class: 'confidence', dataset: { level }, title: `Retrieval confidence: ${level}` },
          h('span', { class: `dot ${level}`, 'aria-hidden': 'true' }),
          h('span', { class: 'visually-hidden', text: 'Retrieval confidence: ' }),
          `${level} confidence`,
        ),
      );
    }
    const cost = usage(r);
    if (cost) footer.append(h('span', { class: 'usage', text: cost }));
    const by = madeBy(r);
    if (by) footer.append(h('span', { class: 'badge made-by', title: 'How this answer was made', text: by }));
    if (r.action) footer.append(h('span', { class: 'answer-action', text: `Action: ${r.action}` }));
    if (this.body.trim()) footer.append(this.copyButton());
    this.root.append(footer);
  }

  copyButton() {
    const b = h('button', { type: 'button', class: 'button quiet small copy', 'aria-label': 'Copy the answer', text: 'Copy' });
    b.addEventListener('click', async () => {
      try {
        await copyText(this.body.trim());
        b.textContent = 'Copied';
      } catch (_) {
        b.textContent = 'Copy failed';
      }
      setTimeout(() => {
        b.textContent = 'Copy';
      }, 2000);
    });
    return b;
  }

  /** The answer stopped before its end (`reason`: user_cancelled, superseded, failed, ...). */
  markInterrupted(reason) {
    this.root.classList.remove('streaming');
    this.root.setAttribute('aria-busy', 'false');
    if (!this.root.querySelector('.interrupted-mark')) {
      if (this.body.trim() && !this.root.querySelector('.answer-footer')) {
        this.root.append(h('div', { class: 'answer-footer' }, this.copyButton()));
      }
      this.root.append(h('div', { class: 'interrupted-mark', dataset: { reason: reason || '' }, text: INTERRUPTED[reason] || 'Response interrupted' }));
    }
  }
}
