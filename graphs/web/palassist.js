// PalAssist's part of the chat page (the entry of its web module, served at
// /ext/palassist/): the documents panel with uploads, the document sets panel, the "@"
// sources (documents, then sets), the document viewer that citations open, and the welcome
// with examples. It uses only the page's interface, /js/page.js.

import { addMentionSource, addPanel, addWelcome, h, hasPanel, onGraph, setCitationOpener, setMessage } from '/js/page.js';
import { panel as docsPanel, refreshDocs } from './documents.js';
import { library } from './library.js';
import { panel as setsPanel, refreshSets, setMention } from './sets.js';
import './upload.js';
import { openCitation } from './viewer.js';

/** The welcome's examples: each answers as written with the sample documents. */
const EXAMPLES = [
  'What is the data retention period for customer records?',
  'Summarize the AML policy',
  'Compare the Data Retention Policy 2023 with the Data Retention Policy 2024',
];

addPanel('documents', docsPanel);
addPanel('document_sets', setsPanel);
addMentionSource({ panel: 'documents', items: () => library.docs, limit: 8 });
addMentionSource({ panel: 'document_sets', items: () => library.sets.map(setMention), limit: 4 });
setCitationOpener(openCitation);
onGraph(() => Promise.all([hasPanel('documents') ? refreshDocs() : null, hasPanel('document_sets') ? refreshSets() : null]));
addWelcome(() =>
  hasPanel('documents')
    ? h(
        'div',
        { class: 'welcome' },
        h('h2', { text: 'Ask PalAssist about your compliance documents' }),
        h('p', { text: 'It finds the documents you mean, asks when unsure, and cites what it quotes. Try one of these:' }),
        h(
          'div',
          { class: 'examples' },
          EXAMPLES.map((x) => h('button', { type: 'button', class: 'button example', text: x, onclick: () => setMessage(x) })),
        ),
      )
    : null,
);
