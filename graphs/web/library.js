// What PalAssist's part of the page knows: the user's documents and document sets, and
// `markup`, which makes an element of static HTML (this module's own, never user text).

export const library = {
  docs: [], // {id, title, ...}: GET /documents
  sets: [], // {id, name, documents: [{id, title}], document_count}: GET /document-sets
};

/** The element written as `html` (static markup of these modules only). */
export function markup(html) {
  const t = document.createElement('template');
  t.innerHTML = html.trim();
  return t.content.firstElementChild;
}
