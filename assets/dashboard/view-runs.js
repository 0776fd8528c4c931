// The runs list (`#/`, filters in the address: `#/?status=failed&q=login`): newest first, paged
// with "Older runs" (the API's keyset cursor), updated live.
import { $, api, el, FINAL, formatCost, formatDateTime, formatElapsed, formatTokens, issueLabel, namedForge, notice } from './lib.js';
import { actionButtons, onRunChange, remember, runs } from './runs-store.js';

/** The filters the form sets, as `GET /api/runs` names them (docs/api.md, "List runs"). */
const FILTERS = ['status', 'stage', 'repo', 'q', 'since', 'until'];
/** The time choices: how far back `since` goes. */
const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
/** Status choices that stand for several statuses. */
const STATUS_GROUPS = { live: 'queued,provisioning,running', failing: 'failed,dead,timed_out' };
const FAILED = new Set(['failed', 'dead', 'timed_out', 'cancelled', 'expired']);

let nextCursor = null;
/** The filters of the list shown (from the address), and the ids it holds in order. */
let filters = {};
const shown = new Set();
let loading = null;

function rowFor(run) {
  const issue = issueLabel(run);
  return el(
    'tr',
    { 'data-run-id': String(run.id) },
    el('td', { 'data-label': 'run' }, el('a', { href: `#/runs/${run.id}` }, `#${run.id}`)),
    el('td', { 'data-label': 'status' }, el('span', { class: `status status-${run.status}` }, run.status), failureReason(run)),
    el('td', { 'data-label': 'stage' }, run.stage),
    el(
      'td',
      { 'data-label': 'issue' },
      run.number === null ? issue : el('a', { class: 'issue-link', href: issueHref(run), title: 'this issue through its stages' }, issue),
      run.issueUrl ? el('a', { class: 'forge', href: run.issueUrl, target: '_blank', rel: 'noopener', title: 'on the forge' }, ' ↗') : null,
      run.payload?.title ? el('span', { class: 'title' }, String(run.payload.title)) : null,
    ),
    el('td', { 'data-label': 'created' }, el('time', { datetime: new Date(run.createdAt).toISOString() }, formatDateTime(run.createdAt))),
    el('td', { 'data-label': 'workspace' }, run.workspaceName ?? '–'),
    el('td', { 'data-label': 'elapsed', class: 'elapsed' }, formatElapsed(run)),
    el('td', { 'data-label': 'tokens' }, formatTokens(run.tokens)),
    el('td', { 'data-label': 'cost' }, formatCost(run.costUsd)),
    el('td', { 'data-label': '' }, ...actionButtons(run)),
  );
}

/** The issue's (or pull request's) SDLC view in this dashboard. */
const issueHref = (run) =>
  `#/issues/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}/${run.number}` +
  (namedForge(run.forge) ? `?forge=${run.forge}` : '');

/**
 * Why a run did not succeed, or why it is held, under its status: the words first (their first
 * line, the whole text on hover), the machine-readable kind after them, smaller.
 */
function failureReason(run) {
  if (run.status === 'held' && run.heldReason) {
    return el('span', { class: 'reason reason-held', title: run.heldReason }, run.heldReason.split(';')[0]);
  }
  if (!FAILED.has(run.status) || !run.failure) return null;
  const first = run.failure.message.split('\n')[0];
  return el(
    'span',
    { class: 'reason', title: run.failure.message },
    el('span', { class: 'reason-text' }, first.length > 140 ? `${first.slice(0, 140)}…` : first),
    run.failure.code ? el('code', { class: 'reason-code' }, run.failure.code) : null,
  );
}

const filtering = () => FILTERS.some((key) => filters[key]);

/** With no run at all the list says how to start one; with filters, that none matches. */
function showEmptyState() {
  const empty = shown.size === 0 && !loading;
  $('#empty').hidden = !empty || filtering();
  $('#no-match').hidden = !empty || !filtering();
  $('#runs').hidden = shown.size === 0;
}

/** Whether a run the stream brought belongs in the list as filtered (what the client can tell; the server decides the rest). */
function matches(run) {
  if (filters.q || filters.until) return false;
  if (filters.status && !expandStatus(filters.status).split(',').includes(run.status)) return false;
  if (filters.stage && run.stage !== filters.stage) return false;
  if (filters.repo && `${run.owner}/${run.repo}` !== filters.repo) return false;
  if (filters.since && run.createdAt < sinceOf(filters.since)) return false;
  return true;
}

function renderRow(run) {
  const tbody = $('#runs tbody');
  const existing = tbody.querySelector(`tr[data-run-id="${run.id}"]`);
  if (!existing && !shown.has(run.id)) {
    // Newer runs arrive live; older ones only through the pages, or a gap would open.
    const newest = Math.max(0, ...shown);
    if (run.id < newest || !matches(run)) return;
  }
  const row = rowFor(run);
  if (existing) existing.replaceWith(row);
  else {
    shown.add(run.id);
    // Newest first: insert before the first row with a smaller id.
    const after = [...tbody.children].find((tr) => Number(tr.dataset.runId) < run.id);
    tbody.insertBefore(row, after ?? null);
  }
  showEmptyState();
}

const expandStatus = (value) => STATUS_GROUPS[value] ?? value;
const sinceOf = (value) => (RANGES[value] ? Date.now() - RANGES[value] : Date.parse(value));

/** The API's query for the filters in the address (the time range's words become a moment). */
function apiQuery(cursor) {
  const query = new URLSearchParams({ limit: '50' });
  for (const key of FILTERS) {
    const value = filters[key];
    if (!value) continue;
    if (key === 'status') query.set(key, expandStatus(value));
    else if (key === 'since') query.set(key, String(sinceOf(value)));
    else query.set(key, value);
  }
  if (cursor) query.set('cursor', cursor);
  return query;
}

async function loadRuns(cursor) {
  const started = (loading = apiQuery(cursor).toString());
  try {
    const page = await api(`/api/runs?${started}`);
    if (loading !== started) return;
    for (const run of page.runs) {
      shown.add(run.id);
      // The stream may already have brought a newer state of a run than the page holds: remember() keeps it.
      if (!remember(run)) renderRow(runs.get(run.id));
    }
    const names = $('#stage-names');
    for (const stage of new Set(page.runs.map((run) => run.stage)))
      if (![...names.options].some((o) => o.value === stage)) names.append(el('option', { value: stage }));
    nextCursor = page.nextCursor;
    $('#more').hidden = !nextCursor;
    $('#runs-view').dataset.loaded = String(shown.size);
  } catch (err) {
    notice(err.message);
  } finally {
    if (loading === started) loading = null;
    showEmptyState();
  }
}

/** The filters of `#/?…`, only the known ones. */
function parseHash(hash) {
  const at = hash.indexOf('?');
  const params = new URLSearchParams(at === -1 ? '' : hash.slice(at + 1));
  return Object.fromEntries(FILTERS.filter((key) => params.get(key)).map((key) => [key, params.get(key)]));
}

function fillForm() {
  const form = $('#runs-filter');
  for (const key of FILTERS) if (form.elements[key]) form.elements[key].value = filters[key] ?? '';
  // A range from a link that is no choice of the menu is kept as a moment.
  const since = form.elements.since;
  if (filters.since && since.value !== filters.since) {
    since.append(el('option', { value: filters.since }, `since ${formatDateTime(sinceOf(filters.since))}`));
    since.value = filters.since;
  }
}

function tick() {
  for (const row of document.querySelectorAll('#runs tr[data-run-id]')) {
    const run = runs.get(Number(row.dataset.runId));
    if (run && !FINAL.has(run.status)) row.querySelector('.elapsed').textContent = formatElapsed(run);
  }
}

export const runsView = {
  section: '#runs-view',
  match: (hash) => (hash === '' || hash === '#/' || hash.startsWith('#/?') ? parseHash(hash) : null),
  init() {
    onRunChange(renderRow);
    $('#more').addEventListener('click', () => loadRuns(nextCursor));
    $('#runs-filter').addEventListener('submit', (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      const query = new URLSearchParams();
      for (const key of FILTERS) {
        const value = String(form.get(key) ?? '').trim();
        if (value) query.set(key, value);
      }
      location.hash = query.size ? `#/?${query}` : '#/';
    });
    $('#runs-filter').addEventListener('reset', () => setTimeout(() => (location.hash = '#/')));
    setInterval(tick, 1000);
  },
  show(params) {
    const same = JSON.stringify(params) === JSON.stringify(filters) && (shown.size > 0 || loading);
    if (same) return;
    filters = params;
    fillForm();
    shown.clear();
    $('#runs tbody').replaceChildren();
    $('#more').hidden = true;
    delete $('#runs-view').dataset.loaded;
    return loadRuns();
  },
};
