import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { isAllowed, parseWebhooksConfig } from '../../src/ingress/webhooks-config.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-webhooks-config-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('parseWebhooksConfig', () => {
  it('gives the defaults when absent', () => {
    expect(parseWebhooksConfig(undefined)).toEqual({
      webhooks: {
        allow: [],
        requireWritePermission: true,
        permissionCacheMs: 60_000,
        maxBodyBytes: 5 * 1024 * 1024,
        deliveryRetentionDays: 7,
        leaseMs: 60_000,
        retryMaxMs: 300_000,
        repositories: {},
        allowUnsigned: false,
        acceptBudgetMs: 2_000,
      },
      problems: [],
    });
  });

  it('requires write access of a webhook sender by default, and warns at every start when the operator turns it off', () => {
    expect(parseWebhooksConfig(undefined).webhooks.requireWritePermission).toBe(true);
    fs.writeFileSync(path.join(dir, 'off.yaml'), 'webhooks: { requireWritePermission: false }\n');
    const { config, warnings } = loadConfig({ BATON_CONFIG: 'off.yaml' }, dir);
    expect(config.webhooks.requireWritePermission).toBe(false);
    expect(warnings.join('\n')).toContain('webhooks.requireWritePermission is false: anyone who can open an issue');
    fs.mkdirSync(path.join(dir, 'empty'), { recursive: true });
    expect(loadConfig({}, path.join(dir, 'empty')).warnings.join('\n')).not.toContain('requireWritePermission');
  });

  it('reads every key', () => {
    fs.writeFileSync(path.join(dir, 'acme-app'), 's3cret\n');
    const { webhooks, problems } = parseWebhooksConfig({
      allow: ['Acme/*', 'tools/app'],
      requireWritePermission: true,
      permissionCacheSeconds: 30,
      maxBodyBytes: 1024,
      deliveryRetentionDays: 2,
      repositories: { 'Acme/App': { secretFile: path.join(dir, 'acme-app') } },
      allowUnsigned: true,
      acceptBudgetSeconds: 0.5,
      spoolDir: path.join(dir, 'spool'),
    });
    expect(problems).toEqual([]);
    expect(webhooks).toEqual({
      allow: ['acme/*', 'tools/app'],
      requireWritePermission: true,
      permissionCacheMs: 30_000,
      maxBodyBytes: 1024,
      deliveryRetentionDays: 2,
      leaseMs: 60_000,
      retryMaxMs: 300_000,
      repositories: { 'acme/app': { secret: 's3cret' } },
      allowUnsigned: true,
      acceptBudgetMs: 500,
      spoolDir: path.join(dir, 'spool'),
    });
  });

  it('names each bad key and never echoes a secret', () => {
    const { problems } = parseWebhooksConfig({
      allow: ['acme'],
      requireWritePermission: 'maybe',
      maxBodyBytes: -1,
      repositories: { 'acme/app': { secret: 12345678, token: 'x' }, acme: {} },
      extra: 1,
    });
    expect(problems).toEqual([
      'baton.yaml: unknown key "webhooks.extra" (known keys: allow, requireWritePermission, permissionCacheSeconds, maxBodyBytes, deliveryRetentionDays, leaseSeconds, retryMaxSeconds, repositories, allowUnsigned, acceptBudgetSeconds, spoolDir)',
      'webhooks.allow[0] must look like owner/repo or owner/*, got "acme"',
      'webhooks.requireWritePermission must be true or false, got "maybe"',
      'webhooks.maxBodyBytes must be a whole number >= 1, got "-1"',
      'baton.yaml: unknown key "webhooks.repositories["acme/app"].token" (known keys: secretFile)',
      'webhooks.repositories["acme/app"].secret must not be written in baton.yaml: it is a secret. Put it in a file and set webhooks.repositories["acme/app"].secretFile to the file\'s path.',
      'webhooks.repositories: the key "acme" must be an owner/repo name',
    ]);
    expect(problems.join('\n')).not.toContain('12345678');
  });

  it('matches allowlist patterns by segment, case-insensitively', () => {
    expect(isAllowed([], 'any', 'thing')).toBe(true);
    expect(isAllowed(['acme/*'], 'ACME', 'app')).toBe(true);
    expect(isAllowed(['acme/*'], 'acme-evil', 'app')).toBe(false);
    expect(isAllowed(['acme/app'], 'acme', 'app2')).toBe(false);
    expect(isAllowed(['*/app'], 'tools', 'app')).toBe(true);
  });
});
