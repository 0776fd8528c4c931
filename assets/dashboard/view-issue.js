// One issue through the pipeline (`#/issues/OWNER/REPO/N`): its steps in order as bars (queued,
// then running), the waits between them, its runs and totals, from `GET /api/issues/…`, updated
// when one of its runs changes.
import { svg } from './chart.js';
import { $, api, el, formatCost, formatDuration, formatTokens, namedForge, notice } from './lib.js';

let current = null;
let reloadTimer = null;

const ROW = 30;
const WAIT_ROW = 20;
const LABEL = 190;
const BARS = 360;
const WIDTH = LABEL + BARS + 110;

/** How long a step has run so far: finished runs' durations, plus a live run's time until now. */
function ranMs(step, runs) {
  let ms = 0;
  for (const id of step.runIds) {
    const run = runs.get(id);
    if (run.durationMs !== null) ms += run.durationMs;
    else if (run.startedAt !== null && run.finishedAt === null) ms += Math.max(0, Date.now() - run.startedAt);
  }
  return ms;
}

/** The timeline: a row per step (stage, status, a queued bar then a run bar), a wait row between. */
function timeline(view) {
  const runs = new Map(view.runs.map((run) => [run.id, run]));
  const rows = view.steps.map((step) => ({ step, ran: ranMs(step, runs) }));
  const longest = Math.max(1, ...rows.map((r) => r.step.queuedMs + r.ran));
  const scale = (ms) => (ms / longest) * BARS;
  const height = rows.length * ROW + rows.filter((r) => r.step.waitMs !== null).length * WAIT_ROW + 4;
  const chart = svg('svg', {
    id: 'issue-timeline',
    class: 'timeline-chart',
    viewBox: `0 0 ${WIDTH} ${height}`,
    role: 'img',
    'aria-label': `Stages of ${view.owner}/${view.repo}#${view.number}`,
  });
  let y = 2;
  for (const { step, ran } of rows) {
    if (step.waitMs !== null) {
      chart.append(
        svg(
          'text',
          { class: 'wait', x: LABEL, y: y + WAIT_ROW / 2, 'dominant-baseline': 'middle', 'data-wait-ms': step.waitMs },
          step.waitMs > 0 ? `⋯ waited ${formatDuration(step.waitMs)}` : '⋯ began before the previous step ended',
        ),
      );
      y += WAIT_ROW;
    }
    const queued = scale(step.queuedMs);
    const running = scale(ran);
    const runsNote = step.runIds.length > 1 ? ` ×${step.runIds.length}` : '';
    chart.append(
      svg(
        'g',
        { class: 'step', 'data-stage': step.stage, 'data-status': step.status },
        svg('text', { class: 'step-label', x: 0, y: y + ROW / 2, 'dominant-baseline': 'middle' }, `${step.stage}${runsNote}`),
        svg(
          'text',
          { class: `step-status status-${step.status}`, x: LABEL - 8, y: y + ROW / 2, 'text-anchor': 'end', 'dominant-baseline': 'middle' },
          step.status,
        ),
        svg(
          'rect',
          { class: 'queued', x: LABEL, y: y + 7, width: queued.toFixed(2), height: ROW - 14 },
          svg('title', {}, `queued ${formatDuration(step.queuedMs)}`),
        ),
        svg(
          'rect',
          {
            class: `ran status-${step.status}`,
            x: (LABEL + queued).toFixed(2),
            y: y + 5,
            width: Math.max(running, 2).toFixed(2),
            height: ROW - 10,
          },
          svg('title', {}, `ran ${formatDuration(ran)}`),
        ),
        svg(
          'text',
          {
            class: 'step-duration',
            x: (LABEL + queued + Math.max(running, 2) + 6).toFixed(2),
            y: y + ROW / 2,
            'dominant-baseline': 'middle',
          },
          formatDuration(ran),
        ),
      ),
    );
    y += ROW;
  }
  return chart;
}

function runRow(run) {
  return el(
    'tr',
    { 'data-run-id': String(run.id) },
    el('td', { 'data-label': 'run' }, el('a', { href: `#/runs/${run.id}` }, `#${run.id}`)),
    el('td', { 'data-label': 'stage' }, run.stage),
    el('td', { 'data-label': 'on' }, run.pullRequest ? `PR #${run.number}` : `#${run.number}`),
    el('td', { 'data-label': 'status' }, el('span', { class: `status status-${run.status}` }, run.status)),
    el('td', { 'data-label': 'queued' }, formatDuration(run.queuedMs)),
    el('td', { 'data-label': 'ran' }, run.durationMs === null ? '–' : formatDuration(run.durationMs)),
    el('td', { 'data-label': 'attempts' }, `${run.attempts} of ${run.maxAttempts}`),
    el('td', { 'data-label': 'tokens' }, formatTokens(run.tokens)),
    el('td', { 'data-label': 'cost' }, formatCost(run.costUsd)),
  );
}

function render(view) {
  const name = issueName({ ...view, forge: current.forge });
  // replaceChildren writes a null as the text "null": only what there is goes in.
  $('#issue-title').replaceChildren(
    ...[
      name,
      view.issueUrl
        ? el('a', { class: 'forge', href: view.issueUrl, target: '_blank', rel: 'noopener', title: 'on the forge' }, ' ↗')
        : null,
    ].filter((part) => part !== null),
  );
  $('#issue-prs').replaceChildren(
    ...view.pullRequests.map((pr) =>
      el(
        'li',
        {},
        pr.url ? el('a', { href: pr.url, target: '_blank', rel: 'noopener' }, `PR #${pr.number}`) : `PR #${pr.number}`,
        pr.headRef ? ` (${pr.headRef})` : '',
      ),
    ),
  );
  const t = view.totals;
  const totals = [
    ['elapsed', formatDuration(t.elapsedMs)],
    ['running', formatDuration(t.durationMs)],
    ['queued', formatDuration(t.queuedMs)],
    ['waiting between stages', formatDuration(t.waitMs)],
    ['runs', String(t.runs)],
    ['attempts', String(t.attempts)],
    ['tokens', formatTokens(t.tokens)],
    ['cost', formatCost(t.costUsd)],
  ];
  $('#issue-totals').replaceChildren(...totals.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-total': k }, v)]));
  $('#issue-timeline-box').replaceChildren(timeline(view));
  $('#issue-runs tbody').replaceChildren(...view.runs.map(runRow));
}

async function load(params) {
  try {
    const forge = params.forge ? `?forge=${params.forge}` : '';
    const view = await api(`/api/issues/${encodeURIComponent(params.owner)}/${encodeURIComponent(params.repo)}/${params.number}${forge}`);
    if (current !== params) return;
    current.numbers = new Set([view.number, ...view.pullRequests.map((pr) => pr.number)]);
    $('#issue-missing').hidden = true;
    $('#issue-found').hidden = false;
    render(view);
  } catch (err) {
    if (current !== params) return;
    // No run of it (yet): one sentence, not a page of empty sections. A run queued for it later
    // arrives through the stream and loads the view.
    const name = issueName(params);
    $('#issue-missing').textContent =
      err.status === 404
        ? `baton has no run of ${name} or of a pull request linked to it (yet, or any more: the retention removes old runs).`
        : `${name} could not be read: ${err.message}`;
    $('#issue-missing').hidden = false;
    $('#issue-found').hidden = true;
    if (err.status !== 404) notice(err.message);
  } finally {
    if (current === params) $('#issue-view').dataset.loaded = 'true';
  }
}

/** The issue as baton names it: `acme/app#7` on Gitea, `github:acme/app#7` on another forge. */
const issueName = (params) => `${params.forge ? `${params.forge}:` : ''}${params.owner}/${params.repo}#${params.number}`;

/** A pull request's head branch names the issue as the server links them (`feature/issue-7-…`). */
function namesIssue(headRef, number) {
  if (typeof headRef !== 'string') return false;
  return headRef.split('/').some((part) => part === `issue-${number}` || part.startsWith(`issue-${number}-`));
}

export const issueView = {
  section: '#issue-view',
  match(hash) {
    // `?forge=github|gitlab`: the same repository name on another forge is another repository.
    const match = /^#\/issues\/([^/?]+)\/([^/?]+)\/(\d+)(?:\?forge=(github|gitlab))?$/.exec(hash);
    if (!match) return null;
    try {
      const issue = { owner: decodeURIComponent(match[1]), repo: decodeURIComponent(match[2]), number: Number(match[3]) };
      return match[4] ? { ...issue, forge: match[4] } : issue;
    } catch {
      return null;
    }
  },
  show(params) {
    current = { ...params, numbers: new Set([params.number]) };
    delete $('#issue-view').dataset.loaded;
    $('#issue-missing').hidden = true;
    $('#issue-found').hidden = true;
    $('#issue-title').textContent = issueName(params);
    $('#issue-timeline-box').replaceChildren();
    $('#issue-runs tbody').replaceChildren();
    return load(current);
  },
  hide() {
    current = null;
  },
  onEvent(event) {
    const run = event.run;
    if (!current || !run || run.owner !== current.owner || run.repo !== current.repo) return;
    if (namedForge(run.forge) !== current.forge) return;
    if (!current.numbers.has(run.number) && !namesIssue(run.payload?.headRef, current.number)) return;
    // Several events in a row make one reload.
    clearTimeout(reloadTimer);
    const shown = current;
    reloadTimer = setTimeout(() => shown === current && load(shown), 300);
  },
};
