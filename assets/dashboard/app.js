// baton dashboard: plain ES modules, no build step. Data from /api (session cookie), live updates
// from /api/events (EventSource, which resumes with Last-Event-ID on its own after a drop).
//
// Each view is a module exporting `{ section, match(hash) → params | null, init?(), show?(params),
// hide?(), onEvent?(event) }`; adding a page is a new `view-*.js`, its <section> in index.html and
// one line in VIEWS below.
import { $, api, formatCost, formatTokens, notice } from './lib.js';
import { remember } from './runs-store.js';
import { deliveriesView } from './view-deliveries.js';
import { issueView } from './view-issue.js';
import { runView } from './view-run.js';
import { runsView } from './view-runs.js';
import { conversationPanel } from './view-transcript.js';
import { usageView } from './view-usage.js';

const VIEWS = [runsView, runView, issueView, usageView, deliveriesView];
let statsTimer = null;

// Who is logged in, and with which scope: a read-only token sees no buttons it could not use
// (the server refuses them anyway).
async function loadIdentity() {
  const { token } = await api('/api/me');
  document.body.dataset.scope = token.scope;
  $('#whoami').textContent = `${token.name} · ${token.scope}`;
}

async function loadStats() {
  const stats = await api('/api/queue/stats');
  const set = (name, value) => ($(`[data-stat="${name}"]`).textContent = value);
  set('queued', stats.queued);
  set('held', stats.held ?? 0);
  set('running', stats.running + stats.provisioning);
  set('failed', stats.failed);
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

async function queueAction(action) {
  try {
    await api(`/api/queue/${action}`, { method: 'POST' });
    await loadStats();
  } catch (err) {
    notice(`${action} failed: ${err.message}`);
  }
}

let current = null;

function route() {
  let params = null;
  const view = VIEWS.find((v) => (params = v.match(location.hash))) ?? runsView;
  if (current && current !== view) current.hide?.();
  for (const v of VIEWS) $(v.section).hidden = v !== view;
  current = view;
  view.show?.(params ?? {});
  // The run and issue pages show the conversation with the agent below their own parts.
  conversationPanel.show(location.hash);
}

function onEvent(message) {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch {
    return;
  }
  if (event.run) remember(event.run);
  if (event.toStatus) refreshStatsSoon();
  for (const view of VIEWS) view.onEvent?.(event);
  conversationPanel.onEvent(event);
}

function connect() {
  const source = new EventSource('/api/events');
  source.onopen = () => $('#live').classList.add('on');
  source.onerror = () => $('#live').classList.remove('on');
  source.onmessage = onEvent;
}

$('#pause').addEventListener('click', () => queueAction('pause'));
$('#resume').addEventListener('click', () => queueAction('resume'));
window.addEventListener('hashchange', route);

// Subscribe first so nothing between the first page and the stream is lost; runs are keyed by id.
connect();
Promise.all([loadIdentity(), ...VIEWS.map((view) => view.init?.()), loadStats()]).catch((err) => notice(err.message));
route();
document.body.dataset.ready = 'true';
