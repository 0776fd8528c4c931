import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { describeConfig, formatConfig, loadConfig } from '../../src/server/index.js';
import { ConfigError } from '../../src/config-schema/index.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-config-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Writes baton.yaml (when given) into the test directory and loads from there. */
function load(env: Record<string, string>, yaml?: string) {
  if (yaml !== undefined) fs.writeFileSync(path.join(dir, 'baton.yaml'), yaml);
  return loadConfig(env, dir);
}

function problemsOf(env: Record<string, string>, yaml?: string): string[] {
  try {
    load(env, yaml);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

function file(name: string, content: string): string {
  const target = path.join(dir, name);
  fs.writeFileSync(target, content, { mode: 0o600 });
  return target;
}

const CODER = {
  CODER_URL: 'https://coder.example',
  CODER_TOKEN: 'coder-token-1',
  CODER_TEMPLATE_ID: 'c6d67e98-83ea-49f0-8812-e4abae2b68bc',
};

describe('loadConfig', () => {
  it('starts with no configuration at all on the embedded defaults, frozen', () => {
    const { config, warnings } = load({});
    expect(config).toMatchObject({
      port: 3000,
      workspaceProvider: 'local',
      database: { url: `sqlite:${path.join(dir, 'data', 'baton.db')}`, sqliteSynchronous: 'NORMAL' },
      dataDir: path.join(dir, 'data'),
      queue: { concurrency: 2, maxAttempts: 3, backoffBaseMs: 5_000, retentionDays: 30 },
      cleanup: { concurrency: 5 },
      staleWorkspaceMinutes: 120,
      schedules: { timezone: 'UTC', maintenance: '0 9 * * 1' },
      bots: { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } },
      webhooks: { maxBodyBytes: 5 * 1024 * 1024 },
      coder: { staleAfterMs: 30 * 60_000, parameters: {} },
    });
    expect(config.pipeline.stages.map((s) => s.name)).toContain('develop');
    expect(config.comments.queued).toMatch(/queued/);
    expect(warnings).toEqual([expect.stringMatching(/^GITEA_URL is not set: baton will never post a status comment/)]);
    expect(Object.isFrozen(config.queue)).toBe(true);
    expect(Object.isFrozen(config.pipeline.stages)).toBe(true);
  });

  it('reads the original orchestrator variables with their meaning', () => {
    const { config, warnings } = load({
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
    });
    expect(config).toMatchObject({ port: 8080, queue: { concurrency: 4 }, cleanup: { concurrency: 3 }, staleWorkspaceMinutes: 90 });
    expect(config.gitea).toEqual({ url: 'https://git.example', webhookSecret: 's' });
    expect(config.bots.dev).toEqual({ username: 'dev-bot', token: 'd' });
    expect(config.pipeline.botUsers).toEqual(['dev-bot', 'claude-review']);
    expect(config.maintenance.repos).toEqual([
      { owner: 'acme', repo: 'app', cloneUrl: 'https://git.example/acme/app.git' },
      { owner: 'acme', repo: 'web', cloneUrl: 'ssh://git@git.example/acme/web.git' },
    ]);
    expect(warnings).toEqual([]);
  });

  it('lists every bad value at once, one line each, naming the key as it was given and the expected form', () => {
    expect(
      problemsOf(
        {
          QUEUE_CONCURRENCY: 'abc',
          PORT: '70000',
          DATABASE_URL: 'mysql://x',
          LOG_LEVEL: 'loud',
          MAINTENANCE_REPOS: 'nope',
          SCHEDULE_TIMEZONE: 'Mars/Base',
        },
        'queue:\n  maxAttempts: 0\ncomments:\n  failed: "{{oops}}"\n',
      ),
    ).toEqual([
      'PORT must be a whole number between 0 and 65535, got "70000"',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      'DATABASE_URL must be sqlite:PATH, postgres://… or postgresql://…, got "mysql://x"',
      'QUEUE_CONCURRENCY must be a whole number >= 1, got "abc"',
      'queue.maxAttempts must be a whole number >= 1, got "0"',
      'SCHEDULE_TIMEZONE must be an IANA time zone like Europe/Berlin, got "Mars/Base"',
      'MAINTENANCE_REPOS entry must look like org/repo=clone_url (or { repo: org/repo, cloneUrl }), got "nope"',
      expect.stringMatching(/^comments\.failed uses unknown placeholder \{\{oops\}\}/),
    ]);
  });

  it('reads baton.yaml from BATON_CONFIG, lets the environment win, and refuses what it cannot read', () => {
    const custom = file(
      'custom.yaml',
      'queue:\n  concurrency: 5\n  perRepository: 1\n  backoffBaseSeconds: 2\nschedules:\n  timezone: Europe/Berlin\nport: 4000\n',
    );
    const { config } = loadConfig({ BATON_CONFIG: custom, PORT: '4100' }, dir);
    expect(config).toMatchObject({
      port: 4100,
      queue: { concurrency: 5, perRepositoryConcurrency: 1, backoffBaseMs: 2_000 },
      schedules: { timezone: 'Europe/Berlin' },
      configFile: custom,
    });
    expect(problemsOf({ BATON_CONFIG: path.join(dir, 'missing.yaml') })[0]).toMatch(/cannot be read \(ENOENT\)/);
    file('custom.yaml', 'queue: [1\n');
    expect(problemsOf({ BATON_CONFIG: custom })[0]).toMatch(/is not valid YAML/);
  });

  it('refuses unknown keys at the top and inside every section, naming the path and the known keys', () => {
    const problems = problemsOf(
      {},
      [
        'qeue: { concurrency: 5 }',
        'queue: { concurency: 5 }',
        'coder: { templateVersion: x }',
        'api: { open: true }',
        'bots: { dev: { name: x } }',
        'pipeline: { stages: { develop: { acount: review } } }',
        'events: { webhooks: [{ url: "https://h.example", secretFile: /dev/null, event: [run.failed] }] }',
        '',
      ].join('\n'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^baton\.yaml: unknown key "qeue" \(known keys: port, host, .*queue, cleanup, .*comments\)$/),
        expect.stringMatching(/^baton\.yaml: unknown key "queue\.concurency" \(known keys: concurrency, perRepository, maxAttempts, /),
        expect.stringMatching(
          /^baton\.yaml: unknown key "coder\.templateVersion" \(known keys: url, tokenFile, templateId, templateVersionId, /,
        ),
        'baton.yaml: unknown key "api.open" (known keys: publicQueue, publicMetrics, bootstrapTokenFile)',
        'baton.yaml: unknown key "bots.dev.name" (known keys: username, tokenFile)',
        expect.stringMatching(/^baton\.yaml: unknown key "pipeline\.stages\.develop\.acount" \(known keys: account, build, /),
        'baton.yaml: unknown key "events.webhooks[0].event" (known keys: url, secretFile, events)',
      ]),
    );
  });

  it('refuses a secret written in baton.yaml, naming the variable or file key to use and never the secret', () => {
    const problems = problemsOf(
      {},
      [
        'gitea: { webhookSecret: yaml-secret-1 }',
        'bots: { dev: { token: yaml-secret-2 } }',
        'claude: { oauthToken: yaml-secret-3 }',
        'coder: { token: yaml-secret-4 }',
        'api: { bootstrapToken: yaml-secret-5-0123456789abcdef }',
        'database: { url: "postgres://baton:yaml-secret-6@db/baton" }',
        'events: { webhooks: [{ url: "https://h.example", secret: yaml-secret-7-0123456789 }] }',
        'webhooks: { repositories: { acme/app: { secret: yaml-secret-8 } } }',
        '',
      ].join('\n'),
    );
    expect(problems).toEqual([
      'database.url must not carry a password in baton.yaml. Set DATABASE_URL, or DATABASE_URL_FILE (or database.urlFile) to a file holding it.',
      'gitea.webhookSecret must not be written in baton.yaml: it is a secret. Set WEBHOOK_SECRET, or WEBHOOK_SECRET_FILE (or gitea.webhookSecretFile) to a file holding it.',
      'bots.dev.token must not be written in baton.yaml: it is a secret. Set GITEA_DEV_TOKEN, or GITEA_DEV_TOKEN_FILE (or bots.dev.tokenFile) to a file holding it.',
      'coder.token must not be written in baton.yaml: it is a secret. Set CODER_TOKEN, or CODER_TOKEN_FILE (or coder.tokenFile) to a file holding it.',
      'claude.oauthToken must not be written in baton.yaml: it is a secret. Set CLAUDE_OAUTH_TOKEN, or CLAUDE_OAUTH_TOKEN_FILE (or claude.oauthTokenFile) to a file holding it.',
      'api.bootstrapToken must not be written in baton.yaml: it is a secret. Set BATON_BOOTSTRAP_TOKEN, or BATON_BOOTSTRAP_TOKEN_FILE (or api.bootstrapTokenFile) to a file holding it.',
      "events.webhooks[0].secret must not be written in baton.yaml: it is a secret. Put it in a file and set events.webhooks[0].secretFile to the file's path.",
      'webhooks.repositories["acme/app"].secret must not be written in baton.yaml: it is a secret. Put it in a file and set webhooks.repositories["acme/app"].secretFile to the file\'s path.',
    ]);
    expect(problems.join('\n')).not.toMatch(/yaml-secret/);
  });

  it('reads secrets from the files named by *_FILE variables and …File keys', () => {
    file('hook-secret', 'webhook-from-file\n');
    file('claude-token', 'claude-from-file\n');
    file('hook-key', 'event-key-from-file-0123\n');
    const { config } = load(
      {
        GITEA_URL: 'https://git.example',
        GITEA_DEV_TOKEN_FILE: file('dev-token', 'dev-from-file\n'),
        GITEA_REVIEW_TOKEN: 'review-from-env',
        // Relative *_FILE paths are read from the working directory.
        WEBHOOK_SECRET_FILE: 'hook-secret',
        DATABASE_URL_FILE: file('database-url', 'postgres://baton:pw@db/baton\r\n'),
      },
      [
        // Relative …File paths in baton.yaml are read from baton.yaml's directory.
        'claude: { oauthTokenFile: claude-token }',
        'events: { webhooks: [{ url: "https://h.example", secretFile: hook-key }] }',
        `webhooks: { repositories: { Acme/App: { secretFile: ${file('repo-secret', 'per-repo')} } } }`,
        '',
      ].join('\n'),
    );
    expect(config.bots.dev.token).toBe('dev-from-file');
    expect(config.bots.review.token).toBe('review-from-env');
    expect(config.gitea.webhookSecret).toBe('webhook-from-file');
    expect(config.database.url).toBe('postgres://baton:pw@db/baton');
    expect(config.claude.oauthToken).toBe('claude-from-file');
    expect(config.events.webhooks[0]!.secret).toBe('event-key-from-file-0123');
    expect(config.webhooks.repositories).toEqual({ 'acme/app': { secret: 'per-repo' } });
  });

  it('names the variable and the path of a secret file it cannot use, never the content', () => {
    file('empty', '\n');
    const secretFile = file('token', 'the-file-content-0123456789');
    fs.mkdirSync(path.join(dir, 'a-directory'));
    expect(
      problemsOf({
        CODER_TOKEN_FILE: path.join(dir, 'missing'),
        CLAUDE_OAUTH_TOKEN_FILE: path.join(dir, 'empty'),
        WEBHOOK_SECRET_FILE: path.join(dir, 'a-directory'),
        GITEA_DEV_TOKEN: 'x',
        GITEA_DEV_TOKEN_FILE: secretFile,
        BATON_BOOTSTRAP_TOKEN_FILE: secretFile.replace('token', 'short'),
      }),
    ).toEqual([
      `WEBHOOK_SECRET_FILE points at ${path.join(dir, 'a-directory')}, which is not a file`,
      'GITEA_DEV_TOKEN and GITEA_DEV_TOKEN_FILE are both set; set one of them',
      `CODER_TOKEN_FILE points at ${path.join(dir, 'missing')}, which cannot be read (ENOENT)`,
      `CLAUDE_OAUTH_TOKEN_FILE points at ${path.join(dir, 'empty')}, which is empty`,
      `BATON_BOOTSTRAP_TOKEN_FILE points at ${path.join(dir, 'short')}, which cannot be read (ENOENT)`,
    ]);
    file('short', 'tooshort');
    const weak = problemsOf({ BATON_BOOTSTRAP_TOKEN_FILE: path.join(dir, 'short') });
    expect(weak).toEqual([
      'BATON_BOOTSTRAP_TOKEN (read from BATON_BOOTSTRAP_TOKEN_FILE) must be at least 32 characters without spaces (e.g. from "openssl rand -hex 32"), got 8 characters',
    ]);
    expect(weak.join()).not.toContain('tooshort');
  });

  it('keeps the default database in the data directory, so BATON_DATA_DIR moves it', () => {
    const moved = path.join(dir, 'elsewhere');
    expect(load({ BATON_DATA_DIR: moved }).config.database.url).toBe(`sqlite:${path.join(moved, 'baton.db')}`);
    expect(load({}, 'dataDir: ./state\n').config.database.url).toBe(`sqlite:${path.join(dir, 'state', 'baton.db')}`);
    expect(load({ BATON_DATA_DIR: moved, DATABASE_URL: 'sqlite:./mine.db' }).config.database.url).toBe('sqlite:./mine.db');
  });

  it('masks the password of any URL in errors and in the printed configuration', () => {
    const problems = problemsOf({ DATABASE_URL: 'postgress://baton:db-pass-1@db/baton', GITEA_URL: 'ftp://bot:forge-pass-2@git.example' });
    expect(problems).toEqual([
      'DATABASE_URL must be sqlite:PATH, postgres://… or postgresql://…, got "postgress://baton:********@db/baton"',
      'GITEA_URL must be an http:// or https:// URL, got "ftp://bot:********@git.example"',
    ]);
    const loaded = load({
      DATABASE_URL: 'postgres://baton:db-pass-1@db:5432/baton',
      GITEA_URL: 'https://bot:forge-pass-2@git.example',
      GITEA_DEV_TOKEN: 'dev-secret-3',
      GITEA_REVIEW_TOKEN: 'review-secret-4',
      WEBHOOK_SECRET: 'hook-secret-5',
      CLAUDE_OAUTH_TOKEN: 'claude-secret-6',
      MAINTENANCE_REPOS: 'acme/app=https://bot:clone-pass-7@git.example/acme/app.git',
      BATON_BOOTSTRAP_TOKEN: 'bootstrap-secret-8-0123456789abcdef',
      ...CODER,
      CALLBACK_URL: 'https://baton.example',
    });
    const printed = `${JSON.stringify(describeConfig(loaded))}\n${formatConfig(loaded)}`;
    for (const secret of [
      'db-pass-1',
      'forge-pass-2',
      'dev-secret-3',
      'review-secret-4',
      'hook-secret-5',
      'claude-secret-6',
      'clone-pass-7',
    ]) {
      expect(printed).not.toContain(secret);
    }
    expect(printed).not.toContain('bootstrap-secret-8');
    expect(printed).not.toContain(CODER.CODER_TOKEN);
    expect(printed).toContain('postgres://baton:********@db:5432/baton');
  });

  it('prints the configuration as baton.yaml spells it, each key with its variable and where it came from', () => {
    const loaded = load({ QUEUE_CONCURRENCY: '4', GITEA_DEV_TOKEN_FILE: file('dev', 'x') }, 'queue:\n  maxAttempts: 7\n');
    const text = formatConfig(loaded);
    expect(YAML.parse(text)).toEqual(describeConfig(loaded));
    expect(text).toMatch(/^ {2}concurrency: 4 # QUEUE_CONCURRENCY, set in the environment$/m);
    expect(text).toMatch(/^ {2}maxAttempts: 7 # from baton\.yaml$/m);
    expect(text).toMatch(/^ {2}leaseSeconds: 60 # default$/m);
    expect(text).toMatch(/^ {4}token: "\*{8}" # GITEA_DEV_TOKEN or GITEA_DEV_TOKEN_FILE, read from .*dev \(GITEA_DEV_TOKEN_FILE\)$/m);
    expect(text).toMatch(/^ {2}url: sqlite:.*baton\.db # DATABASE_URL or DATABASE_URL_FILE, default$/m);
  });
});

describe('loadConfig: moving from the original orchestrator', () => {
  it('uses Coder when CODER_URL and CODER_TOKEN are set and WORKSPACE_PROVIDER is not, and says so', () => {
    const { config, notices } = load({ ...CODER, CALLBACK_URL: 'https://baton.example' });
    expect(config.workspaceProvider).toBe('coder');
    expect(notices).toEqual([
      expect.stringMatching(/^WORKSPACE_PROVIDER is not set and CODER_URL and CODER_TOKEN are set: using the Coder provider/),
    ]);
    expect(load({ ...CODER, WORKSPACE_PROVIDER: 'local' }).config.workspaceProvider).toBe('local');
    expect(load({ CODER_URL: CODER.CODER_URL }).warnings).toContainEqual(
      expect.stringMatching(/^CODER_URL is set but CODER_TOKEN is not, so agents run as local processes/),
    );
  });

  it('requires CALLBACK_URL with Coder: workspaces cannot reach 127.0.0.1', () => {
    expect(problemsOf(CODER)).toEqual([
      expect.stringMatching(/^CALLBACK_URL is required when WORKSPACE_PROVIDER=coder: the base URL at which workspaces reach baton/),
    ]);
  });

  it('requires the Coder settings with the Coder provider, taking a pinned template version instead of CODER_TEMPLATE_ID', () => {
    expect(problemsOf({ WORKSPACE_PROVIDER: 'coder', CODER_URL: 'https://coder.example', CALLBACK_URL: 'https://baton.example' })).toEqual([
      'CODER_TOKEN (or CODER_TOKEN_FILE, or coder.tokenFile) is required when WORKSPACE_PROVIDER=coder (a Coder session token)',
      "CODER_TEMPLATE_ID (or coder.templateVersionId) is required when WORKSPACE_PROVIDER=coder (the template of baton's workspaces)",
    ]);
    const pinned = load(
      { WORKSPACE_PROVIDER: 'coder', CODER_URL: 'https://coder.example', CODER_TOKEN: 't', CALLBACK_URL: 'https://baton.example' },
      'coder:\n  templateVersionId: 0d7f9e0e-5b6a-4f0e-9a55-2f4b8f3c1a11\n  parameters: { region: eu, cpus: 4 }\n  staleAfterMinutes: 45\n',
    ).config.coder;
    expect(pinned).toMatchObject({
      templateVersionId: '0d7f9e0e-5b6a-4f0e-9a55-2f4b8f3c1a11',
      parameters: { region: 'eu', cpus: '4' },
      staleAfterMs: 45 * 60_000,
    });
    expect(problemsOf({}, 'coder:\n  parameters:\n    region: [eu]\n  staleAfterMinutes: soon\n')).toEqual([
      'coder.parameters.region must be a string, number or boolean, got "["eu"]"',
      'coder.staleAfterMinutes must be a number >= 1, got "soon"',
    ]);
  });

  it('warns at every start without GITEA_URL, and says REDIS_URL is no longer needed', () => {
    const { warnings } = load({ REDIS_URL: 'redis://localhost:6379' });
    expect(warnings).toEqual([
      expect.stringMatching(/^GITEA_URL is not set: baton will never post a status comment/),
      expect.stringMatching(/^REDIS_URL is set but baton no longer uses Redis.*DATABASE_URL/),
    ]);
  });

  it('requires both bot tokens with GITEA_URL', () => {
    expect(problemsOf({ GITEA_URL: 'https://git.example', GITEA_DEV_TOKEN: 'x' })).toEqual([
      'GITEA_REVIEW_TOKEN (or GITEA_REVIEW_TOKEN_FILE, or bots.review.tokenFile) is required when GITEA_URL is set (token of the review bot account)',
    ]);
  });
});

describe('loadConfig: api and events', () => {
  it('keeps /queue and /metrics private unless opened, and reads the event webhooks', () => {
    expect(load({}).config.api).toEqual({ publicQueue: false, publicMetrics: false });
    file('hook-key', '0123456789abcdef0123');
    const { config } = load(
      {},
      'api:\n  publicQueue: true\nevents:\n  webhooks:\n    - url: https://hooks.example.com/baton\n      secretFile: hook-key\n      events: [run.succeeded, run.failed]\n    - url: https://h2.example.com\n      secretFile: hook-key\n',
    );
    expect(config.api.publicQueue).toBe(true);
    expect(config.events.webhooks[0]).toEqual({
      url: 'https://hooks.example.com/baton',
      secret: '0123456789abcdef0123',
      events: ['run.succeeded', 'run.failed'],
    });
    // Every event but progress when events is left out.
    expect(config.events.webhooks[1]!.events).not.toContain('run.progress');
    expect(config.events.webhooks[1]!.events).toContain('run.timed_out');
  });

  it('names each bad event webhook key', () => {
    file('short', 'short');
    expect(
      problemsOf({}, 'events:\n  webhooks:\n    - url: ftp://x\n      secretFile: short\n      events: [run.exploded]\n    - events: []\n'),
    ).toEqual([
      'events.webhooks[0].url must be an http:// or https:// URL, got "ftp://x"',
      'events.webhooks[0].secret (read from events.webhooks[0].secretFile) must be at least 16 characters (the HMAC key the receiver verifies with)',
      expect.stringMatching(/^events\.webhooks\[0\]\.events\[0\] must be one of run\.queued, .*, got "run\.exploded"$/),
      'events.webhooks[1].url is required (the endpoint that receives the events)',
      'events.webhooks[1].secretFile is required (a file holding the HMAC key the receiver verifies with)',
      'events.webhooks[1].events must not be empty (leave it out for every event but run.progress)',
    ]);
  });
});
