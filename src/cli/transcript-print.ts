import type { ConversationTurnView, RunConversationView } from '../http/index.js';
import { formatDuration } from './format.js';

/**
 * `baton logs --transcript`: a run's conversation as text, turn by turn: who began it (baton's
 * stage prompt, or a person's reply), the assistant's messages, each tool call on one line with
 * the first lines of its result, the question it ended with, and what the turn cost. Long texts
 * keep their first lines (`full` prints them whole).
 */

const PROMPT_LINES = 12;
const RESULT_LINES = 4;

function head(text: string, max: number, full: boolean): string[] {
  const lines = text.replace(/\s+$/, '').split('\n');
  if (full || lines.length <= max) return lines;
  return [...lines.slice(0, max), `… (${lines.length - max} more lines)`];
}

const indent = (lines: string[], by = '  ') => lines.map((l) => `${by}${l}`);
const cost = (usd: number | null) => (usd === null ? '-' : `$${usd.toFixed(4)}`);

function turnLines(turn: ConversationTurnView, full: boolean): string[] {
  const out: string[] = [];
  const who = turn.by === 'baton' ? "baton's prompt" : `reply from @${turn.by}`;
  out.push(`── turn ${turn.turn} · ${who} ──`);
  out.push(...indent(head(turn.by === 'baton' ? turn.prompt : (turn.reply ?? turn.prompt), PROMPT_LINES, full)));
  for (const entry of turn.entries) {
    switch (entry.kind) {
      case 'assistant':
        out.push('assistant:', ...indent(head(entry.text, full ? Infinity : 40, full)));
        break;
      case 'thinking':
        out.push(`thinking: (${entry.text.length} characters)`);
        break;
      case 'tool': {
        const input = entry.input.length > 200 && !full ? `${entry.input.slice(0, 200)}…` : entry.input;
        out.push(`  ▸ ${entry.name} ${input}`);
        if (entry.result !== null && entry.result !== '')
          out.push(...indent(head(entry.result, RESULT_LINES, full), entry.isError ? '    ✗ ' : '    │ '));
        break;
      }
      case 'result':
        out.push(`${entry.isError ? 'ended with an error' : 'result'}:`, ...indent(head(entry.text, full ? Infinity : 40, full)));
        break;
      case 'notice':
        out.push(`[${entry.text}]`);
        break;
      case 'output':
        out.push(entry.text);
        break;
      case 'cut':
        out.push(entry.lines ? `[… ${entry.lines} lines of the stream cut here]` : `[… ${entry.entries ?? 0} more entries not shown]`);
        break;
    }
  }
  if (turn.question) out.push('asked:', ...indent(turn.question.split('\n'), '  > '));
  const ran = turn.startedAt !== null && turn.endedAt !== null ? ` · ${formatDuration(turn.endedAt - turn.startedAt)}` : '';
  const tokens = turn.tokens === null ? '' : ` · ${turn.tokens.toLocaleString('en-US')} tokens`;
  out.push(`(turn ${turn.turn}: ${cost(turn.costUsd)}${tokens}${ran})`);
  return out;
}

export function formatConversation(view: RunConversationView, options: { full?: boolean } = {}): string {
  const full = options.full ?? false;
  const total = view.turns.reduce((sum, t) => sum + (t.costUsd ?? 0), 0);
  const out = [
    `run #${view.runId} ${view.stage}${view.number === null ? '' : ` #${view.number}`} · ${view.status} · ${view.turns.length} turn(s) · ${cost(total)}`,
  ];
  if (!view.kept) out.push('', 'baton keeps no transcript of this run (its agent never ran, or its runner kept none).');
  for (const turn of view.turns) out.push('', ...turnLines(turn, full));
  if (view.reply) out.push('', `── reply from @${view.reply.by} (its turn has not ended yet) ──`, ...indent(view.reply.text.split('\n')));
  if (view.waiting)
    out.push(
      '',
      `waiting for a reply${view.waiting.for ? ` from @${view.waiting.for}` : ''} to:`,
      ...indent(view.waiting.question.split('\n'), '  > '),
    );
  return out.join('\n');
}
