import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceFirstToken, FIRST_TOKEN_FILE } from '../../src/server/first-token.js';

describe('first admin token hand-over', () => {
  let dir: string;
  const warnings: Array<{ details: object; message: string }> = [];
  const logger = { warn: (details: object, message: string) => warnings.push({ details, message }) } as never;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-first-token-'));
    warnings.length = 0;
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('shows it on the terminal when there is one, and writes no file', () => {
    let shown = '';
    announceFirstToken('baton_the-token', {
      dataDir: dir,
      logger,
      terminal: { isTTY: true, write: (text: string) => ((shown += text), true) },
    });
    expect(shown).toContain('  baton_the-token\n');
    expect(fs.existsSync(path.join(dir, FIRST_TOKEN_FILE))).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('without a terminal, replaces any leftover file with a 0600 one and logs only its path', () => {
    const file = path.join(dir, FIRST_TOKEN_FILE);
    fs.writeFileSync(file, 'stale', { mode: 0o644 });
    let shown = '';
    announceFirstToken('baton_the-token', {
      dataDir: dir,
      logger,
      terminal: { isTTY: false, write: (text: string) => ((shown += text), true) },
    });
    expect(shown).toBe('');
    expect(fs.readFileSync(file, 'utf8')).toBe('baton_the-token\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(warnings)).toContain(file);
    expect(JSON.stringify(warnings)).not.toContain('baton_the-token');
  });
});
