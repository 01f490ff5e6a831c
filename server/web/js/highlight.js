// Finds a quoted passage in rendered text and marks it (<mark>), whatever the Markdown
// around it: whitespace, case and emphasis markers (* _ `) are ignored when matching.

const SKIP = /[*_`]/;

function normalized(s) {
  let out = '';
  let space = true;
  for (const ch of s) {
    if (SKIP.test(ch)) continue;
    if (/\s/.test(ch)) {
      if (!space) out += ' ';
      space = true;
    } else {
      out += ch.toLowerCase();
      space = false;
    }
  }
  return out.trim();
}

// The text of `root` normalized as above, and for each of its characters the text node and
// offset it comes from.
function textMap(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let text = '';
  const at = [];
  let space = true;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (let i = 0; i < n.data.length; i++) {
      const ch = n.data[i];
      if (SKIP.test(ch)) continue;
      if (/\s/.test(ch)) {
        if (space) continue;
        text += ' ';
        space = true;
      } else {
        text += ch.toLowerCase();
        space = false;
      }
      at.push([n, i]);
    }
  }
  return { text, at };
}

/**
 * Marks the first place `quote` occurs in `root` (a quote cut short with "…" matches its
 * beginning); returns the first <mark>, or null when the passage is not there.
 */
export function highlight(root, quote) {
  const full = normalized(String(quote || '').replace(/(…|\.\.\.)\s*$/, ''));
  if (!full) return null;
  const { text, at } = textMap(root);
  let needle = full;
  let i = text.indexOf(needle);
  // A passage edited since it was cited: try its beginning.
  for (const n of [120, 60]) {
    if (i >= 0 || full.length <= n) break;
    needle = full.slice(0, n).trim();
    i = text.indexOf(needle);
  }
  if (i < 0) return null;
  const [startNode, startOff] = at[i];
  const [endNode, endOff] = at[i + needle.length - 1];
  // The text nodes from start to end, each wrapped (from the last, so offsets stay right).
  const nodes = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  walker.currentNode = startNode;
  for (let n = startNode; n; n = walker.nextNode()) {
    nodes.push(n);
    if (n === endNode) break;
  }
  let first = null;
  for (let k = nodes.length - 1; k >= 0; k--) {
    const n = nodes[k];
    const s = n === startNode ? startOff : 0;
    const e = n === endNode ? endOff + 1 : n.data.length;
    if (s >= e || !n.data.slice(s, e).trim()) continue;
    const range = document.createRange();
    range.setStart(n, s);
    range.setEnd(n, e);
    const mark = document.createElement('mark');
    range.surroundContents(mark);
    first = mark;
  }
  return first;
}
