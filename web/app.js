// PalAssist chat page for `palgraph serve`: plain JavaScript, no framework, no build step.
//
// It speaks the server's chat contract (server/src/api/chat.rs):
// - POST /chat and POST /chat/resume answer with a server-sent event stream, read here with
//   fetch + a ReadableStream parser (EventSource cannot POST or send our own headers);
// - GET /chat/history/{thread} renders a conversation, GET /chat/stream/{thread} joins the
//   thread's active run (a `snapshot` first, then live events) or, with `Last-Event-ID`,
//   resumes a dropped stream exactly where it stopped;
// - POST /threads/{thread}/cancel stops a run; POST /threads/search lists conversations;
//   GET/POST /documents lists and uploads documents.
//
// Behaviour worth knowing:
// - PalReasoning: each status line stays at least 300 ms (queued, never dropped); the line,
//   its document pills and the web query are cleared when the answer or a prompt arrives.
// - PalAssist: a prompt shows above the message box; while a `text_input` prompt is open,
//   what is typed is its answer (a resume), never a new turn. Cancel resumes with `cancel`
//   and the answer to the cancel is not shown.
// - A message sent while an answer streams uses the server's `interrupt` multitask
//   strategy: the streaming answer stops (kept, marked "Response interrupted") and the new
//   turn starts. Without a known active run a message uses the default `reject`; a 409
//   `thread_busy` then shows a message and the page joins the run that is going on.
// - A dropped stream reconnects with backoff (1 s, doubling to 30 s) and `Last-Event-ID`,
//   so no text is shown twice. 30 s without any byte (the server sends a heartbeat comment
//   every 15 s) counts as a dropped stream; before the stream has started it is an error.
// - Settings in localStorage: `palgraph_token` (sent as `Authorization: Bearer <token>`),
//   `palgraph_idle_timeout_ms` (the 30 s above).
'use strict';

(function () {
  const MIN_STATUS_MS = 300;
  const BACKOFF_START_MS = 1000;
  const BACKOFF_MAX_MS = 30000;
  const TOKEN_KEY = 'palgraph_token';
  const IDLE_TIMEOUT_MS = positive(localStorage.getItem('palgraph_idle_timeout_ms')) || 30000;
  const EXAMPLES = [
    'What is the data retention period for customer records?',
    'Summarize the data retention policy',
    'Compare the capital requirements regulation',
  ];

  const $ = (id) => document.getElementById(id);
  const ui = {
    threadList: $('thread-list'),
    threadsEmpty: $('threads-empty'),
    docList: $('doc-list'),
    docsEmpty: $('docs-empty'),
    upload: $('upload-input'),
    uploadStatus: $('upload-status'),
    newChat: $('new-chat'),
    title: $('chat-title'),
    messages: $('messages'),
    error: $('error'),
    errorText: $('error-text'),
    errorDismiss: $('error-dismiss'),
    tokenForm: $('token-form'),
    tokenInput: $('token-input'),
    prompt: $('prompt'),
    promptMessage: $('prompt-message'),
    promptOptions: $('prompt-options'),
    promptHint: $('prompt-hint'),
    promptCancel: $('prompt-cancel'),
    composer: $('composer'),
    editor: $('editor'),
    mentionList: $('mention-list'),
    action: $('action'),
    web: $('web-search'),
    send: $('send'),
    stop: $('stop'),
  };
  const DEFAULT_PLACEHOLDER = ui.editor.dataset.placeholder;

  const state = {
    threadId: null,
    docs: [],
    threads: [],
    live: null, // the run this page follows (see Live)
    prompt: null, // the pending PalAssist prompt (an `interrupt` event)
    openSeq: 0,
  };

  function positive(v) {
    const n = Number(v);
    return Number.isFinite(n) && n > 0 ? n : 0;
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function h(tag, attrs, ...children) {
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

  function scrollToEnd() {
    const m = ui.messages;
    m.scrollTop = m.scrollHeight;
  }

  // ---------------------------------------------------------------- HTTP

  class ApiError extends Error {
    constructor(status, code, detail) {
      super(detail);
      this.status = status;
      this.code = code;
      this.detail = detail;
    }
  }

  function headers(extra) {
    const out = Object.assign({}, extra || {});
    const token = localStorage.getItem(TOKEN_KEY);
    if (token) out.Authorization = `Bearer ${token}`;
    return out;
  }

  async function errorFrom(resp) {
    let body = null;
    try {
      body = await resp.json();
    } catch (_) {
      body = null;
    }
    const code = (body && body.code) || `http_${resp.status}`;
    const detail = (body && (body.detail || body.message)) || resp.statusText || 'request failed';
    return new ApiError(resp.status, code, detail);
  }

  async function api(method, path, body) {
    let resp;
    try {
      resp = await fetch(path, {
        method,
        headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new ApiError(0, 'network', e.message || String(e));
    }
    if (!resp.ok) throw await errorFrom(resp);
    if (resp.status === 204) return null;
    return resp.json();
  }

  function describe(err) {
    if (!(err instanceof ApiError)) return String((err && err.message) || err);
    if (err.code === 'timeout') return err.detail;
    if (err.status === 0) return 'Cannot reach the palgraph server. Is it running? Check the connection and try again.';
    if (err.status === 401) return 'This server needs an access token: paste it below.';
    if (err.status === 409 && err.code === 'thread_busy') {
      return 'This conversation is busy: an answer is already being written (409 thread_busy). It is shown below; wait for it or press Stop, then send again.';
    }
    return `${err.detail} (${err.status}${err.code ? ` ${err.code}` : ''})`;
  }

  function showError(err) {
    const msg = typeof err === 'string' ? err : describe(err);
    ui.errorText.textContent = msg;
    ui.tokenForm.hidden = !(err instanceof ApiError && err.status === 401);
    ui.error.hidden = false;
  }

  function hideError() {
    ui.error.hidden = true;
    ui.errorText.textContent = '';
  }

  // ---------------------------------------------------------------- SSE over fetch

  // Finds the end of the first complete event block in `buf`.
  function blockEnd(buf) {
    const m = /\r\n\r\n|\n\n|\r\r/.exec(buf);
    return m ? [m.index, m[0].length] : null;
  }

  function parseBlock(block) {
    let id = null;
    const data = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line === '' || line.startsWith(':')) continue; // comments: heartbeats
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (!data.length) return null;
    try {
      return { id, data: JSON.parse(data.join('\n')) };
    } catch (_) {
      return null;
    }
  }

  // Reads the event stream of `resp`; `touch` is called for every chunk (heartbeats too).
  async function readEvents(resp, onEvent, touch) {
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      touch();
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = blockEnd(buf)) !== null) {
        const block = buf.slice(0, cut[0]);
        buf = buf.slice(cut[0] + cut[1]);
        const ev = parseBlock(block);
        if (ev) onEvent(ev);
      }
    }
  }

  function watchdog(ms, onExpire) {
    let timer = setTimeout(onExpire, ms);
    return {
      touch() {
        clearTimeout(timer);
        timer = setTimeout(onExpire, ms);
      },
      stop() {
        clearTimeout(timer);
      },
    };
  }

  // ---------------------------------------------------------------- rich text

  // A small, safe Markdown subset: paragraphs, "- " lists, **bold**, [n] citation markers.
  function renderRich(target, text, citations) {
    const byMarker = new Map();
    for (const c of citations || []) byMarker.set(String(c.marker), c);
    const frag = document.createDocumentFragment();
    let list = null;
    let para = null;
    const inline = (parent, line) => {
      for (const part of line.split(/(\*\*[^*]+\*\*|\[\d+\])/)) {
        if (!part) continue;
        if (part.startsWith('**') && part.endsWith('**') && part.length > 4) {
          parent.append(h('strong', { text: part.slice(2, -2) }));
        } else if (part.includes('**') && !part.slice(part.indexOf('**') + 2).includes('*')) {
          // Bold still streaming in (its closing ** has not arrived): bold already, so the
          // text shown grows into the final one instead of flashing the asterisks.
          const open = part.indexOf('**');
          if (open > 0) parent.append(part.slice(0, open));
          parent.append(h('strong', { text: part.slice(open + 2) }));
        } else if (/^\[\d+\]$/.test(part)) {
          const c = byMarker.get(part.slice(1, -1));
          parent.append(h('span', { class: 'cite', title: c ? `${c.title}: ${c.quote}` : null, text: part }));
        } else {
          parent.append(part);
        }
      }
    };
    for (const line of String(text).split('\n')) {
      const item = /^\s*[-*]\s+(.*)$/.exec(line);
      if (item) {
        para = null;
        if (!list) {
          list = h('ul');
          frag.append(list);
        }
        const li = h('li');
        inline(li, item[1]);
        list.append(li);
      } else if (line.trim() === '') {
        list = null;
        para = null;
      } else {
        list = null;
        if (!para) {
          para = h('p');
          frag.append(para);
        } else {
          para.append(h('br'));
        }
        inline(para, line);
      }
    }
    target.replaceChildren(frag);
  }

  // A user's text with "@Document title" shown as mention chips.
  function renderUserText(target, text) {
    const titles = state.docs.map((d) => d.title).sort((a, b) => b.length - a.length);
    let rest = String(text);
    while (rest) {
      let best = null;
      for (const t of titles) {
        const i = rest.indexOf(`@${t}`);
        if (i >= 0 && (best === null || i < best.i)) best = { i, t };
      }
      if (!best) {
        target.append(rest);
        break;
      }
      if (best.i > 0) target.append(rest.slice(0, best.i));
      target.append(h('span', { class: 'mention', text: `@${best.t}` }));
      rest = rest.slice(best.i + best.t.length + 1);
    }
  }

  // ---------------------------------------------------------------- conversation view

  function addUser(text) {
    const e = h('article', { class: 'msg user', 'aria-label': 'You' });
    renderUserText(e, text);
    ui.messages.append(e);
    scrollToEnd();
    return e;
  }

  function answerLabel(type, value) {
    if (value === null || value === undefined) return null;
    if (type === 'doc_choice') {
      if (value === 'all') return 'All of these';
      const values = Array.isArray(value) ? value : [value];
      return values
        .map((v) => {
          const d = state.docs.find((x) => x.id === v);
          return d ? d.title : String(v);
        })
        .join(', ');
    }
    if (type === 'action_choice' && typeof value === 'string') {
      return value.charAt(0).toUpperCase() + value.slice(1);
    }
    return typeof value === 'string' ? value : JSON.stringify(value);
  }

  // A PalAssist prompt kept in the conversation as a muted line.
  function addPromptRecord(message, answer) {
    const e = h(
      'div',
      { class: 'msg system prompt-record', role: 'note' },
      h('span', { text: `PalAssist asked: ${message}` }),
      ' — ',
      answer === null
        ? h('span', { class: 'prompt-answer', text: 'Cancelled' })
        : h('span', null, 'answered: ', h('span', { class: 'prompt-answer', text: answer })),
    );
    ui.messages.append(e);
    scrollToEnd();
    return e;
  }

  function addErrorLine(parent, message) {
    const e = h('div', { class: 'msg error-line', role: 'alert', text: message });
    parent.append(e);
    scrollToEnd();
    return e;
  }

  // One assistant answer: text, citations, notices, the "Response interrupted" mark.
  class Answer {
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
        this.root.append(
          h('details', { class: 'citations' }, h('summary', { text: `Sources (${citations.length})` }), ol),
        );
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

  // PalReasoning: the current node's status line (each shown >= 300 ms, queued), the
  // documents found so far, the web query.
  class Reasoning {
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

    // The snapshot of a joined run: its last line at once, the documents of all.
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

    // Runs `fn` once every queued line had its time on screen.
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

  // The view of one run: PalReasoning, the streamed answer, connection notes.
  class Turn {
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

    token(messageId, content) {
      if (messageId !== this.messageId) {
        this.messageId = messageId;
        this.text = '';
      }
      this.text += content;
      this.ensureAnswer().setText(this.text, true);
      scrollToEnd();
    }

    partial(messageId, text) {
      this.messageId = messageId;
      this.text = text || '';
      if (this.text) this.ensureAnswer().setText(this.text, true);
    }

    dropAnswer() {
      if (this.answer) this.answer.root.remove();
      this.answer = null;
    }

    interrupted() {
      this.reasoning.clear();
      this.ensureAnswer().markInterrupted();
      scrollToEnd();
    }

    // A note on the connection ("Reconnecting in 2 s…" with a Retry button), or none.
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

  // ---------------------------------------------------------------- runs

  // The run this page follows. kind: chat | resume | cancel (a prompt's cancel) | join.
  class Live {
    constructor(threadId, turn, kind) {
      this.threadId = threadId;
      this.turn = turn;
      this.kind = kind;
      this.runId = null;
      this.lastEventId = null;
      this.ctrl = null;
      this.done = false;
      this.detached = false;
      this.probing = kind === 'join'; // not known to be running until its snapshot says so
      this.connected = false;
      this.backoff = BACKOFF_START_MS;
      this.retry = null;
      this.stopRequested = false;
      this.cancelSent = false;
      this.reloads = 0;
      this.historyEndsWithUser = false;
    }

    get active() {
      return !this.done && !this.detached && !this.probing;
    }
  }

  // Opens one stream of `live` (the first request or a reconnect) and reads it to its end.
  async function connect(live, open) {
    const ctrl = new AbortController();
    live.ctrl = ctrl;
    const dog = watchdog(IDLE_TIMEOUT_MS, () => ctrl.abort('timeout'));
    let opened = false;
    try {
      const resp = await open(ctrl.signal);
      if (!resp.ok) {
        dog.stop();
        return { kind: 'http', error: await errorFrom(resp), opened };
      }
      opened = true;
      live.connected = true;
      dog.touch();
      const run = resp.headers.get('x-run-id');
      if (run) live.runId = run;
      if (live.stopRequested && !live.cancelSent) sendCancel(live);
      if (live.kind === 'chat') refreshThreads(); // a new conversation shows up at once
      await readEvents(resp, (ev) => onEvent(live, ev), () => dog.touch());
      dog.stop();
      return { kind: 'ended', opened };
    } catch (e) {
      dog.stop();
      if (ctrl.signal.aborted) return { kind: ctrl.signal.reason === 'timeout' ? 'timeout' : 'aborted', opened };
      return { kind: 'network', error: e, opened };
    }
  }

  function reconnectRequest(live) {
    return (signal) =>
      fetch(`/chat/stream/${encodeURIComponent(live.threadId)}`, {
        headers: headers(Object.assign({ Accept: 'text/event-stream' }, live.lastEventId ? { 'Last-Event-ID': live.lastEventId } : {})),
        signal,
      });
  }

  // Follows `live` from its first request to a terminal event, reconnecting when the stream
  // drops. `onStartFailed(err)` handles a first request that never got a stream.
  async function drive(live, first, onStartFailed) {
    let r = await connect(live, first);
    let everOpened = r.opened;
    for (;;) {
      if (live.done || live.detached || r.kind === 'aborted') return;
      if (!everOpened) {
        // The first request got no stream: an error, not a reconnect.
        const err =
          r.kind === 'http'
            ? r.error
            : r.kind === 'timeout'
              ? new ApiError(0, 'timeout', `No response from the server for ${Math.round(IDLE_TIMEOUT_MS / 1000)} s. Try again.`)
              : new ApiError(0, 'network', String((r.error && r.error.message) || r.error));
        onStartFailed(err);
        return;
      }
      if (r.kind === 'http' && r.error.status < 500 && r.error.status !== 0) {
        fail(live, describe(r.error));
        return;
      }
      const why =
        r.kind === 'timeout'
          ? `No event from the server for ${Math.round(IDLE_TIMEOUT_MS / 1000)} s.`
          : r.kind === 'network'
            ? 'Connection lost.'
            : r.kind === 'http'
              ? `The server answered ${r.error.status}.`
              : 'The stream ended early.';
      await backoff(live, why);
      if (live.done || live.detached) return;
      r = await connect(live, reconnectRequest(live));
      everOpened = everOpened || r.opened;
    }
  }

  // Waits the current backoff delay (1 s doubling to 30 s), showing why and when.
  function backoff(live, why) {
    const delay = live.backoff;
    live.backoff = Math.min(live.backoff * 2, BACKOFF_MAX_MS);
    return new Promise((resolve) => {
      const until = Date.now() + delay;
      const done = () => {
        clearInterval(live.retry);
        live.retry = null;
        resolve();
      };
      const paint = () => {
        if (live.done || live.detached) return done();
        const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
        live.turn.connection(`${why} Reconnecting in ${left} s…`, done);
        if (Date.now() >= until) done();
      };
      live.retry = setInterval(paint, 250);
      paint();
    });
  }

  function onEvent(live, ev) {
    if (live.detached || live.done) return;
    if (ev.id) live.lastEventId = ev.id;
    live.backoff = BACKOFF_START_MS;
    live.turn.connection(null);
    const d = ev.data || {};
    switch (d.type) {
      case 'snapshot':
        applySnapshot(live, d);
        break;
      case 'status':
        live.turn.reasoning.push(d);
        break;
      case 'token':
        live.turn.token(d.message_id, d.content || '');
        break;
      case 'response':
        finishResponse(live, d);
        break;
      case 'interrupt':
        finishInterrupt(live, d);
        break;
      case 'error':
        fail(live, d.message || 'The run failed.');
        break;
      case 'cancelled':
        finishCancelled(live);
        break;
      default:
        break;
    }
  }

  function applySnapshot(live, s) {
    if (s.status === 'running' || s.status === 'pending') {
      live.probing = false;
      if (s.run_id) live.runId = s.run_id;
      live.turn.reasoning.restore(s.statuses || []);
      live.turn.partial(s.message_id, s.partial_text);
      if (state.live === live) updateComposer();
      return;
    }
    // Nothing runs any more.
    live.done = true;
    const wasFollowed = !live.probing;
    live.turn.remove();
    end(live);
    if (s.status === 'interrupted' && s.pending_interrupt) {
      if (!state.prompt || state.prompt.interrupt_id !== s.pending_interrupt.interrupt_id) {
        if (wasFollowed) reloadThread(live.threadId, live.reloads + 1);
        else showPrompt(s.pending_interrupt);
      }
    } else if (s.status === 'error') {
      addErrorLine(ui.messages, `The last run failed: ${s.error || 'unknown error'}`);
    } else if (live.historyEndsWithUser && !(s.result && s.result.response) && s.run_id) {
      // The last turn left no answer: stopped before any text (the history keeps no trace
      // of that; its run does).
      markStoppedWithoutText(live.threadId, s.run_id);
    } else if ((wasFollowed || live.historyEndsWithUser) && live.reloads < 2) {
      // It ended while we were away: the history holds its result (or its stop).
      reloadThread(live.threadId, live.reloads + 1);
    }
  }

  async function markStoppedWithoutText(threadId, runId) {
    let run;
    try {
      run = await api('GET', `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}`);
    } catch (_) {
      return;
    }
    if (state.threadId !== threadId || state.live || !run || run.status !== 'interrupted') return;
    const last = ui.messages.lastElementChild;
    if (!last || !last.classList.contains('user')) return;
    const a = new Answer();
    a.markInterrupted();
    ui.messages.append(a.root);
    scrollToEnd();
  }

  function finishResponse(live, d) {
    live.done = true;
    const t = live.turn;
    if (live.kind === 'cancel' || (d.cancelled && live.kind !== 'chat')) {
      // The answer to a prompt's Cancel is not shown: the muted line says it all.
      t.dropAnswer();
    } else {
      t.ensureAnswer().finish(d);
    }
    t.reasoning.whenDrained(() => t.reasoning.clear());
    end(live);
  }

  function finishInterrupt(live, p) {
    live.done = true;
    const t = live.turn;
    if (!t.text) t.dropAnswer();
    end(live);
    t.reasoning.whenDrained(() => {
      t.reasoning.clear();
      if (state.threadId === live.threadId && !state.live) showPrompt(p);
    });
  }

  function finishCancelled(live) {
    live.done = true;
    live.turn.interrupted();
    end(live);
  }

  function fail(live, message) {
    live.done = true;
    live.turn.reasoning.clear();
    if (live.turn.answer) live.turn.answer.markInterrupted();
    addErrorLine(live.turn.root, message);
    end(live);
  }

  // The page stops following `live` (the run goes on on the server).
  function detach(live) {
    live.detached = true;
    if (live.ctrl) live.ctrl.abort('detach');
    clearInterval(live.retry);
    live.turn.connection(null);
    if (state.live === live) state.live = null;
  }

  function end(live) {
    clearInterval(live.retry);
    live.turn.connection(null);
    if (state.live === live) state.live = null;
    updateComposer();
    refreshThreads();
  }

  async function sendCancel(live) {
    live.cancelSent = true;
    try {
      await api('POST', `/threads/${encodeURIComponent(live.threadId)}/cancel`);
    } catch (e) {
      if (live.done || live.detached) return;
      showError(`Could not stop the run: ${describe(e)} It may still be running.`);
      detach(live);
      live.turn.interrupted();
      updateComposer();
      return;
    }
    // The stream reports the stop (`cancelled`); if it does not in time, stop following.
    setTimeout(() => {
      if (live.done || live.detached) return;
      detach(live);
      live.turn.interrupted();
      updateComposer();
      refreshThreads();
    }, 5000);
  }

  function stop() {
    const live = state.live;
    if (!live || !live.active || live.stopRequested) return;
    live.stopRequested = true;
    updateComposer();
    // Before the stream has opened the run may not exist yet: the cancel goes out then.
    if (live.connected) sendCancel(live);
  }

  function jsonPost(path, body) {
    return (signal) =>
      fetch(path, {
        method: 'POST',
        headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
        body: JSON.stringify(body),
        signal,
      });
  }

  function setThread(id) {
    state.threadId = id;
    const want = id ? `#/c/${id}` : '#/';
    if (location.hash !== want) history.pushState(null, '', want);
    renderThreads();
  }

  async function send() {
    closeMentions();
    const draft = editor.read();
    const p = state.prompt;
    if (p && p.interrupt_type === 'text_input') {
      // The answer to the open prompt: a resume, never a new turn.
      if (!draft.text.trim()) return;
      editor.clear();
      answerPrompt({ type: 'text_input', value: draft.text.trim() }, draft.text.trim());
      return;
    }
    if (!draft.text.trim()) return;
    let strategy = null;
    const current = state.live;
    if (current) {
      if (current.active) {
        // The server's `interrupt` strategy: the streaming answer stops and is kept.
        strategy = 'interrupt';
        detach(current);
        current.turn.interrupted();
      } else {
        detach(current);
        current.turn.remove();
      }
    }
    if (p) {
      // The server abandons a pending prompt when a new message comes: keep it as a line.
      hidePrompt();
      addPromptRecord(p.message, null);
    }
    if (!state.threadId) setThread(uuid());
    const threadId = state.threadId;
    hideError();
    editor.clear();
    for (const w of ui.messages.querySelectorAll('.welcome')) w.remove();
    const userEl = addUser(draft.text);
    if (ui.messages.querySelectorAll('.msg.user').length === 1) setTitle(draft.text);
    const turn = new Turn();
    const live = new Live(threadId, turn, 'chat');
    state.live = live;
    updateComposer();
    const body = {
      message: draft.text,
      tiptap_json: draft.doc,
      thread_id: threadId,
      tagged_doc_ids: draft.mentions.map((m) => m.id),
      tagged_set_ids: [],
      action: ui.action.value || null,
      enable_web_search: ui.web.checked,
      client_turn_id: uuid(),
      multitask_strategy: strategy,
      on_disconnect: 'continue',
    };
    await drive(live, jsonPost('/chat', body), (err) => {
      userEl.remove();
      turn.remove();
      if (!ui.messages.querySelector('.msg.user')) setTitle('');
      live.done = true;
      end(live);
      if (editor.isEmpty()) editor.restore(draft);
      showError(err);
      // Show what is going on in the conversation: its history and the running answer.
      if (err.status === 409) reloadThread(threadId);
    });
  }

  function answerPrompt(value, label) {
    const p = state.prompt;
    if (!p || (state.live && state.live.active)) return;
    if (state.live) {
      // A join still probing the thread: this answer supersedes it.
      state.live.turn.remove();
      detach(state.live);
    }
    hidePrompt();
    hideError();
    const cancel = value.type === 'cancel';
    const record = addPromptRecord(p.message, cancel ? null : label);
    const turn = new Turn();
    const live = new Live(state.threadId, turn, cancel ? 'cancel' : 'resume');
    state.live = live;
    updateComposer();
    drive(live, jsonPost('/chat/resume', { thread_id: state.threadId, resume_value: value, on_disconnect: 'continue' }), (err) => {
      turn.remove();
      record.remove();
      live.done = true;
      end(live);
      showError(err);
      if (err.status === 400 || err.status === 409) reloadThread(live.threadId);
      else showPrompt(p);
    });
  }

  // Joins the thread's active run, if any (GET /chat/stream: a snapshot, then live events).
  function join(threadId, opts) {
    const turn = new Turn();
    const live = new Live(threadId, turn, 'join');
    live.historyEndsWithUser = !!(opts && opts.historyEndsWithUser);
    live.reloads = (opts && opts.reloads) || 0; // history reloads in a row, bounded
    if (state.live) detach(state.live);
    state.live = live;
    drive(live, reconnectRequest(live), (err) => {
      turn.remove();
      live.done = true;
      end(live);
      if (err.status !== 404) showError(err);
    });
  }

  // ---------------------------------------------------------------- PalAssist prompt

  function showPrompt(p) {
    state.prompt = p;
    ui.promptMessage.textContent = p.message || '';
    ui.prompt.dataset.type = p.interrupt_type || '';
    ui.promptOptions.replaceChildren();
    const textInput = p.interrupt_type === 'text_input';
    if (!textInput) {
      for (const o of p.options || []) {
        const label = o.label || (o.value === 'all' ? 'All of these' : String(o.value));
        ui.promptOptions.append(
          h('button', {
            type: 'button',
            class: 'button',
            dataset: { value: typeof o.value === 'string' ? o.value : JSON.stringify(o.value) },
            onclick: () => answerPrompt({ type: p.interrupt_type, value: o.value }, label),
            text: label,
          }),
        );
      }
    }
    ui.promptHint.hidden = !textInput;
    ui.prompt.hidden = false;
    updateComposer();
    if (textInput) ui.editor.focus();
    scrollToEnd();
  }

  function hidePrompt() {
    state.prompt = null;
    ui.prompt.hidden = true;
    ui.promptOptions.replaceChildren();
    updateComposer();
  }

  function updateComposer() {
    const live = state.live;
    const running = !!(live && live.active);
    ui.stop.hidden = !running;
    ui.stop.disabled = running && live.stopRequested;
    ui.stop.textContent = running && live.stopRequested ? 'Stopping…' : 'Stop';
    const textInput = !!(state.prompt && state.prompt.interrupt_type === 'text_input');
    ui.send.textContent = textInput ? 'Answer' : 'Send';
    ui.editor.dataset.placeholder = textInput ? 'Type your answer to PalAssist…' : DEFAULT_PLACEHOLDER;
    ui.editor.setAttribute('aria-label', textInput ? 'Your answer to PalAssist' : 'Message');
    for (const b of ui.promptOptions.querySelectorAll('button')) b.disabled = running;
    ui.promptCancel.disabled = running;
  }

  // ---------------------------------------------------------------- threads, history

  function setTitle(text) {
    const t = String(text || '').trim();
    ui.title.textContent = t ? (t.length > 80 ? `${t.slice(0, 80)}…` : t) : 'New conversation';
    document.title = t ? `${ui.title.textContent} · PalAssist` : 'PalAssist · palgraph';
  }

  function threadTitle(t) {
    const msgs = (t.values && t.values.messages) || [];
    const first = msgs.find((m) => m.type === 'human' || m.role === 'user');
    const text = first && typeof first.content === 'string' ? first.content : '';
    return text.trim() || 'New conversation';
  }

  function renderThreads() {
    ui.threadList.replaceChildren();
    for (const t of state.threads) {
      const badge = t.status === 'busy' ? 'answering' : t.status === 'interrupted' ? 'waiting for you' : t.status === 'error' ? 'failed' : '';
      let title = threadTitle(t);
      if (t.thread_id === state.threadId && title === 'New conversation') title = ui.title.textContent;
      ui.threadList.append(
        h(
          'li',
          null,
          h(
            'button',
            {
              type: 'button',
              class: 'thread-item',
              'aria-current': t.thread_id === state.threadId ? 'true' : null,
              dataset: { threadId: t.thread_id },
              title,
              onclick: () => openThread(t.thread_id),
            },
            h('span', { class: 'thread-title', text: title }),
            badge ? h('span', { class: 'thread-badge', text: badge }) : null,
          ),
        ),
      );
    }
    ui.threadsEmpty.hidden = state.threads.length > 0;
  }

  let threadsPending = null;
  function refreshThreads() {
    if (threadsPending) return threadsPending;
    threadsPending = api('POST', '/threads/search', { limit: 100, metadata: { graph_id: 'palassist' } })
      .then((list) => {
        state.threads = (Array.isArray(list) ? list : []).sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
        renderThreads();
      })
      .catch((e) => {
        if (e.status === 401) showError(e);
      })
      .finally(() => {
        threadsPending = null;
      });
    return threadsPending;
  }

  function renderHistory(hist) {
    let firstUser = null;
    for (const m of hist.messages || []) {
      const md = m.metadata || {};
      if (m.role === 'user') {
        if (firstUser === null) firstUser = m.content;
        addUser(m.content);
      } else if (md.kind === 'palassist_prompt') {
        addPromptRecord(m.content, answerLabel(md.interrupt_type, md.answer));
      } else {
        const a = new Answer();
        a.setText(m.content, false, md.citations);
        a.addExtras(md.citations, md.notices, md.action);
        if (md.interrupted) a.markInterrupted();
        ui.messages.append(a.root);
      }
    }
    setTitle(firstUser);
    scrollToEnd();
  }

  function welcome() {
    ui.messages.append(
      h(
        'div',
        { class: 'welcome' },
        h('h2', { text: 'Ask PalAssist about your compliance documents' }),
        h('p', { text: 'It finds the documents you mean, asks when unsure, and cites what it quotes.' }),
        h(
          'div',
          { class: 'examples' },
          EXAMPLES.map((x) =>
            h('button', {
              type: 'button',
              class: 'button',
              text: x,
              onclick: () => {
                editor.setText(x);
                ui.editor.focus();
              },
            }),
          ),
        ),
      ),
    );
  }

  // Shows a conversation: its history, its pending prompt, then its active run if any.
  async function openThread(id, opts) {
    // A reload (or the first load) keeps the error shown; a navigation clears it.
    const reloading = !!(opts && (opts.reload || opts.initial));
    if (state.live) detach(state.live);
    state.live = null;
    hidePrompt();
    if (!reloading) hideError();
    closeMentions();
    setThread(id);
    ui.messages.replaceChildren();
    setTitle('');
    updateComposer();
    const seq = ++state.openSeq;
    if (!id) {
      welcome();
      return;
    }
    let hist;
    try {
      hist = await api('GET', `/chat/history/${encodeURIComponent(id)}`);
    } catch (e) {
      if (seq === state.openSeq) showError(e);
      return;
    }
    if (seq !== state.openSeq) return;
    renderHistory(hist);
    if (hist.pending_interrupt) showPrompt(hist.pending_interrupt);
    const msgs = hist.messages || [];
    const known = (opts && opts.reload) || state.threads.some((t) => t.thread_id === id);
    if (!msgs.length && !hist.pending_interrupt && !known) {
      // A new conversation (or one that does not exist): nothing to join.
      welcome();
      return;
    }
    const last = msgs[msgs.length - 1];
    join(id, { historyEndsWithUser: !!last && last.role === 'user', reloads: (opts && opts.reloads) || 0 });
  }

  function reloadThread(id, reloads) {
    if (state.threadId === id) openThread(id, { reload: true, reloads: reloads || 0 });
  }

  function threadFromHash() {
    const m = /^#\/c\/([0-9a-fA-F-]{36})$/.exec(location.hash);
    return m ? m[1] : null;
  }

  // ---------------------------------------------------------------- documents

  function renderDocs() {
    ui.docList.replaceChildren();
    for (const d of state.docs) {
      ui.docList.append(
        h(
          'li',
          null,
          h(
            'button',
            {
              type: 'button',
              class: 'doc-item',
              title: `Mention “${d.title}” in the message`,
              'aria-label': `Mention ${d.title}`,
              dataset: { docId: d.id },
              onclick: () => editor.insertMention(d, null),
            },
            h('span', { class: 'doc-at', 'aria-hidden': 'true', text: '@' }),
            h('span', { class: 'doc-title', text: d.title }),
          ),
        ),
      );
    }
    ui.docsEmpty.hidden = state.docs.length > 0;
  }

  async function refreshDocs() {
    try {
      const list = await api('GET', '/documents');
      state.docs = Array.isArray(list) ? list : [];
      renderDocs();
    } catch (e) {
      showError(e);
    }
  }

  async function upload(files) {
    if (!files.length) return;
    const form = new FormData();
    for (const f of files) form.append('file', f, f.name);
    ui.uploadStatus.textContent = 'Uploading…';
    try {
      const resp = await fetch('/documents', { method: 'POST', headers: headers(), body: form });
      if (!resp.ok) throw await errorFrom(resp);
      const created = await resp.json();
      const n = Array.isArray(created) ? created.length : 1;
      ui.uploadStatus.textContent = `Uploaded ${n} document${n === 1 ? '' : 's'}.`;
      await refreshDocs();
    } catch (e) {
      ui.uploadStatus.textContent = '';
      showError(e instanceof ApiError ? e : new ApiError(0, 'network', String(e)));
    } finally {
      ui.upload.value = '';
    }
  }

  // ---------------------------------------------------------------- the editor (mentions)

  const mention = { open: false, items: [], index: 0, query: null };

  const editor = {
    // The message as plain text, as a TipTap document (mention nodes), and its mentions.
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
              const attrs = { id: n.dataset.id, label: n.dataset.label };
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
      return { text: text.replace(/\s+$/, ''), doc, mentions, nodes: Array.from(ui.editor.childNodes, (n) => n.cloneNode(true)) };
    },

    isEmpty() {
      return !ui.editor.textContent.trim() && !ui.editor.querySelector('.mention');
    },

    clear() {
      ui.editor.replaceChildren();
    },

    restore(draft) {
      ui.editor.replaceChildren(...draft.nodes);
    },

    setText(t) {
      ui.editor.replaceChildren(document.createTextNode(t));
      placeCaretAtEnd();
    },

    // Inserts a mention chip for `doc`, replacing the typed "@query" when given.
    insertMention(doc, q) {
      const chip = h('span', { class: 'mention', contenteditable: 'false', dataset: { id: doc.id, label: doc.title }, text: `@${doc.title}` });
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

  function placeCaretAtEnd() {
    const r = document.createRange();
    r.selectNodeContents(ui.editor);
    r.collapse(false);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(r);
  }

  // The "@query" right before the caret, if any.
  function mentionQuery() {
    const sel = window.getSelection();
    if (!sel.rangeCount || !sel.isCollapsed) return null;
    const node = sel.anchorNode;
    if (!node || node.nodeType !== Node.TEXT_NODE || !ui.editor.contains(node)) return null;
    const before = node.nodeValue.slice(0, sel.anchorOffset);
    const at = before.lastIndexOf('@');
    if (at < 0) return null;
    if (at > 0 && !/\s/.test(before[at - 1])) return null;
    const query = before.slice(at + 1).replace(/\u00a0/g, ' ');
    if (query.length > 60 || /\n/.test(query)) return null;
    return { node, start: at, end: sel.anchorOffset, query };
  }

  function matchingDocs(query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return state.docs.filter((d) => words.every((w) => d.title.toLowerCase().includes(w))).slice(0, 8);
  }

  function updateMentions() {
    const q = mentionQuery();
    const items = q ? matchingDocs(q.query) : [];
    if (!q || !items.length) return closeMentions();
    mention.open = true;
    mention.query = q;
    if (mention.items.map((d) => d.id).join() !== items.map((d) => d.id).join()) mention.index = 0;
    mention.items = items;
    renderMentions();
  }

  function renderMentions() {
    ui.mentionList.replaceChildren();
    mention.items.forEach((d, i) => {
      ui.mentionList.append(
        h('li', {
          id: `mention-opt-${i}`,
          role: 'option',
          'aria-selected': i === mention.index ? 'true' : 'false',
          dataset: { docId: d.id },
          text: d.title,
          onmousedown: (e) => {
            e.preventDefault();
            editor.insertMention(d, mention.query);
          },
        }),
      );
    });
    ui.mentionList.hidden = false;
    ui.editor.setAttribute('aria-activedescendant', `mention-opt-${mention.index}`);
  }

  function closeMentions() {
    mention.open = false;
    mention.items = [];
    mention.query = null;
    ui.mentionList.hidden = true;
    ui.mentionList.replaceChildren();
    ui.editor.removeAttribute('aria-activedescendant');
  }

  ui.editor.addEventListener('keydown', (e) => {
    if (e.isComposing) return;
    if (mention.open) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = mention.items.length;
        mention.index = (mention.index + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        renderMentions();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        editor.insertMention(mention.items[mention.index], mention.query);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        closeMentions();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      send();
    } else if (e.key === 'Enter' && e.shiftKey) {
      e.preventDefault();
      document.execCommand('insertLineBreak');
    }
  });

  ui.editor.addEventListener('input', () => {
    if (!ui.editor.textContent && !ui.editor.querySelector('.mention')) ui.editor.replaceChildren();
    updateMentions();
  });
  ui.editor.addEventListener('click', updateMentions);
  ui.editor.addEventListener('blur', () => setTimeout(closeMentions, 100));
  ui.editor.addEventListener('paste', (e) => {
    e.preventDefault();
    const text = (e.clipboardData || window.clipboardData).getData('text/plain');
    document.execCommand('insertText', false, text);
  });
  ui.editor.addEventListener('drop', (e) => e.preventDefault());

  // ---------------------------------------------------------------- wiring

  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  ui.stop.addEventListener('click', stop);
  ui.promptCancel.addEventListener('click', () => answerPrompt({ type: 'cancel', value: null }, null));
  ui.newChat.addEventListener('click', () => {
    openThread(null);
    ui.editor.focus();
  });
  ui.errorDismiss.addEventListener('click', hideError);
  ui.tokenForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = ui.tokenInput.value.trim();
    if (t) localStorage.setItem(TOKEN_KEY, t);
    else localStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  ui.upload.addEventListener('change', () => upload(Array.from(ui.upload.files || [])));
  window.addEventListener('popstate', () => {
    const id = threadFromHash();
    if (id !== state.threadId) openThread(id);
  });

  async function start() {
    await Promise.all([refreshDocs(), refreshThreads()]);
    await openThread(threadFromHash(), { initial: true });
    document.body.dataset.ready = 'true';
  }

  start();
})();
