// Uploading .txt / .md files: read in the page, titled by their first "# Heading" (which
// is then left out of the text) or else by their file name, and sent as JSON documents.

import { api, showError } from '/js/page.js';
import { panel, refreshDocs, status } from './documents.js';

const input = panel.querySelector('#upload-input');
input.addEventListener('change', () => upload(Array.from(input.files || [])));

const ALLOWED = /\.(txt|md|markdown)$/i;

/** `{title, content}` of a file named `name` holding `text`. */
export function titleAndContent(name, text) {
  const src = String(text).replace(/^\uFEFF/, '');
  const stem = name.replace(/\.[^.]+$/, '') || name;
  const m = /^\s*#[ \t]+(.+?)[ \t#]*(?:\r?\n|$)/.exec(src);
  if (m) {
    const content = src.slice(m[0].length).replace(/^(?:[ \t]*\r?\n)+/, '');
    if (content.trim()) return { title: m[1].trim(), content };
  }
  return { title: stem, content: src };
}

async function readText(file) {
  const bytes = await file.arrayBuffer();
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (_) {
    throw new Error(`“${file.name}” is not UTF-8 text.`);
  }
}

/** Uploads `files`, then lists the documents again. */
export async function upload(files) {
  if (!files.length) return;
  const bad = files.find((f) => !ALLOWED.test(f.name));
  if (bad) {
    showError(`“${bad.name}”: only .txt and .md files can be uploaded.`);
    input.value = '';
    return;
  }
  status.textContent = 'Uploading…';
  let done = 0;
  try {
    for (const f of files) {
      const doc = titleAndContent(f.name, await readText(f));
      await api('POST', '/documents', doc);
      done += 1;
    }
    status.textContent = `Uploaded ${done} document${done === 1 ? '' : 's'}.`;
  } catch (e) {
    status.textContent = done ? `Uploaded ${done} of ${files.length} documents.` : '';
    const rest = files.slice(done);
    showError(e, { context: `“${rest[0].name}” was not uploaded.`, retry: () => upload(rest) });
  } finally {
    input.value = '';
    await refreshDocs();
  }
}
