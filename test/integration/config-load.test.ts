import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../../src/config/index.js';

const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-config-'));

function problemsOf(env: Record<string, string>, dir = cwd): string[] {
  try {
    loadConfig(env, dir);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('starts with no configuration at all on the embedded defaults', () => {
    const { config, warnings } = loadConfig({}, cwd);
    expect(config).toMatchObject({
      port: 3000,
      workspaceProvider: 'local',
      database: { url: 'sqlite:./data/baton.db', sqliteSynchronous: 'NORMAL' },
      dataDir: path.join(cwd, 'data'),
      queue: { concurrency: 2, maxAttempts: 3, backoffBaseMs: 5_000, retentionDays: 30 },
      cleanup: { concurrency: 5 },
      staleWorkspaceMinutes: 120,
      schedules: { timezone: 'UTC', maintenance: '0 9 * * 1' },
      bots: { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } },
    });
    expect(warnings).toEqual([]);
    expect(Object.isFrozen(config.queue)).toBe(true);
  });

  it('reads the original orchestrator variables with their meaning', () => {
    const { config } = loadConfig(
      {
        PORT: '8080',
        QUEUE_CONCURRENCY: '4',
        CLEANUP_CONCURRENCY: '3',
        STALE_WORKSPACE_MINUTES: '90',
        BOT_DEV_USERNAME: 'dev-bot',
        MAINTENANCE_REPOS: 'acme/app=https://git.example/acme/app.git, acme/web=ssh://git@git.example/acme/web.git',
        GITEA_URL: 'https://git.example/',
        GITEA_DEV_TOKEN: 'd',
        GITEA_REVIEW_TOKEN: 'r',
        WEBHOOK_SECRET: 's',
      },
      cwd,
    );
    expect(config).toMatchObject({ port: 8080, queue: { concurrency: 4 }, cleanup: { concurrency: 3 }, staleWorkspaceMinutes: 90 });
    expect(config.gitea.url).toBe('https://git.example');
    expect(config.bots.dev).toEqual({ username: 'dev-bot', token: 'd' });
    expect(config.maintenanceRepos).toEqual([
      { owner: 'acme', repo: 'app', cloneUrl: 'https://git.example/acme/app.git' },
      { owner: 'acme', repo: 'web', cloneUrl: 'ssh://git@git.example/acme/web.git' },
    ]);
  });

  it('lists every bad value at once, one line each, naming the key and the expected form', () => {
    expect(
      problemsOf({
        QUEUE_CONCURRENCY: 'abc',
        PORT: '70000',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
        MAINTENANCE_REPOS: 'nope',
        SCHEDULE_TIMEZONE: 'Mars/Base',
      }),
    ).toEqual([
      'PORT must be a whole number between 0 and 65535, got "70000"',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      'DATABASE_URL must be sqlite:PATH, postgres://… or postgresql://…, got "mysql://x"',
      'QUEUE_CONCURRENCY must be a whole number >= 1, got "abc"',
      'SCHEDULE_TIMEZONE must be an IANA time zone like Europe/Berlin, got "Mars/Base"',
      'MAINTENANCE_REPOS entries must look like org/repo=clone_url, got "nope"',
    ]);
  });

  it('requires provider and forge variables only when they are in use', () => {
    expect(problemsOf({})).toEqual([]);
    expect(problemsOf({ WORKSPACE_PROVIDER: 'coder', CODER_URL: 'https://coder.example' })).toEqual([
      'CODER_TOKEN is required when WORKSPACE_PROVIDER=coder (a Coder session token)',
      'CODER_TEMPLATE_ID is required when WORKSPACE_PROVIDER=coder (the template UUID)',
    ]);
    expect(problemsOf({ GITEA_URL: 'https://git.example', GITEA_DEV_TOKEN: 'x' })).toEqual([
      'GITEA_REVIEW_TOKEN is required when GITEA_URL is set (token of the review bot account)',
    ]);
  });

  it('says REDIS_URL is no longer needed and what to set instead', () => {
    const { warnings } = loadConfig({ REDIS_URL: 'redis://localhost:6379' }, cwd);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no longer uses Redis/);
    expect(warnings[0]).toMatch(/DATABASE_URL/);
  });

  it('reads baton.yaml from BATON_CONFIG, lets the environment win, and rejects unknown keys', () => {
    const file = path.join(cwd, 'custom.yaml');
    fs.writeFileSync(
      file,
      'queue:\n  concurrency: 5\n  perRepository: 1\n  backoffBaseSeconds: 2\nschedules:\n  timezone: Europe/Berlin\nport: 4000\n',
    );
    const { config } = loadConfig({ BATON_CONFIG: file, PORT: '4100' }, cwd);
    expect(config).toMatchObject({
      port: 4100,
      queue: { concurrency: 5, perRepositoryConcurrency: 1, backoffBaseMs: 2_000 },
      schedules: { timezone: 'Europe/Berlin' },
    });

    fs.writeFileSync(file, 'qeue:\n  concurrency: 5\nschedules:\n  maintenance: every monday\n');
    expect(problemsOf({ BATON_CONFIG: file })).toEqual([
      expect.stringMatching(/^baton.yaml: unknown key "qeue"/),
      'schedules.maintenance must be a cron expression like "0 9 * * 1", got "every monday"',
    ]);
    expect(problemsOf({ BATON_CONFIG: path.join(cwd, 'missing.yaml') })[0]).toMatch(/cannot be read \(ENOENT\)/);
    fs.writeFileSync(file, 'queue: [1\n');
    expect(problemsOf({ BATON_CONFIG: file })[0]).toMatch(/is not valid YAML/);
  });

  it('masks every secret in the printed configuration', () => {
    const secrets = {
      GITEA_DEV_TOKEN: 'dev-secret-1',
      GITEA_REVIEW_TOKEN: 'review-secret-2',
      WEBHOOK_SECRET: 'hook-secret-3',
      CODER_TOKEN: 'coder-secret-4',
      CLAUDE_OAUTH_TOKEN: 'claude-secret-5',
    };
    const { config } = loadConfig(
      { ...secrets, GITEA_URL: 'https://git.example', DATABASE_URL: 'postgres://baton:db-secret-6@db:5432/baton' },
      cwd,
    );
    const printed = JSON.stringify(describeConfig(config));
    for (const secret of [...Object.values(secrets), 'db-secret-6']) expect(printed).not.toContain(secret);
    expect(printed).toContain('postgres://baton:********@db:5432/baton');
  });
});
