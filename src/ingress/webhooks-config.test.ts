import { describe, expect, it } from 'vitest';
import { resolveIngressConfig } from './resolve-config.js';
import { isAllowed, parseWebhooksConfig } from './webhooks-config.js';

describe('parseWebhooksConfig', () => {
  it('gives the defaults when absent', () => {
    expect(parseWebhooksConfig(undefined)).toEqual({
      webhooks: {
        allow: [],
        requireWritePermission: false,
        permissionCacheMs: 60_000,
        maxBodyBytes: 5 * 1024 * 1024,
        deliveryRetentionDays: 7,
        repositories: {},
      },
      problems: [],
    });
  });

  it('reads every key', () => {
    const { webhooks, problems } = parseWebhooksConfig({
      allow: ['Acme/*', 'tools/app'],
      requireWritePermission: true,
      permissionCacheSeconds: 30,
      maxBodyBytes: 1024,
      deliveryRetentionDays: 2,
      repositories: { 'Acme/App': { secret: 's3cret' } },
    });
    expect(problems).toEqual([]);
    expect(webhooks).toEqual({
      allow: ['acme/*', 'tools/app'],
      requireWritePermission: true,
      permissionCacheMs: 30_000,
      maxBodyBytes: 1024,
      deliveryRetentionDays: 2,
      repositories: { 'acme/app': { secret: 's3cret' } },
    });
  });

  it('names each bad key and never echoes a secret', () => {
    const { problems } = parseWebhooksConfig({
      allow: ['acme'],
      requireWritePermission: 'yes',
      maxBodyBytes: -1,
      repositories: { 'acme/app': { secret: 12345678, token: 'x' }, acme: {} },
      extra: 1,
    });
    expect(problems).toEqual([
      'webhooks.extra is not a known key (known: allow, requireWritePermission, permissionCacheSeconds, maxBodyBytes, deliveryRetentionDays, repositories)',
      'webhooks.allow[0] must look like owner/repo or owner/* , got "acme"',
      'webhooks.requireWritePermission must be true or false, got "yes"',
      'webhooks.maxBodyBytes must be a number >= 1, got "-1"',
      'webhooks.repositories["acme/app"].token is not a known key (known: secret)',
      'webhooks.repositories["acme/app"].secret must be a non-empty string',
      'webhooks.repositories["acme"]: the key must be an owner/repo name, got "acme"',
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

describe('resolveIngressConfig', () => {
  it('collects the problems of both sections', () => {
    const result = resolveIngressConfig({
      file: { pipeline: { stages: { develop: { account: 'x' } } }, webhooks: { allow: 'acme' } },
      bots: { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } },
      gitea: { webhookSecret: 'abc' },
    });
    expect(result.secret).toBe('abc');
    expect(result.problems).toEqual([
      'pipeline.stages.develop.account must be one of dev, review, got "x"',
      'webhooks.allow[0] must look like owner/repo or owner/* , got "acme"',
    ]);
  });
});
