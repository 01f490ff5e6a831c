// `h`, the one way the pages (chat and inspector) build DOM nodes.

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
