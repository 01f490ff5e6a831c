// What extensions add to the page (their interface is page.js): sidebar panels shown for
// the graphs that ask for them, sources of @ mentions, the opener of citations, welcomes,
// and work to do whenever the page's graph changes. The server names each extension's entry
// module in the index (`<meta name="palgraph-module">`); the page imports them at start.

import { showError } from './errors.js';

/** Everything extensions have added. */
export const added = {
  panels: [], // {name, element}: shown while the graph asks for panel `name`
  mentionSources: [], // {panel, items, limit}: see page.js, addMentionSource
  citationOpener: null, // (citation) => void
  welcomes: [], // () => Element | null
  graphHooks: [], // async () => void
  responseHooks: [], // (response event) => void
};

/** Imports the extension modules the server names, in order; one that fails is said. */
export async function loadExtensions() {
  for (const meta of document.querySelectorAll('meta[name="palgraph-module"]')) {
    try {
      await import(meta.content);
    } catch (e) {
      console.error(`the page module ${meta.content} failed`, e);
      showError(`A part of this page (${meta.content}) could not be loaded: ${e.message || e}`);
    }
  }
}

/** Runs each extension's work for the graph the page now talks to. */
export async function graphChanged() {
  await Promise.all(
    added.graphHooks.map(async (hook) => {
      try {
        await hook();
      } catch (e) {
        console.error('a page module failed on a graph change', e);
      }
    }),
  );
}

/** Tells the extensions of a turn's answer (the `response` event). */
export function responded(event) {
  for (const hook of added.responseHooks) {
    try {
      hook(event);
    } catch (e) {
      console.error('a page module failed on an answer', e);
    }
  }
}

/** The mention sources of the panels in use (`active(panel)`: whether the graph has it). */
export function mentionSources(active) {
  return added.mentionSources.filter((s) => !s.panel || active(s.panel));
}

/** Every item the panels in use can mention: `{id, title, kind?}`. */
export function mentionables(active) {
  return mentionSources(active).flatMap((s) => s.items());
}

/** An extension's welcome for the current graph, if one has one. */
export function extensionWelcome() {
  for (const w of added.welcomes) {
    const e = w();
    if (e) return e;
  }
  return null;
}
