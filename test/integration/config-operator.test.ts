import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../../src/config/index.js';

describe('api and events sections of baton.yaml', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-config-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const load = (yaml: string, env: Record<string, string> = {}) => {
    fs.writeFileSync(path.join(dir, 'baton.yaml'), yaml);
    return loadConfig(env, dir).config;
  };
  const problems = (yaml: string, env: Record<string, string> = {}) => {
    try {
      load(yaml, env);
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  };

  it('keeps /queue and /metrics private unless opened, and reads the webhooks', () => {
    expect(load('').api).toEqual({ publicQueue: false, publicMetrics: false });
    const config = load(
      'api:\n  publicQueue: true\nevents:\n  webhooks:\n    - url: https://hooks.example.com/baton\n      secret: 0123456789abcdef0123\n      events: [run.succeeded, run.failed]\n',
    );
    expect(config.api.publicQueue).toBe(true);
    expect(config.events.webhooks).toEqual([
      { url: 'https://hooks.example.com/baton', secret: '0123456789abcdef0123', events: ['run.succeeded', 'run.failed'] },
    ]);
    expect(JSON.stringify(describeConfig(config))).not.toContain('0123456789abcdef0123');
  });

  it('subscribes to every event but progress when events is left out', () => {
    const config = load('events:\n  webhooks:\n    - url: https://h.example.com\n      secret: 0123456789abcdef0123\n');
    expect(config.events.webhooks[0]!.events).not.toContain('run.progress');
    expect(config.events.webhooks[0]!.events).toContain('run.timed_out');
  });

  it('names each bad key', () => {
    expect(problems('api:\n  publicQueue: maybe\n  open: true\n')).toEqual([
      'baton.yaml: unknown key "api.open" (known keys: publicQueue, publicMetrics)',
      'api.publicQueue must be true or false, got "maybe"',
    ]);
    const bad = problems('events:\n  webhooks:\n    - url: ftp://x\n      secret: short\n      events: [run.exploded]\n');
    expect(bad).toContain('events.webhooks[0].url must be an http:// or https:// URL, got "ftp://x"');
    expect(bad).toContain('events.webhooks[0].secret must be a string of at least 16 characters (the HMAC key the receiver verifies with)');
    expect(bad.some((p) => p.startsWith('events.webhooks[0].events has unknown event "run.exploded"'))).toBe(true);
    const short = problems('', { BATON_BOOTSTRAP_TOKEN: 'tooshort' });
    expect(short).toEqual([expect.stringContaining('BATON_BOOTSTRAP_TOKEN must be at least 24 characters')]);
    expect(short[0]).not.toContain('tooshort');
  });
});
