// The runs the page knows, by id, and the actions on them. Views render from here and the event
// stream updates it, so a run shown in two places never disagrees with itself.
import { api, el, FINAL, notice } from './lib.js';

export const runs = new Map();
const listeners = new Set();

/** Calls `listener(run)` whenever a run's known state changes. */
export function onRunChange(listener) {
  listeners.add(listener);
}

/** Keeps the newer of the known and the given state of a run; true when it changed. */
export function remember(run, { force = false } = {}) {
  const known = runs.get(run.id);
  if (!force && known && known.updatedAt > run.updatedAt) return false;
  runs.set(run.id, run);
  for (const listener of listeners) listener(run);
  return true;
}

export async function act(runId, action) {
  try {
    const { run } = await api(`/api/runs/${runId}/${action}`, { method: 'POST' });
    remember(run, { force: true });
    notice('');
  } catch (err) {
    notice(`${action} failed: ${err.message}`);
  }
}

export function actionButtons(run) {
  const buttons = [];
  if (!FINAL.has(run.status))
    buttons.push(
      el('button', { type: 'button', class: 'operate', 'data-action': 'cancel', onclick: () => act(run.id, 'cancel') }, 'Cancel'),
    );
  if (FINAL.has(run.status) && run.status !== 'succeeded')
    buttons.push(el('button', { type: 'button', class: 'operate', 'data-action': 'retry', onclick: () => act(run.id, 'retry') }, 'Retry'));
  return buttons;
}
