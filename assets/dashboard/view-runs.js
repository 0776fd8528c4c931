// The runs list (`#/`): newest first, paged with "Older runs", updated live.
import { $, api, el, FINAL, formatCost, formatElapsed, formatTokens, issueLabel, notice } from './lib.js';
import { actionButtons, onRunChange, remember, runs } from './runs-store.js';

let nextCursor = null;
const FAILED = new Set(['failed', 'dead', 'timed_out', 'cancelled']);

function rowFor(run) {
  const issue = issueLabel(run);
  return el(
    'tr',
    { 'data-run-id': String(run.id) },
    el('td', { 'data-label': 'run' }, el('a', { href: `#/runs/${run.id}` }, `#${run.id}`)),
    el('td', { 'data-label': 'status' }, el('span', { class: `status status-${run.status}` }, run.status), failureReason(run)),
    el('td', { 'data-label': 'stage' }, run.stage),
    el('td', { 'data-label': 'issue' }, run.issueUrl ? el('a', { href: run.issueUrl, target: '_blank', rel: 'noopener' }, issue) : issue),
    el('td', { 'data-label': 'workspace' }, run.workspaceName ?? '–'),
    el('td', { 'data-label': 'elapsed', class: 'elapsed' }, formatElapsed(run)),
    el('td', { 'data-label': 'tokens' }, formatTokens(run.tokens)),
    el('td', { 'data-label': 'cost' }, formatCost(run.costUsd)),
    el('td', { 'data-label': '' }, ...actionButtons(run)),
  );
}

/** Why a run did not succeed, or why it is held, under its status: the first line, the whole text on hover. */
function failureReason(run) {
  if (run.status === 'held' && run.heldReason) {
    return el('span', { class: 'reason reason-held', title: run.heldReason }, run.heldReason.split(';')[0]);
  }
  if (!FAILED.has(run.status) || !run.lastError) return null;
  const first = run.lastError.split('\n')[0];
  return el('span', { class: 'reason', title: run.lastError }, first.length > 140 ? `${first.slice(0, 140)}…` : first);
}

/** The list says what to do next while it has no run at all. */
function showEmptyState() {
  $('#empty').hidden = runs.size > 0;
  $('#runs').hidden = runs.size === 0;
}

function renderRow(run) {
  const tbody = $('#runs tbody');
  const existing = tbody.querySelector(`tr[data-run-id="${run.id}"]`);
  const row = rowFor(run);
  if (existing) existing.replaceWith(row);
  else {
    // Newest first: insert before the first row with a smaller id.
    const after = [...tbody.children].find((tr) => Number(tr.dataset.runId) < run.id);
    tbody.insertBefore(row, after ?? null);
  }
  showEmptyState();
}

async function loadRuns(cursor) {
  const query = new URLSearchParams({ limit: '50' });
  if (cursor) query.set('cursor', cursor);
  const page = await api(`/api/runs?${query}`);
  // The stream may already have brought a newer state of a run than the page holds: remember() keeps it.
  for (const run of page.runs) remember(run);
  nextCursor = page.nextCursor;
  $('#more').hidden = !nextCursor;
  showEmptyState();
}

function tick() {
  for (const row of document.querySelectorAll('#runs tr[data-run-id]')) {
    const run = runs.get(Number(row.dataset.runId));
    if (run && !FINAL.has(run.status)) row.querySelector('.elapsed').textContent = formatElapsed(run);
  }
}

export const runsView = {
  section: '#runs-view',
  match: (hash) => (hash === '' || hash === '#/' ? {} : null),
  init() {
    onRunChange(renderRow);
    $('#more').addEventListener('click', () => loadRuns(nextCursor).catch((err) => notice(err.message)));
    setInterval(tick, 1000);
    return loadRuns();
  },
};
