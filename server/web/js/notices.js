// Notices of an answer ("Web search is off for comparisons", ...): PalAssist sends them as
// `notices` (on the response event and in the answer message's metadata), never in the text.
// Answers stored before that carry them at the top of the text as `_Note: ..._` paragraphs:
// the page shows each once, in the answer's notice box, and takes them out of the text.

const NOTE = /^\s*_Note: ([\s\S]*?)_(?:\n\s*\n|\s*$)/;
const OPEN_NOTE = /^\s*_Note: ([\s\S]*)$/;

/** `{notices, body}`: the `_Note: ..._` paragraphs at the top of `text`, and the rest. */
export function splitNotices(text) {
  let body = String(text || '');
  const notices = [];
  for (;;) {
    const m = NOTE.exec(body);
    if (!m) break;
    notices.push(m[1].trim());
    body = body.slice(m[0].length);
  }
  // A note still streaming in (its closing underscore has not arrived).
  const open = OPEN_NOTE.exec(body);
  if (open && !/\n\s*\n/.test(open[1])) {
    notices.push(open[1].trim());
    body = '';
  }
  return { notices: notices.filter(Boolean), body };
}

/** The notices of both lists, each once, in order. */
export function mergeNotices(...lists) {
  const seen = new Set();
  const out = [];
  for (const n of lists.flat()) {
    const s = String(n || '').trim();
    const key = s.replace(/\s+/g, ' ').replace(/[.\s]+$/, '').toLowerCase();
    if (!s || seen.has(key)) continue;
    seen.add(key);
    out.push(s);
  }
  return out;
}
