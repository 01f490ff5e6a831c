// The conversations in the sidebar: search by title, open, rename (inline), delete (after
// a confirmation).

import { openThread } from './conversation.js';
import { confirmDialog } from './dialogs.js';
import { h, ui } from './dom.js';
import { showError } from './errors.js';
import { state } from './state.js';
import { deleteThread, renameThread, threadTitle } from './threads.js';

let renaming = null; // the id of the conversation being renamed

function badgeOf(t) {
  if (t.status === 'busy') return 'answering';
  if (t.status === 'interrupted') return 'waiting for you';
  if (t.status === 'error') return 'failed';
  return '';
}

function titleOf(t) {
  const title = threadTitle(t);
  return t.thread_id === state.threadId && title === 'New conversation' ? ui.title.textContent : title;
}

function renameRow(t, title) {
  const input = h('input', { class: 'rename-input', value: title, 'aria-label': `New title for the conversation “${title}”`, maxlength: '200' });
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    renaming = null;
    if (!save || input.value.trim() === title) return renderThreads();
    try {
      await renameThread(t.thread_id, input.value);
    } catch (e) {
      renderThreads();
      showError(e, { context: 'The conversation was not renamed.', retry: () => renameThread(t.thread_id, input.value).catch((x) => showError(x)) });
    }
    focusRow(t.thread_id, '.thread-item');
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      finish(true);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      finish(false).then(() => focusRow(t.thread_id, '.thread-item'));
    }
  });
  input.addEventListener('blur', () => finish(true));
  return input;
}

function focusRow(id, selector) {
  const row = ui.threadList.querySelector(`[data-thread-id="${id}"]`);
  const target = row && row.querySelector(selector);
  if (target) target.focus();
}

async function askDelete(t, title) {
  const ok = await confirmDialog({
    title: 'Delete this conversation?',
    text: `“${title}” and its answers will be deleted. This cannot be undone.`,
    ok: 'Delete',
  });
  if (!ok) return;
  try {
    await deleteThread(t.thread_id);
  } catch (e) {
    showError(e, { context: 'The conversation was not deleted.', retry: () => askDelete(t, title) });
    return;
  }
  if (state.threadId === t.thread_id) openThread(null);
  ui.threadSearch.focus();
}

function row(t) {
  const title = titleOf(t);
  const current = t.thread_id === state.threadId;
  const li = h('li', { class: `row${current ? ' current' : ''}`, dataset: { threadId: t.thread_id } });
  if (renaming === t.thread_id) {
    li.append(renameRow(t, title));
    return li;
  }
  const badge = badgeOf(t);
  li.append(
    h(
      'button',
      {
        type: 'button',
        class: 'thread-item',
        'aria-current': current ? 'true' : null,
        dataset: { threadId: t.thread_id },
        title,
        onclick: () => openThread(t.thread_id),
      },
      h('span', { class: 'thread-title', text: title }),
      badge ? h('span', { class: 'thread-badge', text: badge }) : null,
    ),
    h(
      'span',
      { class: 'row-actions' },
      h('button', {
        type: 'button',
        class: 'icon-button rename',
        'aria-label': `Rename “${title}”`,
        title: 'Rename',
        text: '✎',
        onclick: () => {
          renaming = t.thread_id;
          renderThreads(true);
          const input = ui.threadList.querySelector('.rename-input');
          input.focus();
          input.select();
        },
      }),
      h('button', {
        type: 'button',
        class: 'icon-button danger delete',
        'aria-label': `Delete “${title}”`,
        title: 'Delete',
        text: '✕',
        onclick: () => askDelete(t, title),
      }),
    ),
  );
  return li;
}

/** Lists the conversations whose title matches the search box (`force`: even while a title is typed). */
export function renderThreads(force) {
  if (!force && renaming && ui.threadList.contains(document.activeElement)) return;
  const query = ui.threadSearch.value.trim().toLowerCase();
  const shown = query ? state.threads.filter((t) => titleOf(t).toLowerCase().includes(query)) : state.threads;
  ui.threadList.replaceChildren(...shown.map(row));
  ui.threadsEmpty.hidden = state.threads.length > 0;
  ui.threadsNoMatch.hidden = !(query && state.threads.length && !shown.length);
  ui.threadsNoMatch.textContent = ui.threadsNoMatch.hidden ? '' : `No conversation matches “${ui.threadSearch.value.trim()}”.`;
}

ui.threadSearch.addEventListener('input', () => renderThreads());
ui.threadSearch.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && ui.threadSearch.value) {
    ui.threadSearch.value = '';
    renderThreads();
  }
});
