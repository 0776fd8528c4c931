// baton dashboard: plain ES module, no build step. Data from /api (session cookie), live updates
// from /api/events (EventSource, which resumes with Last-Event-ID on its own after a drop).

const FINAL = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'dead']);
const runs = new Map();
let nextCursor = null;
let currentRunId = null;
let statsTimer = null;

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' }, ...options });
  if (response.status === 401) {
    location.reload();
    throw new Error('session expired');
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
  return body;
}

function notice(text) {
  const box = $('#notice');
  box.textContent = text;
  box.hidden = !text;
}

function formatElapsed(run) {
  const start = run.startedAt ?? run.claimedAt ?? run.createdAt;
  const end = run.finishedAt ?? Date.now();
  let s = Math.max(0, Math.round((end - start) / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

const formatCost = (usd) => (usd === null || usd === undefined ? '–' : `$${Number(usd).toFixed(usd < 1 ? 4 : 2)}`);
const formatTokens = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString());

function actionButtons(run) {
  const buttons = [];
  if (!FINAL.has(run.status))
    buttons.push(el('button', { type: 'button', 'data-action': 'cancel', onclick: () => act(run.id, 'cancel') }, 'Cancel'));
  if (FINAL.has(run.status) && run.status !== 'succeeded')
    buttons.push(el('button', { type: 'button', 'data-action': 'retry', onclick: () => act(run.id, 'retry') }, 'Retry'));
  return buttons;
}

function rowFor(run) {
  const issue = run.number === null ? `${run.owner}/${run.repo}` : `${run.owner}/${run.repo}#${run.number}`;
  return el(
    'tr',
    { 'data-run-id': String(run.id) },
    el('td', { 'data-label': 'run' }, el('a', { href: `#/runs/${run.id}` }, `#${run.id}`)),
    el('td', { 'data-label': 'status', class: `status status-${run.status}` }, run.status),
    el('td', { 'data-label': 'stage' }, run.stage),
    el('td', { 'data-label': 'issue' }, run.issueUrl ? el('a', { href: run.issueUrl, target: '_blank', rel: 'noopener' }, issue) : issue),
    el('td', { 'data-label': 'workspace' }, run.workspaceName ?? '–'),
    el('td', { 'data-label': 'elapsed', class: 'elapsed' }, formatElapsed(run)),
    el('td', { 'data-label': 'tokens' }, formatTokens(run.tokens)),
    el('td', { 'data-label': 'cost' }, formatCost(run.costUsd)),
    el('td', { 'data-label': '' }, ...actionButtons(run)),
  );
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
}

async function loadRuns(cursor) {
  const query = new URLSearchParams({ limit: '50' });
  if (cursor) query.set('cursor', cursor);
  const page = await api(`/api/runs?${query}`);
  for (const run of page.runs) {
    // The stream may already have brought a newer state of this run than the page holds.
    const known = runs.get(run.id);
    if (known && known.updatedAt > run.updatedAt) continue;
    runs.set(run.id, run);
    renderRow(run);
  }
  nextCursor = page.nextCursor;
  $('#more').hidden = !nextCursor;
}

async function loadStats() {
  const stats = await api('/api/queue/stats');
  const set = (name, value) => ($(`[data-stat="${name}"]`).textContent = value);
  set('queued', stats.queued);
  set('running', stats.running + stats.provisioning);
  set('dead', stats.dead);
  set('tokens', formatTokens(stats.today.tokens));
  set('cost', formatCost(stats.today.costUsd));
  $('#paused-flag').hidden = !stats.paused;
  $('#pause').hidden = stats.paused;
  $('#resume').hidden = !stats.paused;
}

function refreshStatsSoon() {
  clearTimeout(statsTimer);
  statsTimer = setTimeout(() => loadStats().catch((err) => notice(err.message)), 250);
}

async function act(runId, action) {
  try {
    const { run } = await api(`/api/runs/${runId}/${action}`, { method: 'POST' });
    runs.set(run.id, run);
    renderRow(run);
    if (currentRunId === run.id) renderRunDetails(run);
    notice('');
  } catch (err) {
    notice(`${action} failed: ${err.message}`);
  }
}

async function queueAction(action) {
  try {
    await api(`/api/queue/${action}`, { method: 'POST' });
    await loadStats();
  } catch (err) {
    notice(`${action} failed: ${err.message}`);
  }
}

function timelineItem(event) {
  const change = event.toStatus ? ` → ${event.toStatus}` : '';
  const detail = event.data?.error ?? event.data?.reason ?? '';
  return el(
    'li',
    { 'data-event-id': String(event.id) },
    el('time', {}, new Date(event.createdAt).toLocaleTimeString()),
    `${event.type}${change}`,
    detail ? ` (${detail})` : '',
  );
}

function renderRunDetails(run) {
  $('#run-title').textContent = `Run #${run.id}: ${run.stage} ${run.owner}/${run.repo}${run.number === null ? '' : `#${run.number}`}`;
  const details = $('#run-details');
  details.replaceChildren();
  const fields = [
    ['status', el('span', { class: `status status-${run.status}`, id: 'run-status' }, run.status)],
    ['issue', run.issueUrl ? el('a', { href: run.issueUrl, target: '_blank', rel: 'noopener' }, run.issueUrl) : '–'],
    ['workspace', run.workspaceName ?? '–'],
    ['attempts', `${run.attempts} of ${run.maxAttempts}`],
    ['elapsed', formatElapsed(run)],
    ['tokens', formatTokens(run.tokens)],
    ['cost', formatCost(run.costUsd)],
    ['summary', run.summary ?? '–'],
    ['error', run.lastError ?? '–'],
  ];
  for (const [name, value] of fields) details.append(el('dt', {}, name), el('dd', {}, value));
  $('#run-actions').replaceChildren(...actionButtons(run));
}

async function showRun(id) {
  currentRunId = id;
  $('#runs-view').hidden = true;
  $('#run-view').hidden = false;
  $('#timeline').replaceChildren();
  $('#log').textContent = '';
  try {
    const { run, timeline, log } = await api(`/api/runs/${id}`);
    if (currentRunId !== id) return;
    runs.set(run.id, run);
    renderRunDetails(run);
    $('#timeline').replaceChildren(...timeline.map(timelineItem));
    $('#log').textContent = log ? `${log}\n` : '';
  } catch (err) {
    notice(err.message);
  }
}

function showList() {
  currentRunId = null;
  $('#run-view').hidden = true;
  $('#runs-view').hidden = false;
}

function route() {
  const match = /^#\/runs\/(\d+)$/.exec(location.hash);
  if (match) showRun(Number(match[1]));
  else showList();
}

function onEvent(message) {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch {
    return;
  }
  if (event.run) {
    runs.set(event.run.id, event.run);
    renderRow(event.run);
  }
  if (event.toStatus) refreshStatsSoon();
  if (currentRunId !== event.runId) return;
  if (event.run) renderRunDetails(event.run);
  if (event.type === 'run:progress') {
    const lines = Array.isArray(event.data?.lines) ? event.data.lines : [];
    const log = $('#log');
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.append(lines.map((line) => `${line}\n`).join(''));
    if (atBottom) log.scrollTop = log.scrollHeight;
  } else if (!$(`#timeline li[data-event-id="${event.id}"]`)) {
    $('#timeline').append(timelineItem(event));
  }
}

function connect() {
  const source = new EventSource('/api/events');
  source.onopen = () => $('#live').classList.add('on');
  source.onerror = () => $('#live').classList.remove('on');
  source.onmessage = onEvent;
}

function tick() {
  for (const row of document.querySelectorAll('#runs tr[data-run-id]')) {
    const run = runs.get(Number(row.dataset.runId));
    if (run && !FINAL.has(run.status)) row.querySelector('.elapsed').textContent = formatElapsed(run);
  }
}

$('#pause').addEventListener('click', () => queueAction('pause'));
$('#resume').addEventListener('click', () => queueAction('resume'));
$('#more').addEventListener('click', () => loadRuns(nextCursor).catch((err) => notice(err.message)));
window.addEventListener('hashchange', route);
setInterval(tick, 1000);

// Subscribe first so nothing between the first page and the stream is lost; rows are keyed by id.
connect();
Promise.all([loadRuns(), loadStats()]).catch((err) => notice(err.message));
route();
document.body.dataset.ready = 'true';
