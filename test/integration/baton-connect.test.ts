import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectCommand } from '../../src/cli/connect-command.js';
import type { CommandIo } from '../../src/cli/index.js';
import { loadConfig } from '../../src/server/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';

const PIPELINE_LABELS = ['bug', 'ready-for-architecture', 'ready-for-development', 'ready-for-testing', 'ready-for-deployment', 'release'];
const EVENTS = ['issue_comment', 'issue_label', 'issues', 'pull_request', 'pull_request_label', 'pull_request_review', 'pull_request_sync'];

/**
 * The working directory the config is read in: an empty one, never the checkout, where a user's
 * `npm start` left ./data/webhook-secret (connect would sign with it) or a `./baton.yaml`.
 */
let cwd: string;
beforeAll(() => {
  cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-connect-cwd-'));
});
afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

describe.each([false, true])('baton connect against the fake Gitea (review flag as in Gitea ≤1.23: %s)', (legacyHookReviewEvents) => {
  let gitea: FakeGitea;
  let tokens: { ops: string; dev: string; review: string };

  beforeEach(async () => {
    gitea = await createFakeGitea({ legacyHookReviewEvents });
    gitea.addRepo('acme', 'app');
    tokens = {
      ops: gitea.addUser('ops').token,
      dev: gitea.addUser('claude-dev').token,
      review: gitea.addUser('claude-review').token,
    };
    gitea.addCollaborator('acme', 'app', 'ops', 'admin');
    // The sender permission check (on by default) needs the dev bot to be a repository admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'claude-review', 'read');
    gitea.addLabel('acme', 'app', { name: 'bug', color: 'ee0701' });
    // The pipeline compares label names ignoring case: this one is not created again.
    gitea.addLabel('acme', 'app', { name: 'Release', color: '5319e7' });
  });
  afterEach(async () => {
    await gitea.close();
  });

  const env = (over: Record<string, string | undefined> = {}) => ({
    GITEA_URL: gitea.url,
    GITEA_ADMIN_TOKEN: tokens.ops,
    GITEA_DEV_TOKEN: tokens.dev,
    GITEA_REVIEW_TOKEN: tokens.review,
    PUBLIC_URL: 'https://baton.example.com',
    WEBHOOK_SECRET: 'first-secret-0123456789',
    ...over,
  });
  const connect = async (argv: string[], over: Record<string, string | undefined> = {}, file?: string) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: CommandIo = { out: (t) => out.push(t), err: (t) => err.push(t), env: {} };
    const { config } = file === undefined ? loadConfig(env(over), cwd) : loadConfig({ ...env(over), BATON_CONFIG: file }, cwd);
    const code = await connectCommand(argv, io, config);
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const writes = () => gitea.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/issues/0/comments'));

  it('plans with --dry-run and changes nothing', async () => {
    const { code, out } = await connect(['acme/app', '--dry-run']);
    expect(code, out).toBe(0);
    expect(out).toContain(
      'would create https://baton.example.com/webhook/gitea (json, active, events: issue_comment, issue_label, issues_only',
    );
    expect(out).toMatch(/would create ready-for-development \(baton: starts develop\)/);
    expect(out).not.toMatch(/would create (bug|release)\b/i);
    expect(writes()).toEqual([]);
    expect(gitea.hooks('acme', 'app')).toEqual([]);
  });

  it('creates an active, signed JSON webhook and the missing labels, checks the bots, and changes nothing the second time', async () => {
    const first = await connect(['acme/app']);
    expect(first.code, first.out).toBe(0);
    expect(gitea.hooks('acme', 'app')).toEqual([
      {
        id: expect.any(Number),
        url: 'https://baton.example.com/webhook/gitea',
        contentType: 'json',
        secret: 'first-secret-0123456789',
        events: EVENTS,
        active: true,
        branchFilter: '',
      },
    ]);
    expect(
      gitea
        .labelNames('acme', 'app')
        .map((n) => n.toLowerCase())
        .sort(),
    ).toEqual([...PIPELINE_LABELS].sort());
    expect(first.out).toMatch(/^ok\s+bot dev\s+claude-dev can read and comment, and push$/m);
    expect(first.out).toMatch(/^ok\s+bot review\s+claude-review can read and comment$/m);
    expect(first.out).toMatch(/acme\/app is ready$/);

    const before = writes().length;
    const second = await connect(['acme/app']);
    expect(second.code, second.out).toBe(0);
    expect(second.out).not.toMatch(/^change/m);
    expect(second.out).toMatch(/^ok\s+webhook\s+https:\/\/baton\.example\.com\/webhook\/gitea is up to date/m);
    expect(writes()).toHaveLength(before);
    expect(gitea.hooks('acme', 'app')).toHaveLength(1);
  });

  it('sets right a hook that drifted, keeping its secret, and replaces it with --recreate to change the secret', async () => {
    await connect(['acme/app']);
    const [hook] = gitea.hooks('acme', 'app');
    // Someone unticked events and deactivated it in the forge's settings.
    const stored = gitea.state.hooks.get(hook!.id)!;
    stored.active = false;
    stored.events = new Set(['push']);
    const fixed = await connect(['acme/app']);
    expect(fixed.out).toMatch(/updated hook \d+: inactive → active; add events .*; drop events push/);
    expect(gitea.hooks('acme', 'app')).toEqual([{ ...hook, events: EVENTS, active: true }]);

    const rotated = await connect(['acme/app', '--recreate'], { WEBHOOK_SECRET: 'second-secret-0123456789' });
    expect(rotated.code, rotated.out).toBe(0);
    const after = gitea.hooks('acme', 'app');
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ secret: 'second-secret-0123456789', active: true, events: EVENTS });
    expect(after[0]!.id).not.toBe(hook!.id);
  });

  it('finds existing labels on every page (at most 50 per page) and never duplicates them', async () => {
    for (let i = 0; i < 60; i++) gitea.addLabel('acme', 'app', { name: `area/${String(i).padStart(2, '0')}` });
    // Sorted by name, these land after the first 50.
    for (const name of ['ready-for-architecture', 'ready-for-deployment', 'ready-for-development', 'ready-for-testing'])
      gitea.addLabel('acme', 'app', { name });
    const { code, out } = await connect(['acme/app']);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/created ready-/);
    for (const name of PIPELINE_LABELS) expect(gitea.labelNames('acme', 'app').filter((n) => n.toLowerCase() === name)).toHaveLength(1);
  });
});

describe('baton connect refusals', () => {
  let gitea: FakeGitea;
  let tokens: Record<string, string>;

  beforeEach(async () => {
    gitea = await createFakeGitea();
    gitea.addRepo('acme', 'app');
    tokens = {
      dev: gitea.addUser('claude-dev').token,
      review: gitea.addUser('claude-review').token,
      stranger: gitea.addUser('mallory').token,
      scoped: gitea.addToken('claude-review', undefined, ['read:user', 'read:repository', 'read:issue']),
    };
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'write');
    gitea.addCollaborator('acme', 'app', 'claude-review', 'read');
  });
  afterEach(async () => {
    await gitea.close();
  });

  const run = async (argv: string[], env: Record<string, string>) => {
    const out: string[] = [];
    const err: string[] = [];
    const { config } = loadConfig(
      {
        GITEA_URL: gitea.url,
        PUBLIC_URL: 'http://192.168.1.20:3000',
        WEBHOOK_SECRET: 'secret-0123456789',
        ...env,
      },
      cwd,
    );
    const code = await connectCommand(argv, { out: (t) => out.push(t), err: (t) => err.push(t), env: {} }, config);
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('stops when its token is not a repository admin, saying which token and what to do, and writes nothing', async () => {
    const { code, out } = await run(['acme/app'], { GITEA_DEV_TOKEN: tokens.dev!, GITEA_REVIEW_TOKEN: tokens.review! });
    expect(code).toBe(1);
    expect(out).toMatch(
      /^FAIL\s+repository\s+claude-dev \(GITEA_DEV_TOKEN\) is not an admin of acme\/app, and webhooks need one: .*GITEA_ADMIN_TOKEN/m,
    );
    expect(gitea.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('names each problem of the bots and of the settings, and a private PUBLIC_URL the forge may refuse', async () => {
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    const { code, out } = await run(['acme/app'], {
      GITEA_ADMIN_TOKEN: tokens.dev!,
      GITEA_DEV_TOKEN: tokens.stranger!,
      GITEA_REVIEW_TOKEN: tokens.scoped!,
    });
    expect(code).toBe(1);
    expect(out).toMatch(/^FAIL\s+bot dev\s+GITEA_DEV_TOKEN belongs to mallory, not to claude-dev: .*BOT_DEV_USERNAME=mallory/m);
    expect(out).toMatch(
      /^FAIL\s+bot review\s+claude-review cannot comment on acme\/app: token does not have at least one of required scope\(s\): \[write:issue\]/m,
    );
    expect(out).toMatch(/^warn\s+webhook\s+http:\/\/192\.168\.1\.20:3000 is a loopback or private address: .*ALLOWED_HOST_LIST/m);
  });

  it('refuses to make a webhook without a secret or a public URL', async () => {
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    const { code, out } = await run(['acme/app', '--dry-run'], {
      GITEA_DEV_TOKEN: tokens.dev!,
      GITEA_REVIEW_TOKEN: tokens.review!,
      WEBHOOK_SECRET: '',
    });
    expect(code).toBe(1);
    expect(out).toMatch(/^FAIL\s+webhook\s+no webhook secret: start baton serve once/m);
  });

  it('signs the webhook with the secret baton serve generated in its data directory', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-connect-data-'));
    try {
      fs.writeFileSync(path.join(dataDir, 'webhook-secret'), 'generated-secret-0123456789abcdef\n', { mode: 0o600 });
      gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
      const { out } = await run(['acme/app'], {
        GITEA_DEV_TOKEN: tokens.dev!,
        GITEA_REVIEW_TOKEN: tokens.review!,
        WEBHOOK_SECRET: '',
        BATON_DATA_DIR: dataDir,
      });
      expect(gitea.hooks('acme', 'app')).toMatchObject([
        { url: 'http://192.168.1.20:3000/webhook/gitea', secret: 'generated-secret-0123456789abcdef' },
      ]);
      expect(out).not.toContain('generated-secret');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says a repository it cannot see does not exist for its token', async () => {
    const { code, out } = await run(['acme/nope'], { GITEA_DEV_TOKEN: tokens.dev!, GITEA_REVIEW_TOKEN: tokens.review! });
    expect(code).toBe(1);
    expect(out).toMatch(/acme\/nope does not exist, or GITEA_DEV_TOKEN's user cannot see it/);
  });
});
