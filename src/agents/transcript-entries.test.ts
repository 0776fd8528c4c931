import { describe, expect, it } from 'vitest';
import { MAX_ENTRIES, MAX_ENTRY_CHARS, transcriptEntries } from './transcript-entries.js';

const line = (value: unknown) => JSON.stringify(value);
const assistant = (content: unknown[]) => line({ type: 'assistant', message: { id: 'm', content } });
const toolResult = (id: string, content: unknown, isError = false) =>
  line({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: id, content, is_error: isError }] } });

describe('transcriptEntries', () => {
  it('reads Claude Code’s messages, folds each tool result into its call and keeps the result', () => {
    const { entries } = transcriptEntries('claude', [
      line({ type: 'system', subtype: 'init', session_id: 's' }),
      assistant([
        { type: 'thinking', thinking: 'hmm' },
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'git status' } },
      ]),
      line({ type: 'rate_limit_event' }),
      toolResult('t1', [{ type: 'text', text: 'clean' }]),
      assistant([{ type: 'tool_use', id: 't2', name: 'Read', input: { file_path: 'x' } }]),
      toolResult('t2', 'no such file', true),
      line({ type: 'system', subtype: 'api_retry', attempt: 2, error: 'overloaded' }),
      'not json',
      line({ type: 'result', subtype: 'success', is_error: false, result: 'Done.', total_cost_usd: 0.0124, num_turns: 3 }),
    ]);
    expect(entries).toEqual([
      { kind: 'thinking', text: 'hmm' },
      { kind: 'assistant', text: 'Let me look.' },
      { kind: 'tool', id: 't1', name: 'Bash', input: '{"command":"git status"}', result: 'clean', isError: false },
      { kind: 'tool', id: 't2', name: 'Read', input: '{"file_path":"x"}', result: 'no such file', isError: true },
      { kind: 'notice', text: 'API retry 2: overloaded' },
      { kind: 'output', text: 'not json' },
      { kind: 'result', text: 'Done.', isError: false, costUsd: 0.0124, numTurns: 3 },
    ]);
  });

  it('reads an error result’s errors and an older CLI’s total_cost', () => {
    const { entries } = transcriptEntries('claude', [
      line({ type: 'result', subtype: 'error_during_execution', is_error: true, errors: ['No conversation found'], total_cost: 0.5 }),
    ]);
    expect(entries).toEqual([{ kind: 'result', text: 'No conversation found', isError: true, costUsd: 0.5, numTurns: null }]);
  });

  it('shows another agent’s lines as output, and marks where the runner cut the stream', () => {
    const { entries } = transcriptEntries('codex', ['{"type":"item.completed"}', 'two'], { at: 1, lines: 500 });
    expect(entries).toEqual([
      { kind: 'output', text: '{"type":"item.completed"}' },
      { kind: 'cut', lines: 500 },
      { kind: 'output', text: 'two' },
    ]);
  });

  it('bounds each text and the number of entries', () => {
    const long = 'x'.repeat(MAX_ENTRY_CHARS + 10);
    const many = Array.from({ length: MAX_ENTRIES + 5 }, () => 'line');
    const { entries, omitted } = transcriptEntries('text', [long, ...many]);
    expect(entries[0]).toEqual({ kind: 'output', text: `${'x'.repeat(MAX_ENTRY_CHARS)}…`, cut: true });
    expect(omitted).toBe(6);
    expect(entries).toHaveLength(MAX_ENTRIES + 1);
    expect(entries.at(-1)).toEqual({ kind: 'cut', entries: 6 });
  });
});
