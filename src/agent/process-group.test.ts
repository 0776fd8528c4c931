import { describe, expect, it } from 'vitest';
import { createLineSplitter } from './process-group.js';

function split(chunks: string[], max = 1_000) {
  const lines: [string, number][] = [];
  const splitter = createLineSplitter(max, (line, cut) => lines.push([line, cut]));
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return lines;
}

describe('createLineSplitter', () => {
  it('splits lines across chunk borders, drops a trailing \\r and keeps empty lines and a last line without newline', () => {
    expect(split(['a', 'b\r\nc\n', '\nd', 'e'])).toEqual([
      ['ab', 0],
      ['c', 0],
      ['', 0],
      ['de', 0],
    ]);
    expect(split(['x\n'])).toEqual([['x', 0]]);
    expect(split([])).toEqual([]);
  });

  it('keeps the start of an overlong line and counts the rest, whatever the chunks', () => {
    expect(split(['0123', '4567', '89\nok\n'], 5)).toEqual([
      ['01234', 5],
      ['ok', 0],
    ]);
    expect(split(['abcdefgh'], 3)).toEqual([['abc', 5]]);
  });

  it('reads a line of many megabytes in many chunks in linear time', () => {
    // 20 MB in 64 KiB chunks: joining and searching the whole line per chunk would copy ~3 TB.
    const chunk = 'y'.repeat(65_536);
    const lines: [string, number][] = [];
    const splitter = createLineSplitter(1_048_576, (line, cut) => lines.push([line.slice(0, 3), cut]));
    for (let i = 0; i < 320; i++) splitter.push(chunk);
    splitter.push('\n');
    expect(lines).toEqual([['yyy', 320 * 65_536 - 1_048_576]]);
  });
});
