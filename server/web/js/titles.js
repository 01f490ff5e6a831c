// What a thread is called where threads are listed: the title its user gave it
// (`metadata.title`), else its first message, else the first text of its state (a graph
// without messages, e.g. the jokes graph's `topic`).

/** A conversation's title given by its user (metadata.title), if any. */
export function customTitle(t) {
  const v = t && t.metadata && t.metadata.title;
  return typeof v === 'string' && v.trim() ? v.trim() : null;
}

/** The thread's first message (or first text of its state), trimmed; '' when it has none. */
export function firstText(t) {
  const values = (t && t.values && typeof t.values === 'object') ? t.values : {};
  const msgs = Array.isArray(values.messages) ? values.messages : [];
  const first = msgs.find((m) => m && (m.type === 'human' || m.role === 'user'));
  if (first && typeof first.content === 'string' && first.content.trim()) return first.content.trim();
  for (const v of Object.values(values)) {
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return '';
}

/** How a thread is listed: its title, else its first message; `fallback` without either. */
export function threadTitle(t, fallback = 'New conversation') {
  return customTitle(t) || firstText(t) || fallback;
}
