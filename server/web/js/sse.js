// Server-sent events over fetch (EventSource cannot POST or send our own headers): a parser
// of the `text/event-stream` body, and a watchdog for silent streams.

// Finds the end of the first complete event block in `buf`.
function blockEnd(buf) {
  const m = /\r\n\r\n|\n\n|\r\r/.exec(buf);
  return m ? [m.index, m[0].length] : null;
}

// One event block: its id and its JSON data, or null (comments, heartbeats, bad JSON).
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

/** Reads the event stream of `resp`; `touch` is called for every chunk (heartbeats too). */
export async function readEvents(resp, onEvent, touch) {
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

/** Calls `onExpire` when `touch` was not called for `ms`. */
export function watchdog(ms, onExpire) {
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
