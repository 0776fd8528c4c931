import { describe, expect, it } from 'vitest';
import { formatDuration, redact } from './status-comments.js';

describe('formatDuration and redact', () => {
  it.each([
    [0, '0s'],
    [59_400, '59s'],
    [61_000, '1m 1s'],
    [7_260_000, '2h 1m'],
  ])('%d ms → %s', (ms, text) => expect(formatDuration(ms)).toBe(text));

  it('masks bearer tokens and leaves ordinary prose alone', () => {
    expect(redact('Bearer abcdefghijklmnopqrstuvwxyz', [])).toBe('Bearer ********');
    expect(redact('the token expired', [])).toBe('the token expired');
  });
});
