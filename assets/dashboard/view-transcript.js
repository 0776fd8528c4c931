// A run's conversation with its agent, on the run page (`#/runs/ID`) and, across its stages, on
// the issue page (`#/issues/OWNER/REPO/N`): each turn from the prompt it began with (baton's
// stage prompt, folded, or a person's reply) through the assistant's messages and its tool calls
// (each folded, its result inside) to the question it ended with, and what the turn cost. From
// `GET /api/runs/:id/conversation` and `GET /api/issues/…/conversation`; reloaded when one of the
// shown runs changes state. Every text is the agent's or a person's: set as text, never as HTML.
import { $, api, el, formatCost, formatDateTime, formatDuration, formatTokens, notice } from './lib.js';

let shown = null;
let reloadTimer = null;

const RUN = /^#\/runs\/(\d+)$/;
const ISSUE = /^#\/issues\/([^/]+)\/([^/]+)\/(\d+)$/;

/** `Bash git status`: the tool and the first words of its input, for the folded line. */
function toolSummary(entry) {
  let input = entry.input;
  try {
    const parsed = JSON.parse(entry.input);
    // The one field that says what the call does, when the input has it.
    const main =
      parsed && typeof parsed === 'object'
        ? (parsed.command ?? parsed.file_path ?? parsed.pattern ?? parsed.url ?? parsed.description)
        : null;
    if (typeof main === 'string') input = main;
  } catch {
    // Shown as it is.
  }
  return input.length > 120 ? `${input.slice(0, 120)}…` : input;
}

function entryNode(entry) {
  switch (entry.kind) {
    case 'assistant':
      return el('div', { class: 'msg assistant' }, el('b', {}, 'assistant'), el('p', {}, entry.text));
    case 'thinking':
      return el('details', { class: 'thinking' }, el('summary', {}, 'thinking'), el('pre', {}, entry.text));
    case 'tool':
      return el(
        'details',
        { class: `tool${entry.isError ? ' tool-error' : ''}`, 'data-tool': entry.name },
        el(
          'summary',
          {},
          el('span', { class: 'tool-name' }, entry.name),
          ' ',
          el('code', {}, toolSummary(entry)),
          entry.isError ? ' ✗' : '',
        ),
        el('pre', { class: 'tool-input' }, entry.input),
        entry.result === null
          ? el('p', { class: 'hint' }, 'no result in the stream')
          : el('pre', { class: 'tool-result' }, entry.result === '' ? '(empty)' : entry.result),
      );
    case 'result':
      return el(
        'div',
        { class: `msg result${entry.isError ? ' result-error' : ''}` },
        el('b', {}, entry.isError ? 'ended with an error' : 'result'),
        el('p', {}, entry.text),
      );
    case 'cut':
      return el(
        'p',
        { class: 'hint cut' },
        entry.lines
          ? `… ${formatTokens(entry.lines)} lines of the stream cut here (the run's log keeps its beginning and end)`
          : `… ${entry.entries} more entries not shown`,
      );
    default:
      return el('pre', { class: `output ${entry.kind}` }, entry.text);
  }
}

function turnFigures(turn) {
  const parts = [formatCost(turn.costUsd)];
  if (turn.tokens !== null) parts.push(`${formatTokens(turn.tokens)} tokens`);
  if (turn.startedAt !== null && turn.endedAt !== null) parts.push(formatDuration(turn.endedAt - turn.startedAt));
  return parts.join(' · ');
}

function turnNode(turn) {
  const opening =
    turn.by === 'baton'
      ? el('details', { class: 'prompt' }, el('summary', {}, 'baton’s prompt'), el('pre', {}, turn.prompt))
      : el('div', { class: 'msg human' }, el('b', {}, `@${turn.by} replied`), el('p', {}, turn.reply ?? turn.prompt));
  return el(
    'article',
    { class: 'turn', 'data-turn': String(turn.turn) },
    el(
      'h4',
      {},
      `Turn ${turn.turn}`,
      el('span', { class: 'turn-figures', 'data-field': 'turn-cost' }, turnFigures(turn)),
      turn.startedAt !== null ? el('time', { datetime: new Date(turn.startedAt).toISOString() }, formatDateTime(turn.startedAt)) : null,
    ),
    opening,
    ...turn.entries.map(entryNode),
    turn.question ? el('div', { class: 'msg question' }, el('b', {}, 'asked'), el('p', {}, turn.question)) : null,
  );
}

/** One run's conversation; `heading` names the run (the issue page shows several). */
function conversationNode(view, heading) {
  const children = [];
  if (heading) {
    children.push(
      el(
        'h4',
        { class: 'conversation-run' },
        el('a', { href: `#/runs/${view.runId}` }, `#${view.runId}`),
        ` ${view.stage} `,
        el('span', { class: `status status-${view.status}` }, view.status),
      ),
    );
  }
  if (!view.kept && !view.waiting && !view.reply) {
    children.push(el('p', { class: 'hint' }, 'No transcript: the run’s agent never ran, or its runner kept none.'));
  }
  children.push(...view.turns.map(turnNode));
  if (view.reply) {
    children.push(
      el(
        'div',
        { class: 'msg human pending' },
        el('b', {}, `@${view.reply.by} replied`),
        el('p', {}, view.reply.text),
        el('span', { class: 'hint' }, 'the agent is on it'),
      ),
    );
  }
  if (view.waiting) {
    children.push(
      el('p', { class: 'waiting' }, `Waiting for a reply${view.waiting.for ? ` from @${view.waiting.for}` : ''} on the issue.`),
    );
  }
  return el('div', { class: 'conversation', 'data-run-id': String(view.runId) }, ...children);
}

async function load(target) {
  const box = $(target.box);
  try {
    if (target.runId !== undefined) {
      const view = await api(`/api/runs/${target.runId}/conversation`);
      if (shown !== target) return;
      target.runIds = new Set([view.runId]);
      box.replaceChildren(conversationNode(view, false));
    } else {
      const path = `/api/issues/${encodeURIComponent(target.owner)}/${encodeURIComponent(target.repo)}/${target.number}/conversation`;
      const view = await api(path);
      if (shown !== target) return;
      target.runIds = new Set(view.runs.map((r) => r.runId));
      box.replaceChildren(
        ...(view.runs.length
          ? view.runs.map((r) => conversationNode(r, true))
          : [el('p', { class: 'hint' }, 'No run of this issue kept a transcript yet.')]),
      );
    }
  } catch (err) {
    if (shown !== target) return;
    box.replaceChildren(err.status === 404 ? '' : el('p', { class: 'hint' }, `The conversation could not be read: ${err.message}`));
    if (err.status !== 404) notice(err.message);
  } finally {
    if (shown === target) box.dataset.loaded = 'true';
  }
}

export const conversationPanel = {
  /** Called on every route: shows the conversation of the run or issue the page is about. */
  show(hash) {
    shown = null;
    clearTimeout(reloadTimer);
    for (const box of ['#run-conversation-turns', '#issue-conversation-turns']) {
      $(box).replaceChildren();
      delete $(box).dataset.loaded;
    }
    const run = RUN.exec(hash);
    const issue = ISSUE.exec(hash);
    if (run) shown = { box: '#run-conversation-turns', runId: Number(run[1]), runIds: new Set([Number(run[1])]) };
    else if (issue) {
      try {
        shown = {
          box: '#issue-conversation-turns',
          owner: decodeURIComponent(issue[1]),
          repo: decodeURIComponent(issue[2]),
          number: Number(issue[3]),
          runIds: new Set(),
        };
      } catch {
        shown = null;
      }
    }
    if (shown) return load(shown);
  },
  onEvent(event) {
    if (!shown || !event.toStatus) return;
    const ofIssue = shown.owner !== undefined && event.run && event.run.owner === shown.owner && event.run.repo === shown.repo;
    if (!shown.runIds.has(event.runId) && !ofIssue) return;
    // A turn's end (waiting, succeeded, …) or a reply (queued) changes what there is to show.
    clearTimeout(reloadTimer);
    const target = shown;
    reloadTimer = setTimeout(() => target === shown && load(target), 300);
  },
};
