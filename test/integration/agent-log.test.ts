import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAgentLog } from '../../src/agent/agent-log.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-agent-log-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('agent log masking', () => {
  const secret = 'gitea-token-0123456789';

  it('masks a secret in a stream even when it is split across pieces', () => {
    const log = createAgentLog({ file: path.join(dir, 'agent.log'), secrets: [secret, 'short'] });
    const text = `start ${secret} middle ${secret}${secret} end`;
    // Every way of cutting the text in two, and one character at a time.
    for (let cut = 0; cut <= text.length; cut++) {
      const mask = log.createStreamMask();
      const out = mask.push(text.slice(0, cut)) + mask.push(text.slice(cut)) + mask.end();
      expect(out).toBe('start *** middle ****** end');
    }
    const mask = log.createStreamMask();
    expect([...text].map((c) => mask.push(c)).join('') + mask.end()).toBe('start *** middle ****** end');
    log.close();
  });

  it('writes masked lines to the file by close, and to listeners at once', () => {
    const file = path.join(dir, 'agent.log');
    const log = createAgentLog({ file, secrets: [secret], now: () => 0 });
    const seen: string[] = [];
    log.onLine((l) => seen.push(l));
    log.write(`token ${secret}`);
    expect(seen).toEqual(['token ***']);
    log.flush();
    expect(fs.readFileSync(file, 'utf8')).toBe('1970-01-01T00:00:00.000Z token ***\n');
    log.write('second');
    log.close();
    expect(fs.readFileSync(file, 'utf8')).toContain('second');
    expect(fs.readFileSync(file, 'utf8')).not.toContain(secret);
  });
});
