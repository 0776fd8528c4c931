// One run (`#/runs/ID`): its one error, details, the prompt it ran with, actions, timeline and the
// live log; tokens and cost count up from its runner's progress reports while it runs.
import { $, api, el, FINAL, formatCost, formatDateTime, formatElapsed, formatTokens, issueLabel, notice } from './lib.js';
import { actionButtons, onRunChange, remember, runs } from './runs-store.js';

let currentRunId = null;
/** Tokens and cost so far (the latest progress report), until the run has its final figures. */
let live = null;
let prompt = null;

/**
 * A timeline entry. An entry repeating the run's error (each failed attempt of a dead run does)
 * says so instead of printing it again: the error is shown once, above.
 */
function timelineItem(event) {
  const change = event.toStatus ? ` → ${event.toStatus}` : '';
  let detail = event.data?.error ?? event.data?.reason ?? '';
  const run = runs.get(event.runId);
  if (detail && run && (detail === run.lastError || detail === run.failure?.message)) detail = 'the error above';
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

const at = (ms) => (ms === null || ms === undefined ? '–' : el('time', { datetime: new Date(ms).toISOString() }, formatDateTime(ms)));

/** Final figures once there are some; until then the runner's latest report, marked as such. */
function figure(final, soFar, format, name) {
  if (final !== null && final !== undefined) return el('span', { id: `run-${name}` }, format(final));
  if (soFar === null || soFar === undefined) return el('span', { id: `run-${name}` }, '–');
  return el('span', {}, el('span', { id: `run-${name}` }, format(soFar)), el('span', { class: 'live-note' }, ' so far'));
}

function renderFailure(run) {
  const box = $('#run-failure');
  const failure = ['succeeded', 'queued', 'provisioning', 'running'].includes(run.status) ? null : run.failure;
  box.hidden = !failure;
  if (!failure) return box.replaceChildren();
  // replaceChildren writes a null as the text "null": only what there is goes in.
  box.replaceChildren(
    ...[
      el('p', { id: 'run-error' }, failure.message),
      failure.code ? el('code', { id: 'run-error-code', title: 'the kind of failure, as the runner reported it' }, failure.code) : null,
      failure.help ? el('p', { id: 'run-error-help' }, 'How to fix it: ', el('code', {}, failure.help)) : null,
    ].filter(Boolean),
  );
}

function renderRunDetails(run) {
  $('#run-title').textContent = `Run #${run.id}: ${run.stage} ${issueLabel(run)}`;
  renderFailure(run);
  const soFar = FINAL.has(run.status) ? null : live;
  const fields = [
    ['status', el('span', { class: `status status-${run.status}`, id: 'run-status' }, run.status)],
    ['issue', run.issueUrl ? el('a', { href: run.issueUrl, target: '_blank', rel: 'noopener' }, run.issueUrl) : issueLabel(run)],
    run.payload?.title ? ['title', String(run.payload.title)] : null,
    run.payload?.trigger ? ['trigger', String(run.payload.trigger)] : null,
    ['created', at(run.createdAt)],
    run.startedAt ? ['started', at(run.startedAt)] : null,
    run.finishedAt ? ['finished', at(run.finishedAt)] : null,
    ['workspace', run.workspaceName ?? '–'],
    ['attempts', `${run.attempts} of ${run.maxAttempts}`],
    ['elapsed', el('span', { id: 'run-elapsed' }, formatElapsed(run))],
    ['tokens', figure(run.tokens, soFar?.tokens, formatTokens, 'tokens')],
    ['cost', figure(run.costUsd, soFar?.costUsd, formatCost, 'cost')],
    ['limits', formatLimits(run.limits)],
    // A failed run's summary is usually its error's words, shown above already.
    run.summary && run.summary.trim() !== run.failure?.message ? ['summary', run.summary] : null,
    run.status === 'held' && run.heldReason ? ['held', run.heldReason] : null,
  ].filter(Boolean);
  $('#run-details').replaceChildren(...fields.flatMap(([name, value]) => [el('dt', {}, name), el('dd', { 'data-field': name }, value)]));
  $('#run-actions').replaceChildren(...actionButtons(run));
  renderPrompt(run);
  renderLogState(run);
}

/** What the agent was asked: the runner's report, or what baton knows before it (the arguments). */
function renderPrompt(run) {
  const args = prompt ? prompt.arguments : (run.payload?.arguments ?? (run.number === null ? '' : String(run.number)));
  const fields = [['arguments', args === '' ? '(none)' : args]];
  if (prompt) {
    const from = prompt.source === 'built-in' ? `baton's built-in ${run.stage} template` : prompt.file;
    fields.push(['from', from ?? '–']);
    if (prompt.model) fields.push(['model', prompt.model]);
  } else {
    fields.push([
      'prompt',
      FINAL.has(run.status)
        ? 'not reported: the run ended before its runner read the stage’s prompt'
        : 'read in the workspace when the agent starts',
    ]);
  }
  $('#run-prompt-fields').replaceChildren(...fields.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)]));
  const text = $('#run-prompt-text');
  text.hidden = !prompt;
  text.querySelector('pre').textContent = prompt ? `${prompt.text}${prompt.cut ? '\n[…cut: the first 64 KiB are stored]' : ''}` : '';
}

/** An empty log says why instead of showing an empty box. */
function renderLogState(run) {
  const empty = $('#log').textContent === '';
  $('#log').hidden = empty;
  $('#log-empty').hidden = !empty;
  if (!empty) return;
  $('#log-empty').textContent = FINAL.has(run.status)
    ? run.startedAt
      ? 'No log: the workspace sent no output.'
      : 'No log: the run never reached a workspace that could send one.'
    : 'No output yet.';
}

function showMissing(id, message) {
  $('#run-title').textContent = `Run #${id}`;
  $('#run-missing').textContent = message;
  $('#run-missing').hidden = false;
  $('#run-found').hidden = true;
}

/** A run still going counts its elapsed time up each second, as the runs list does; an ended one keeps its figure. */
function tick() {
  const run = currentRunId === null ? undefined : runs.get(currentRunId);
  const elapsed = $('#run-elapsed');
  if (run && elapsed && !FINAL.has(run.status)) elapsed.textContent = formatElapsed(run);
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
    setInterval(tick, 1000);
  },
  async show({ id }) {
    currentRunId = id;
    live = null;
    prompt = null;
    $('#run-title').textContent = `Run #${id}`;
    $('#run-missing').hidden = true;
    $('#run-found').hidden = true;
    $('#timeline').replaceChildren();
    $('#log').textContent = '';
    delete $('#run-view').dataset.loaded;
    try {
      const body = await api(`/api/runs/${id}`);
      if (currentRunId !== id) return;
      live = body.live;
      prompt = body.prompt;
      $('#log').textContent = body.log ? `${body.log}\n` : '';
      $('#run-found').hidden = false;
      remember(body.run, { force: true });
      $('#timeline').replaceChildren(...body.timeline.map(timelineItem));
    } catch (err) {
      if (currentRunId !== id) return;
      if (err.status === 404) showMissing(id, `There is no run #${id}: it never existed, or the retention has removed it.`);
      else showMissing(id, `Run #${id} could not be read: ${err.message}`);
      notice(err.status === 404 ? '' : err.message);
    } finally {
      if (currentRunId === id) $('#run-view').dataset.loaded = 'true';
    }
  },
  hide() {
    currentRunId = null;
  },
  onEvent(event) {
    if (currentRunId !== event.runId || $('#run-found').hidden) return;
    const run = runs.get(event.runId);
    if (event.type === 'run:progress') {
      if (event.data?.usage && typeof event.data.usage === 'object') {
        const usage = event.data.usage;
        live = {
          usage,
          tokens: (Number(usage.inputTokens) || 0) + (Number(usage.outputTokens) || 0),
          costUsd: typeof event.data.costUsd === 'number' ? event.data.costUsd : (live?.costUsd ?? null),
        };
      }
      const lines = Array.isArray(event.data?.lines) ? event.data.lines : [];
      const log = $('#log');
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.append(lines.map((line) => `${line}\n`).join(''));
      if (atBottom) log.scrollTop = log.scrollHeight;
      if (run) renderRunDetails(run);
    } else if (event.type === 'run:prompt') {
      prompt = event.data;
      if (run) renderPrompt(run);
    } else if (!$(`#timeline li[data-event-id="${event.id}"]`)) {
      // A new attempt starts counting again.
      if (event.type === 'run:started' || event.type === 'run:retrying') live = null;
      $('#timeline').append(timelineItem(event));
    }
  },
};
