// One run (`#/runs/ID`): details, actions, timeline and the live log.
import { $, api, el, formatCost, formatDateTime, formatElapsed, formatTokens, issueLabel, notice } from './lib.js';
import { actionButtons, onRunChange, remember } from './runs-store.js';

let currentRunId = null;

function timelineItem(event) {
  const change = event.toStatus ? ` → ${event.toStatus}` : '';
  const detail = event.data?.error ?? event.data?.reason ?? '';
  return el(
    'li',
    { 'data-event-id': String(event.id) },
    el('time', { datetime: new Date(event.createdAt).toISOString() }, formatDateTime(event.createdAt)),
    `${event.type}${change}`,
    detail ? ` (${detail})` : '',
  );
}

/** The run's token cap and duration limit, as recorded when it was claimed. */
function formatLimits(limits) {
  if (!limits || (limits.tokenCap === null && limits.maxDurationMs === null)) return '–';
  const tokens = limits.tokenCap === null ? 'no token cap' : `${formatTokens(limits.tokenCap)} tokens`;
  const minutes = limits.maxDurationMs === null ? null : Math.round((limits.maxDurationMs / 60_000) * 100) / 100;
  return minutes === null ? tokens : `${tokens}, ${minutes} min`;
}

function renderRunDetails(run) {
  $('#run-title').textContent = `Run #${run.id}: ${run.stage} ${issueLabel(run)}`;
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
    ['limits', formatLimits(run.limits)],
    ['summary', run.summary ?? '–'],
    ['error', run.lastError ?? '–'],
  ];
  for (const [name, value] of fields) details.append(el('dt', {}, name), el('dd', {}, value));
  $('#run-actions').replaceChildren(...actionButtons(run));
}

export const runView = {
  section: '#run-view',
  match(hash) {
    const match = /^#\/runs\/(\d+)$/.exec(hash);
    return match ? { id: Number(match[1]) } : null;
  },
  init() {
    onRunChange((run) => {
      if (run.id === currentRunId) renderRunDetails(run);
    });
  },
  async show({ id }) {
    currentRunId = id;
    $('#timeline').replaceChildren();
    $('#log').textContent = '';
    try {
      const { run, timeline, log } = await api(`/api/runs/${id}`);
      if (currentRunId !== id) return;
      remember(run, { force: true });
      $('#timeline').replaceChildren(...timeline.map(timelineItem));
      $('#log').textContent = log ? `${log}\n` : '';
    } catch (err) {
      notice(err.message);
    }
  },
  hide() {
    currentRunId = null;
  },
  onEvent(event) {
    if (currentRunId !== event.runId) return;
    if (event.type === 'run:progress') {
      const lines = Array.isArray(event.data?.lines) ? event.data.lines : [];
      const log = $('#log');
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.append(lines.map((line) => `${line}\n`).join(''));
      if (atBottom) log.scrollTop = log.scrollHeight;
    } else if (!$(`#timeline li[data-event-id="${event.id}"]`)) {
      $('#timeline').append(timelineItem(event));
    }
  },
};
