// Usage (`#/usage`): tokens and cost per day and per stage over a range of UTC days, and today's
// budgets with what is left (once the server has budgets: without them the panel stays empty).
import { barChart } from './chart.js';
import { $, api, el, formatCost, formatTokens, notice } from './lib.js';

const DAY_MS = 24 * 60 * 60_000;
const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** The last 30 UTC days, today included: what `GET /api/usage` answers without a range. */
function defaultRange() {
  const to = utcDay(Date.now());
  return { from: utcDay(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS), to };
}

function chartFigure(id, title, items, format) {
  return el('figure', { id, class: 'chart-box' }, el('figcaption', {}, title), barChart({ title, items, format }));
}

/** `2026-11-30` → `11-30`: the year is in the range above the charts. */
const shortDay = (day) => day.slice(5);

async function loadUsage() {
  const range = { from: $('#usage-from').value, to: $('#usage-to').value };
  const query = (groupBy) => new URLSearchParams({ ...range, groupBy });
  const [byDay, byStage] = await Promise.all([api(`/api/usage?${query('day')}`), api(`/api/usage?${query('stage')}`)]);
  const days = byDay.groups.map((g) => ({ ...g, label: shortDay(g.key) }));
  const stages = byStage.groups.map((g) => ({ ...g, label: g.key }));
  $('#usage-totals').textContent =
    `${byDay.from} to ${byDay.to} (UTC): ${byDay.totals.runs} runs, ` +
    `${formatTokens(byDay.totals.tokens)} tokens, ${formatCost(byDay.totals.costUsd)}`;
  $('#usage-charts').replaceChildren(
    chartFigure(
      'chart-tokens-day',
      'Tokens per day',
      days.map((g) => ({ label: g.label, value: g.tokens })),
      formatTokens,
    ),
    chartFigure(
      'chart-cost-day',
      'Cost per day',
      days.map((g) => ({ label: g.label, value: g.costUsd })),
      formatCost,
    ),
    chartFigure(
      'chart-tokens-stage',
      'Tokens per stage',
      stages.map((g) => ({ label: g.label, value: g.tokens })),
      formatTokens,
    ),
    chartFigure(
      'chart-cost-stage',
      'Cost per stage',
      stages.map((g) => ({ label: g.label, value: g.costUsd })),
      formatCost,
    ),
  );
}

/** "123,456 of 2,000,000 used, 1,876,544 left" for one limit; null without that limit. */
function budgetLine(amount, format) {
  if (!amount) return '–';
  return `${format(amount.used)} of ${format(amount.limit)} used, ${format(amount.remaining)} left`;
}

/** How much of a limit is spent, as a bar (SVG `width` attribute: no style attribute needed). */
function meter(amount) {
  if (!amount || !(amount.limit > 0)) return null;
  const share = Math.min(1, amount.used / amount.limit);
  const node = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  node.setAttribute('class', 'meter');
  node.setAttribute('viewBox', '0 0 100 6');
  node.setAttribute('preserveAspectRatio', 'none');
  for (const [cls, width] of [
    ['meter-track', 100],
    [share >= 1 ? 'meter-fill spent' : 'meter-fill', share * 100],
  ]) {
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    for (const [key, value] of Object.entries({ class: cls, x: 0, y: 0, width: width.toFixed(2), height: 6 }))
      rect.setAttribute(key, String(value));
    node.append(rect);
  }
  return node;
}

/**
 * Today's budgets (`GET /api/budgets`). A server without budgets answers 404, and one without
 * any limit an empty list: then the panel stays hidden, and nothing else on the page depends on it.
 */
async function loadBudgets() {
  const panel = $('#budgets');
  let answer;
  try {
    answer = await api('/api/budgets');
  } catch {
    panel.hidden = true;
    return;
  }
  const budgets = Array.isArray(answer?.budgets) ? answer.budgets : [];
  panel.hidden = budgets.length === 0;
  if (budgets.length === 0) return;
  const resets = answer.resetsAt ? ` · resets ${new Date(answer.resetsAt).toLocaleString()}` : '';
  $('#budgets-title').textContent = `Budgets today (${answer.day ?? ''} ${answer.timezone ?? ''})${resets}`;
  $('#budgets tbody').replaceChildren(
    ...budgets.map((b) =>
      el(
        'tr',
        { 'data-scope': b.scope, class: b.exhausted ? 'exhausted' : null },
        el('td', { 'data-label': 'scope' }, b.scope),
        el('td', { 'data-label': 'tokens' }, budgetLine(b.tokens, formatTokens), meter(b.tokens)),
        el('td', { 'data-label': 'cost' }, budgetLine(b.costUsd, formatCost), meter(b.costUsd)),
        el('td', { 'data-label': 'held' }, b.exhausted ? `spent · ${b.held ?? 0} held` : String(b.held ?? 0)),
      ),
    ),
  );
}

export const usageView = {
  section: '#usage-view',
  match: (hash) => (hash === '#/usage' ? {} : null),
  init() {
    const { from, to } = defaultRange();
    $('#usage-from').value = from;
    $('#usage-to').value = to;
    $('#usage-range').addEventListener('submit', (event) => {
      event.preventDefault();
      loadUsage().catch((err) => notice(err.message));
    });
  },
  show() {
    loadUsage().catch((err) => notice(err.message));
    loadBudgets();
  },
};
