// The deliveries inspector (`#/deliveries`, `#/deliveries/ID`): the forge webhook deliveries the
// inbox kept, newest first, with their verdicts, filters, and a detail panel (headers with the
// secrets masked by the server, body, history, runs started, replay).
import { $, api, el, formatDateTime, notice } from './lib.js';

let nextCursor = null;
let selectedId = null;
let filter = {};

const verdictClass = (d) => `verdict verdict-${d.outcome}`;
const eventOf = (d) => (d.eventType && d.eventType !== d.event ? `${d.event ?? '?'} (${d.eventType})` : (d.event ?? '?'));
const target = (d) => (d.repository === null ? '–' : d.number === null ? d.repository : `${d.repository}#${d.number}`);
const verdictText = (d) => d.verdict ?? (d.attempts > 0 ? `${d.status} (attempt ${d.attempts})` : d.status);

function rowFor(d) {
  return el(
    'tr',
    { 'data-delivery-id': String(d.id), class: d.id === selectedId ? 'selected' : undefined },
    el('td', { 'data-label': 'delivery' }, el('a', { href: `#/deliveries/${d.id}` }, `#${d.id}`)),
    el('td', { 'data-label': 'received' }, formatDateTime(d.receivedAt)),
    el('td', { 'data-label': 'source' }, d.source),
    el('td', { 'data-label': 'event' }, eventOf(d)),
    el('td', { 'data-label': 'repository' }, target(d)),
    el('td', { 'data-label': 'verdict' }, el('span', { class: verdictClass(d), title: verdictText(d) }, verdictText(d))),
    el('td', { 'data-label': 'runs' }, ...runLinks(d.runs)),
  );
}

function runLinks(runs) {
  if (!runs.length) return ['–'];
  return runs.flatMap((r, i) => [i ? ' ' : null, el('a', { href: `#/runs/${r.id}` }, `#${r.id}`)]).filter(Boolean);
}

async function loadPage(cursor) {
  const query = new URLSearchParams({ limit: '50', ...filter });
  if (cursor) query.set('cursor', cursor);
  const page = await api(`/api/deliveries?${query}`);
  const tbody = $('#deliveries tbody');
  if (!cursor) tbody.replaceChildren();
  tbody.append(...page.deliveries.map(rowFor));
  nextCursor = page.nextCursor;
  $('#deliveries-more').hidden = !nextCursor;
  $('#deliveries-empty').hidden = tbody.children.length > 0;
}

function readFilter() {
  const form = $('#deliveries-filter');
  filter = {};
  for (const name of ['repo', 'event', 'verdict', 'source']) {
    const value = form.elements[name].value.trim();
    if (value) filter[name] = value;
  }
}

async function showDetail(id) {
  const panel = $('#delivery-detail');
  selectedId = id;
  for (const tr of document.querySelectorAll('#deliveries tr[data-delivery-id]'))
    tr.classList.toggle('selected', Number(tr.dataset.deliveryId) === id);
  if (id === null) {
    panel.hidden = true;
    return;
  }
  const { delivery: d } = await api(`/api/deliveries/${id}`);
  if (selectedId !== id) return;
  $('#delivery-title').textContent = `Delivery #${d.id}: ${eventOf(d)} ${target(d)}`;
  const fields = [
    ['verdict', el('span', { class: verdictClass(d), id: 'delivery-verdict' }, verdictText(d))],
    ['last error', d.lastError ?? '–'],
    [
      'source',
      d.replayOf === null ? d.source : el('span', {}, `${d.source} of `, el('a', { href: `#/deliveries/${d.replayOf}` }, `#${d.replayOf}`)),
    ],
    ['endpoint', d.endpoint],
    ['forge delivery id', d.deliveryId ?? '–'],
    ['received', formatDateTime(d.receivedAt)],
    ['processed', d.processedAt ? formatDateTime(d.processedAt) : '–'],
    ['attempts', String(d.attempts)],
    ['sha256', el('code', {}, d.sha256)],
    ['runs started', el('span', { id: 'delivery-runs' }, ...runLinks(d.runs))],
  ];
  $('#delivery-fields').replaceChildren(...fields.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]));
  $('#delivery-history').replaceChildren(
    ...d.history.map((h) =>
      el('li', {}, el('time', { datetime: new Date(h.at).toISOString() }, formatDateTime(h.at)), h.type, h.detail ? ` (${h.detail})` : ''),
    ),
  );
  $('#delivery-headers').textContent = Object.entries(d.headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  $('#delivery-body').textContent = d.body;
  panel.hidden = false;
}

async function replay() {
  const id = selectedId;
  if (id === null) return;
  try {
    const { delivery } = await api(`/api/deliveries/${id}/replay`, { method: 'POST' });
    notice(`delivery #${id} replayed as #${delivery.id}`);
    await loadPage();
    location.hash = `#/deliveries/${delivery.id}`;
  } catch (err) {
    notice(`replay failed: ${err.message}`);
  }
}

export const deliveriesView = {
  section: '#deliveries-view',
  match(hash) {
    if (hash === '#/deliveries') return { id: null };
    const match = /^#\/deliveries\/(\d+)$/.exec(hash);
    return match ? { id: Number(match[1]) } : null;
  },
  init() {
    $('#deliveries-filter').addEventListener('submit', (event) => {
      event.preventDefault();
      readFilter();
      loadPage().catch((err) => notice(err.message));
    });
    $('#deliveries-more').addEventListener('click', () => loadPage(nextCursor).catch((err) => notice(err.message)));
    $('#delivery-replay').addEventListener('click', replay);
  },
  async show({ id }) {
    try {
      // The list first, then the panel: a replay's new row is in the list when its panel opens.
      if (id === null || !$('#deliveries tbody').children.length) await loadPage();
      await showDetail(id);
    } catch (err) {
      notice(err.message);
    }
  },
  hide() {
    selectedId = null;
  },
};
