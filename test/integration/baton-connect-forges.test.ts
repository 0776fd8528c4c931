import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectCommand } from '../../src/cli/connect-command.js';
import type { CommandIo } from '../../src/cli/index.js';
import { loadConfig } from '../../src/server/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';

const DEV = 'dev-token-0123456789';
const REVIEW = 'review-token-0123456789';
const SECRET = 'forge-secret-0123456789';
const PIPELINE_LABELS = ['bug', 'ready-for-architecture', 'ready-for-development', 'ready-for-testing', 'ready-for-deployment', 'release'];

/** An empty working directory: never the checkout, where a user's ./data or ./baton.yaml could be. */
let cwd: string;
beforeAll(() => {
  cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-connect-forges-'));
});
afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

interface ForgeWorld {
  url: string;
  env: Record<string, string>;
  /** The repository's hooks as the fake holds them: URL, secret and the forge's own event names. */
  hooks(): { url: string; secret: string; events: string[] }[];
  labels(): string[];
  /** Takes the dev bot's admin (Maintainer) role away. */
  demote(): void;
  close(): Promise<void>;
}

const forges: { name: string; forge: 'github' | 'gitlab'; events: string[]; start(): Promise<ForgeWorld> }[] = [
  {
    name: 'GitHub',
    forge: 'github',
    // GitHub's own event names for the default pipeline's triggers.
    events: ['issue_comment', 'issues', 'pull_request', 'pull_request_review'],
    async start() {
      const github: FakeGitHub = await createFakeGitHub();
      github.addUser('claude-dev', { token: DEV });
      github.addUser('claude-review', { token: REVIEW });
      github.addUser('acme');
      github.addRepo('acme', 'app', { private: true });
      github.setPermission('acme', 'app', 'claude-dev', 'admin');
      github.setPermission('acme', 'app', 'claude-review', 'write');
      github.addLabel('acme', 'app', 'bug');
      return {
        url: github.url,
        env: { GITHUB_URL: github.url, GITHUB_DEV_TOKEN: DEV, GITHUB_REVIEW_TOKEN: REVIEW, GITHUB_WEBHOOK_SECRET: SECRET },
        hooks: () => github.hooks('acme', 'app').map((h) => ({ url: h.url, secret: h.secret, events: [...h.events].sort() })),
        labels: () => github.state.repo('acme', 'app')!.labels.map((l) => l.name),
        demote: () => github.setPermission('acme', 'app', 'claude-dev', 'write'),
        close: () => github.close(),
      };
    },
  },
  {
    name: 'GitLab',
    forge: 'gitlab',
    // GitLab's hook flags: approvals arrive as merge request events, comments as notes.
    events: ['issues_events', 'merge_requests_events', 'note_events'],
    async start() {
      const gitlab: FakeGitLab = await createFakeGitLab();
      gitlab.addUser('claude-dev', { token: DEV });
      gitlab.addUser('claude-review', { token: REVIEW });
      gitlab.addProject('acme', 'app');
      gitlab.setAccess('acme', 'app', 'claude-dev', 40);
      gitlab.setAccess('acme', 'app', 'claude-review', 30);
      gitlab.addLabel('acme', 'app', 'bug');
      return {
        url: gitlab.url,
        env: { GITLAB_URL: gitlab.url, GITLAB_DEV_TOKEN: DEV, GITLAB_REVIEW_TOKEN: REVIEW, GITLAB_WEBHOOK_SECRET: SECRET },
        hooks: () =>
          gitlab.hooks('acme', 'app').map((h) => ({
            url: h.url,
            secret: h.token,
            events: Object.keys(h.flags)
              .filter((flag) => h.flags[flag])
              .sort(),
          })),
        labels: () => gitlab.state.project('acme/app')!.labels.map((l) => l.name),
        demote: () => gitlab.setAccess('acme', 'app', 'claude-dev', 30),
        close: () => gitlab.close(),
      };
    },
  },
];

describe.each(forges)('baton connect $forge:acme/app against the fake $name', ({ forge, events, start }) => {
  let world: ForgeWorld;
  afterEach(async () => {
    await world.close();
  });

  async function connect(argv: string[], over: Record<string, string | undefined> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    const io: CommandIo = { out: (t) => out.push(t), err: (t) => err.push(t), env: {} };
    const { config } = loadConfig({ PUBLIC_URL: 'https://baton.example.com', ...world.env, ...over }, cwd);
    const code = await connectCommand(argv, io, config);
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('plans with --dry-run, then makes the webhook in the forge’s own terms and the missing labels, and changes nothing the second time', async () => {
    world = await start();
    const plan = await connect([`${forge}:acme/app`, '--dry-run']);
    expect(plan.code, plan.out).toBe(0);
    expect(plan.out).toContain(`would create https://baton.example.com/webhook/${forge} (json, active, events: ${events.join(', ')})`);
    expect(world.hooks()).toEqual([]);

    const first = await connect([`${forge}:acme/app`]);
    expect(first.code, first.out).toBe(0);
    expect(world.hooks()).toEqual([{ url: `https://baton.example.com/webhook/${forge}`, secret: SECRET, events }]);
    expect([...world.labels()].sort()).toEqual([...PIPELINE_LABELS].sort());
    expect(first.out).toMatch(/ok\s+bot dev\s+claude-dev can read and comment, and push/);
    expect(first.out).toContain(`${forge}:acme/app is ready`);

    const again = await connect([`${forge}:acme/app`]);
    expect(again.code, again.out).toBe(0);
    expect(again.out).not.toMatch(/^change/m);
    expect(world.hooks()).toHaveLength(1);
  });

  it('stops when the dev bot may not make webhooks, saying what to give it, and writes nothing', async () => {
    world = await start();
    world.demote();
    const { code, out } = await connect([`${forge}:acme/app`]);
    expect(code).toBe(1);
    expect(out).toContain(`claude-dev (${forge.toUpperCase()}_DEV_TOKEN) is not an admin of acme/app`);
    expect(out).toContain(forge === 'github' ? 'the Admin role' : 'the Maintainer role (40)');
    expect(world.hooks()).toEqual([]);
  });

  it('names the forge’s missing URL', async () => {
    world = await start();
    const prefix = forge.toUpperCase();
    const { code, err } = await connect([`${forge}:acme/app`], {
      [`${prefix}_URL`]: undefined,
      [`${prefix}_DEV_TOKEN`]: undefined,
      [`${prefix}_REVIEW_TOKEN`]: undefined,
      [`${prefix}_WEBHOOK_SECRET`]: undefined,
    });
    expect(code).toBe(1);
    expect(err).toContain(`${prefix}_URL is not set`);
    expect(world.hooks()).toEqual([]);
  });
});

describe('baton connect gitlab: a project in a subgroup', () => {
  let gitlab: FakeGitLab;
  afterEach(async () => {
    await gitlab.close();
  });

  async function connect(argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const io: CommandIo = { out: (t) => out.push(t), err: (t) => err.push(t), env: {} };
    const env = { PUBLIC_URL: 'https://baton.example.com', GITLAB_URL: gitlab.url, GITLAB_DEV_TOKEN: DEV, GITLAB_REVIEW_TOKEN: REVIEW };
    const { config } = loadConfig({ ...env, GITLAB_WEBHOOK_SECRET: SECRET }, cwd);
    const code = await connectCommand(argv, io, config);
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('makes the hook and labels of acme/platform/app, the bots Maintainer and Developer of the top-level group', async () => {
    gitlab = await createFakeGitLab();
    gitlab.addUser('claude-dev', { token: DEV });
    gitlab.addUser('claude-review', { token: REVIEW });
    gitlab.addProject('acme/platform', 'app');
    gitlab.setGroupAccess('acme', 'claude-dev', 40);
    gitlab.setGroupAccess('acme', 'claude-review', 30);
    const first = await connect(['gitlab:acme/platform/app']);
    expect(first.code, first.out).toBe(0);
    expect(gitlab.hooks('acme/platform', 'app').map((h) => h.url)).toEqual(['https://baton.example.com/webhook/gitlab']);
    expect(
      gitlab.state
        .project('acme/platform/app')!
        .labels.map((l) => l.name)
        .sort(),
    ).toEqual([...PIPELINE_LABELS].sort());
    expect(first.out).toContain('gitlab:acme/platform/app is ready');
  });

  it.each(['gitlab:acme//app', 'gitlab:acme/../app', 'gitlab:acme/platform.git/app', 'gitlab:app'])(
    'refuses %s, saying what a GitLab project path looks like',
    async (given) => {
      gitlab = await createFakeGitLab();
      await expect(connect([given])).rejects.toThrow(`the repository must look like namespace/project`);
    },
  );
});

describe('baton connect github: with a GitHub App as the dev bot', () => {
  let github: FakeGitHub;
  let app: ReturnType<FakeGitHub['addApp']>;
  let keyFile: string;
  afterEach(async () => {
    await github.close();
  });

  async function start(events?: string[]) {
    github = await createFakeGitHub();
    app = github.addApp('baton-ci', events ? { events } : {});
    github.addUser('claude-review', { token: REVIEW });
    github.addUser('acme');
    github.addRepo('acme', 'app', { private: true });
    github.addRepo('acme', 'elsewhere', { private: true });
    github.installApp(app.id, 'acme', ['app']);
    github.setPermission('acme', 'app', 'claude-review', 'write');
    github.addLabel('acme', 'app', 'bug');
    keyFile = path.join(cwd, `app-${app.id}.pem`);
    fs.writeFileSync(keyFile, app.privateKey, { mode: 0o600 });
  }
  async function connect(argv: string[]) {
    const out: string[] = [];
    const io: CommandIo = { out: (t) => out.push(t), err: (t) => out.push(t), env: {} };
    const env = {
      PUBLIC_URL: 'https://baton.example.com',
      GITHUB_URL: github.url,
      GITHUB_APP_ID: String(app.id),
      GITHUB_APP_PRIVATE_KEY_FILE: keyFile,
      GITHUB_REVIEW_TOKEN: REVIEW,
      GITHUB_WEBHOOK_SECRET: SECRET,
    };
    const { config } = loadConfig(env, cwd);
    const code = await connectCommand(argv, io, config);
    return { code, out: out.join('\n') };
  }
  const hook = () => github.state.apps.get(app.id)!.hook;

  it("sets the App's own webhook (no repository hook) and the labels, once; the bots are the App and the review user", async () => {
    await start();
    const plan = await connect(['github:acme/app', '--dry-run']);
    expect(plan.code, plan.out).toBe(0);
    expect(plan.out).toContain("would update the App's webhook: url (none) → https://baton.example.com/webhook/github; secret set");
    expect(hook().url).toBe('');

    const first = await connect(['github:acme/app']);
    expect(first.code, first.out).toBe(0);
    expect(hook()).toMatchObject({ url: 'https://baton.example.com/webhook/github', contentType: 'json', secret: SECRET });
    expect(github.hooks('acme', 'app')).toEqual([]);
    expect([...github.state.repo('acme', 'app')!.labels.map((l) => l.name)].sort()).toEqual([...PIPELINE_LABELS].sort());
    expect(first.out).toMatch(/ok\s+repository\s+acme\/app, the App baton-ci is installed \(it acts as baton-ci\[bot\]\)/);
    expect(first.out).toMatch(/ok\s+events\s+the App subscribes to issue_comment, issues, pull_request, pull_request_review/);
    expect(first.out).toMatch(/ok\s+bot dev\s+baton-ci\[bot\] \(the App\) can read and comment, and push/);
    expect(first.out).toMatch(/ok\s+bot review\s+claude-review can read and comment/);

    const again = await connect(['github:acme/app']);
    expect(again.code, again.out).toBe(0);
    expect(again.out).not.toMatch(/^change/m);
  });

  it('says where to install the App, and which events to tick in its settings', async () => {
    await start(['issues']);
    const elsewhere = await connect(['github:acme/elsewhere']);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.out).toContain(
      `the App baton-ci is not installed on acme/elsewhere: install it there (${github.url}/apps/baton-ci/installations/new)`,
    );
    const app = await connect(['github:acme/app']);
    expect(app.code).toBe(1);
    expect(app.out).toContain(
      `the App does not subscribe to issue_comment, pull_request, pull_request_review: tick them under "Permissions & events" in ${github.url}/settings/apps/baton-ci`,
    );
  });
});
