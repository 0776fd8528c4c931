import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readStream } from '../../src/agent/conversation.js';

describe('readStream', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  const write = (text: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-stream-'));
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'agent.ndjson'), text);
    return path.join(dir, 'agent.ndjson');
  };

  it('keeps a stream that fits whole', () => {
    expect(readStream(write('{"a":1}\n\n{"b":2}\n'), 1024)).toEqual({
      lines: ['{"a":1}', '{"b":2}'],
      truncated: false,
      cutLines: 0,
      cutAt: 0,
    });
  });

  it('keeps the beginning and the end of a long stream, whole lines only, and counts the lines between', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(40) }));
    const { lines: kept, truncated, cutLines, cutAt } = readStream(write(`${lines.join('\n')}\n`), 2_000);
    expect(truncated).toBe(true);
    expect(kept[0]).toBe(lines[0]);
    expect(kept.at(-1)).toBe(lines.at(-1));
    // Every kept line is one of the stream's, none cut in half, in order, and the count adds up.
    for (const line of kept) expect(lines).toContain(line);
    expect(kept.slice(0, cutAt)).toEqual(lines.slice(0, cutAt));
    expect(kept.slice(cutAt)).toEqual(lines.slice(lines.length - (kept.length - cutAt)));
    expect(kept.length + cutLines).toBe(lines.length);
  });

  it('reads a missing stream as none', () => {
    expect(readStream('/nonexistent/agent.ndjson')).toEqual({ lines: [], truncated: false, cutLines: 0, cutAt: 0 });
  });
});
