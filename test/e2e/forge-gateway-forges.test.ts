import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { gitlabExample, gitlabHeaders } from '../helpers/gitlab-webhook.js';
import { until } from '../helpers/until.js';

/**
 * GitHub and GitLab runs reach their forge only through baton's forge gateway, as Gitea runs do:
 * through the real `baton serve` (local provider, bubblewrap, the egress gate), a develop run on
 * each forge clones a private repository served by the fake forge's own git, pushes its branch and
 * opens its pull (merge) request with the forge's usual variables (GH_TOKEN and GITHUB_API_URL;
 * GITLAB_TOKEN and CI_API_V4_URL), so the outcome check finds it and the run succeeds. The same
 * run is refused a push to the default branch, another repository the bot may write to, GraphQL
 * and the forge itself; its capability is worth nothing after the run; the bot's token is nowhere
 * in what it was given.
 */

const AGENT = fileURLToPath(new URL('../fakes/agent/forge-agent.mjs', import.meta.url));
const DEV_TOKEN = 'forge-dev-bot-token-0123456789abcdef';
const REVIEW_TOKEN = 'forge-review-bot-token-0123456789abcdef';
const SECRET = 'forge-gateway-webhook-secret';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

interface Report {
  env: Record<string, string>;
  forge: string;
  pushes: { name: string; ok: boolean; output: string }[];
  api: { name: string; status: number; body: string }[];
}

interface World {
  root: string;
  server: ServeHandle;
  store: Store;
  reports: Report[];
  close(): Promise<void>;
}

/** baton serve for one forge, with the forge agent as every stage's agent and a host it may report to. */
async function startWorld(forgeEnv: Record<string, string>, targets: (reportUrl: string) => object): Promise<World> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-forge-gateway-'));
  fs.chmodSync(root, 0o711);
  const shared = path.join(root, 'shared');
  fs.mkdirSync(shared, { mode: 0o755 });
  const gitConfig = path.join(shared, 'gitconfig');
  fs.writeFileSync(gitConfig, '[user]\n\tname = Forge Agent\n\temail = forge-agent@example.invalid\n[safe]\n\tdirectory = *\n');
  const reports: Report[] = [];
  const listener = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'POST') reports.push(JSON.parse(body) as Report);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const port = (listener.address() as AddressInfo).port;
  const targetsFile = path.join(shared, 'targets.json');
  fs.writeFileSync(targetsFile, JSON.stringify(targets(`http://127.0.0.1:${port}/report`)));
  fs.writeFileSync(
    path.join(root, 'baton.yaml'),
    [
      'local:',
      `  readOnlyPaths: [${JSON.stringify(shared)}, ${JSON.stringify(path.dirname(AGENT))}]`,
      `  gitConfig: ${JSON.stringify(gitConfig)}`,
      'egress:',
      `  allow: ["127.0.0.1:${port}"]`,
      '',
    ].join('\n'),
  );
  const dataDir = path.join(root, 'data');
  const env = {
    HOST: '127.0.0.1',
    ...forgeEnv,
    DATABASE_URL: `sqlite:${path.join(dataDir, 'baton.db')}`,
    BATON_DATA_DIR: dataDir,
    BATON_AGENT_COMMAND: JSON.stringify([process.execPath, AGENT, '--targets', targetsFile]),
  };
  const server = await startServe(env, root);
  await until(async () => (await fetch(`${server.url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
  const store = createStore({ url: env.DATABASE_URL });
  return {
    root,
    server,
    store,
    reports,
    async close() {
      try {
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      } finally {
        await store.close();
        await new Promise<void>((resolve) => listener.close(() => resolve()));
        fs.rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

/** Sends a webhook to `endpoint`; the run its delivery started, once it has ended. */
async function finishedRun(world: World, endpoint: string, request: { headers: Record<string, string>; body: string }) {
  const res = await fetch(`${world.server.url}${endpoint}`, { method: 'POST', ...request });
  expect(res.status).toBe(202);
  const delivery = await acceptedDelivery(world.store, (await res.json()) as object, request);
  expect(delivery, String(delivery.verdict)).toMatchObject({ outcome: 'started', stages: ['develop'] });
  const id = delivery.runIds[0]!;
  return until(async () => {
    const row = await world.store.db
      .selectFrom('runs')
      .select(['id', 'status', 'last_error', 'summary'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row && TERMINAL.includes(row.status) ? row : null;
  }, `run ${id} to finish`);
}

/** The run's log lines (its progress events), for a failure's message and the refusals. */
async function logLines(world: World, runId: number): Promise<string> {
  const events = await world.store.db.selectFrom('run_events').select('data').where('run_id', '=', runId).execute();
  return events.map((e) => e.data ?? '').join('\n');
}

/** What every forge's run must show: its own branch pushed and the default refused, the rest refused, no bot token. */
function expectContained(report: Report, options: { capabilityNames: string[]; defaultBranch: string; other: string }) {
  const push = (name: string) => report.pushes.find((p) => p.name === name)!;
  expect(push('own branch'), push('own branch').output).toMatchObject({ ok: true });
  expect(push('default branch'), push('default branch').output).toMatchObject({ ok: false });
  expect(push('default branch').output).toContain(`a push to the default branch ${options.defaultBranch}`);
  const api = (name: string) => report.api.find((a) => a.name === name)!;
  expect(api('open').status, api('open').body).toBe(201);
  expect(api('other repository')).toMatchObject({ status: 403, body: expect.stringContaining(`outside this run's repository`) });
  expect(api('graphql')).toMatchObject({ status: 403, body: expect.stringContaining('GraphQL API is not served') });
  // The forge itself is not on the run's list: the gateway is its only way there.
  expect(api('direct').status).toBe(403);
  // The capability in each of the forge's usual names, and never the bot's token.
  for (const name of options.capabilityNames) expect(report.env[name], name).toMatch(/^bgw_\d+_/);
  expect(report.env.GITEA_TOKEN).toBe(report.env[options.capabilityNames[0]!]);
  for (const secret of [DEV_TOKEN, REVIEW_TOKEN, SECRET]) expect(JSON.stringify(report)).not.toContain(secret);
}

describe('a GitHub run through baton serve reaches GitHub only through the forge gateway', () => {
  const OWNER = 'Codertocat';
  const REPO = 'Hello-World';
  let github: FakeGitHub;
  let world: World;

  beforeAll(async () => {
    github = await createFakeGitHub();
    github.addUser('claude-dev', { token: DEV_TOKEN });
    github.addUser('claude-review', { token: REVIEW_TOKEN });
    github.addUser(OWNER);
    // Private, so the clone needs the bot's token, which only the gateway has.
    github.addRepo(OWNER, REPO, { private: true });
    github.state.repo(OWNER, REPO)!.defaultBranch = 'master';
    github.gitRepo(OWNER, REPO);
    github.addRepo(OWNER, 'Secret-Project', { private: true });
    for (const repo of [REPO, 'Secret-Project']) github.setPermission(OWNER, repo, 'claude-dev', 'admin');
    github.setPermission(OWNER, REPO, 'claude-review', 'write');
    for (const name of ['bug', 'ready-for-development']) github.addLabel(OWNER, REPO, name);
    github.addIssue(OWNER, REPO, { title: 'Spelling error in the README file', author: OWNER, labels: ['bug'] });
    world = await startWorld(
      {
        GITHUB_URL: github.url,
        GITHUB_DEV_TOKEN: DEV_TOKEN,
        GITHUB_REVIEW_TOKEN: REVIEW_TOKEN,
        GITHUB_WEBHOOK_SECRET: SECRET,
      },
      (reportUrl) => ({ reportUrl, otherRepository: `${OWNER}/Secret-Project`, direct: github.url }),
    );
  }, 60_000);

  afterAll(async () => {
    await world?.close();
    await github?.close();
  }, 60_000);

  it('pushes its branch and opens its pull request with GH_TOKEN and GITHUB_API_URL, and is refused everything else', async () => {
    github.labelIssue(OWNER, REPO, 1, 'ready-for-development', OWNER);
    const labeled = githubExample('issues', 'labeled');
    labeled.label = { ...(labeled.label as object), name: 'ready-for-development' };
    (labeled.issue as { labels: object[] }).labels = [{ name: 'bug' }, { name: 'ready-for-development' }];
    const body = JSON.stringify(labeled);
    const row = await finishedRun(world, '/webhook/github', {
      headers: githubHeaders(body, { event: 'issues', secret: SECRET }),
      body: body,
    });
    // The outcome check found the pull request on GitHub: the run's success is real.
    expect(row, `${row.last_error}\n${await logLines(world, row.id)}`).toMatchObject({ status: 'succeeded' });

    const bare = github.gitRepo(OWNER, REPO);
    const log = (ref: string) => execFileSync('git', ['--git-dir', bare, 'log', '--format=%s', ref], { encoding: 'utf8' });
    expect(log('feature/issue-1-forge-agent')).toContain("Forge agent's change (#1)");
    expect(log('master')).not.toContain('Forge agent');
    const pull = github.state.repo(OWNER, REPO)!.issues.find((i) => i.pull?.head === 'feature/issue-1-forge-agent');
    // Opened as the dev bot: the gateway put the bot's token where the capability was.
    expect(pull).toMatchObject({ author: 'claude-dev', pull: { base: 'master' } });

    const report = world.reports.at(-1)!;
    expect(report.forge).toBe('github');
    expect(report.env.GITHUB_API_URL).toBe('http://baton.internal/gateway/api/v3');
    expect(report.env.GITHUB_REPOSITORY).toBe(`${OWNER}/${REPO}`);
    expectContained(report, { capabilityNames: ['GH_TOKEN', 'GITHUB_TOKEN'], defaultBranch: 'master', other: `${OWNER}/Secret-Project` });
    expect(github.requests.some((r) => r.includes('Secret-Project'))).toBe(false);

    // After the run its capability is worth nothing, even on its own repository.
    const after = await fetch(`${world.server.url}/gateway/api/v3/repos/${OWNER}/${REPO}`, {
      headers: { authorization: `Bearer ${report.env.GH_TOKEN}` },
    });
    expect(after.status).toBe(401);
    const lines = await logLines(world, row.id);
    expect(lines).toContain('[gateway] refused: a push to the default branch master');
    expect(lines).toContain(`[gateway] refused: GET /api/v3/repos/${OWNER}/Secret-Project is outside this run's repository`);
  }, 120_000);
});

describe('a GitLab run through baton serve reaches GitLab only through the forge gateway', () => {
  const NAMESPACE = 'gitlabhq';
  const PROJECT = 'gitlab-test';
  let gitlab: FakeGitLab;
  let world: World;

  beforeAll(async () => {
    gitlab = await createFakeGitLab();
    gitlab.addUser('claude-dev', { token: DEV_TOKEN });
    gitlab.addUser('claude-review', { token: REVIEW_TOKEN });
    gitlab.addUser('root');
    // Private (the fake's default), so the clone needs the bot's token, which only the gateway has.
    gitlab.addProject(NAMESPACE, PROJECT);
    gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!.defaultBranch = 'master';
    gitlab.gitRepo(NAMESPACE, PROJECT);
    gitlab.addProject(NAMESPACE, 'secret-project');
    for (const project of [PROJECT, 'secret-project']) gitlab.setAccess(NAMESPACE, project, 'claude-dev', 40);
    gitlab.setAccess(NAMESPACE, PROJECT, 'claude-review', 30);
    gitlab.setAccess(NAMESPACE, PROJECT, 'root', 40);
    for (const name of ['Platform', 'ready-for-development']) gitlab.addLabel(NAMESPACE, PROJECT, name);
    for (let n = 1; n <= 23; n++) gitlab.addIssue(NAMESPACE, PROJECT, { title: `issue ${n}`, author: 'root' });
    world = await startWorld(
      {
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: DEV_TOKEN,
        GITLAB_REVIEW_TOKEN: REVIEW_TOKEN,
        GITLAB_WEBHOOK_SECRET: SECRET,
      },
      (reportUrl) => ({ reportUrl, otherRepository: `${NAMESPACE}/secret-project`, direct: gitlab.url }),
    );
  }, 60_000);

  afterAll(async () => {
    await world?.close();
    await gitlab?.close();
  }, 60_000);

  it('pushes its branch and opens its merge request with GITLAB_TOKEN and CI_API_V4_URL, and is refused everything else', async () => {
    gitlab.labelItem(NAMESPACE, PROJECT, 23, 'ready-for-development', 'root');
    // The documented Issue Hook body (issue #23) as an update that adds the stage's label.
    const labeled = gitlabExample('issue');
    Object.assign(labeled.object_attributes as Record<string, unknown>, { action: 'update' });
    const labels = (labeled.changes as { labels: { previous: object[]; current: object[] } }).labels;
    labels.previous = [{ ...(labels.current[0] as object) }];
    labels.current = [{ ...(labels.current[0] as object) }, { ...(labels.current[0] as object), id: 999, title: 'ready-for-development' }];
    const row = await finishedRun(world, '/webhook/gitlab', {
      headers: gitlabHeaders({ event: 'Issue Hook', token: SECRET }),
      body: JSON.stringify(labeled),
    });
    // The outcome check found the merge request on GitLab: the run's success is real.
    expect(row, `${row.last_error}\n${await logLines(world, row.id)}`).toMatchObject({ status: 'succeeded' });

    const bare = gitlab.gitRepo(NAMESPACE, PROJECT);
    const log = (ref: string) => execFileSync('git', ['--git-dir', bare, 'log', '--format=%s', ref], { encoding: 'utf8' });
    expect(log('feature/issue-23-forge-agent')).toContain("Forge agent's change (#23)");
    expect(log('master')).not.toContain('Forge agent');
    const mr = gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!.mergeRequests.find((m) => m.mr?.source === 'feature/issue-23-forge-agent');
    expect(mr).toMatchObject({ author: 'claude-dev', mr: { target: 'master' } });

    const report = world.reports.at(-1)!;
    expect(report.forge).toBe('gitlab');
    expect(report.env.CI_API_V4_URL).toBe('http://baton.internal/gateway/api/v4');
    expect(report.env.GITLAB_HOST).toBe('http://baton.internal/gateway');
    expect(report.env.CI_PROJECT_PATH).toBe(`${NAMESPACE}/${PROJECT}`);
    expectContained(report, { capabilityNames: ['GITLAB_TOKEN'], defaultBranch: 'master', other: `${NAMESPACE}/secret-project` });
    expect(gitlab.requests.some((r) => r.includes('secret-project'))).toBe(false);

    const after = await fetch(`${world.server.url}/gateway/api/v4/projects/${NAMESPACE}%2F${PROJECT}`, {
      headers: { 'private-token': report.env.GITLAB_TOKEN! },
    });
    expect(after.status).toBe(401);
    const lines = await logLines(world, row.id);
    expect(lines).toContain('[gateway] refused: a push to the default branch master');
    expect(lines).toContain(`[gateway] refused: GET /api/v4/projects/${NAMESPACE}%2Fsecret-project is outside this run's repository`);
  }, 120_000);
});

describe('a GitLab run of a project in a subgroup, through baton serve and the forge gateway', () => {
  // Self-managed GitLab is organised in subgroups: the project is two groups deep.
  const NAMESPACE = 'acme/platform';
  const PROJECT = 'app';
  let gitlab: FakeGitLab;
  let world: World;

  beforeAll(async () => {
    gitlab = await createFakeGitLab();
    gitlab.addUser('claude-dev', { token: DEV_TOKEN });
    gitlab.addUser('claude-review', { token: REVIEW_TOKEN });
    gitlab.addUser('root');
    gitlab.addProject(NAMESPACE, PROJECT);
    gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!.defaultBranch = 'master';
    gitlab.gitRepo(NAMESPACE, PROJECT);
    // A sibling whose path extends the run's (a prefix check would take it for the run's own).
    gitlab.addProject(NAMESPACE, `${PROJECT}-other`);
    // Every role comes from a group above the project, as GitLab teams grant them: the bots are
    // members of the top-level group, the sender of the subgroup; `members/all` inherits both.
    gitlab.setGroupAccess('acme', 'claude-dev', 40);
    gitlab.setGroupAccess('acme', 'claude-review', 30);
    gitlab.setGroupAccess(NAMESPACE, 'root', 40);
    for (const name of ['Platform', 'ready-for-development']) gitlab.addLabel(NAMESPACE, PROJECT, name);
    for (let n = 1; n <= 23; n++) gitlab.addIssue(NAMESPACE, PROJECT, { title: `issue ${n}`, author: 'root' });
    world = await startWorld(
      {
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: DEV_TOKEN,
        GITLAB_REVIEW_TOKEN: REVIEW_TOKEN,
        GITLAB_WEBHOOK_SECRET: SECRET,
      },
      (reportUrl) => ({ reportUrl, otherRepository: `${NAMESPACE}/${PROJECT}-other`, direct: gitlab.url }),
    );
  }, 60_000);

  afterAll(async () => {
    await world?.close();
    await gitlab?.close();
  }, 60_000);

  it('clones, pushes its branch, opens its merge request and writes its notes in acme/platform/app, and is refused acme/platform/app-other', async () => {
    gitlab.labelItem(NAMESPACE, PROJECT, 23, 'ready-for-development', 'root');
    // The documented Issue Hook body (issue #23) as an update that adds the stage's label. The
    // documented project is top-level (`gitlabhq/gitlab-test`); its path is set to a subgroup's,
    // as GitLab writes it for a project there (`path_with_namespace` is the full path), since the
    // documentation has no example of one.
    const labeled = gitlabExample('issue');
    Object.assign(labeled.object_attributes as Record<string, unknown>, { action: 'update' });
    Object.assign(labeled.project as Record<string, unknown>, { path_with_namespace: `${NAMESPACE}/${PROJECT}`, namespace: 'Platform' });
    const labels = (labeled.changes as { labels: { previous: object[]; current: object[] } }).labels;
    labels.previous = [{ ...(labels.current[0] as object) }];
    labels.current = [{ ...(labels.current[0] as object) }, { ...(labels.current[0] as object), id: 999, title: 'ready-for-development' }];
    const row = await finishedRun(world, '/webhook/gitlab', {
      headers: gitlabHeaders({ event: 'Issue Hook', token: SECRET }),
      body: JSON.stringify(labeled),
    });
    expect(row, `${row.last_error}\n${await logLines(world, row.id)}`).toMatchObject({ status: 'succeeded' });
    const key = await world.store.db.selectFrom('runs').select('key').where('id', '=', row.id).executeTakeFirstOrThrow();
    expect(key.key).toBe(`develop:gitlab:${NAMESPACE}/${PROJECT}#23`);

    // The clone came from the subgroup project's own repository, and the push went back to it.
    const bare = gitlab.gitRepo(NAMESPACE, PROJECT);
    const log = (ref: string) => execFileSync('git', ['--git-dir', bare, 'log', '--format=%s', ref], { encoding: 'utf8' });
    expect(log('feature/issue-23-forge-agent')).toContain("Forge agent's change (#23)");
    expect(log('master')).not.toContain('Forge agent');
    const mr = gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!.mergeRequests.find((m) => m.mr?.source === 'feature/issue-23-forge-agent');
    expect(mr).toMatchObject({ author: 'claude-dev', mr: { target: 'master' } });
    // The status notes reached the subgroup project's issue, as the dev bot.
    const notes = await until(() => {
      const all = gitlab.notes(NAMESPACE, PROJECT, 23);
      return all.some((n) => n.body.includes('**develop** finished')) ? all : null;
    }, 'the final note on #23');
    expect(notes.some((n) => n.body.includes('**develop** is queued'))).toBe(true);
    expect(new Set(notes.map((n) => n.author))).toEqual(new Set(['claude-dev']));

    const report = world.reports.at(-1)!;
    expect(report.env.CI_PROJECT_PATH).toBe(`${NAMESPACE}/${PROJECT}`);
    expectContained(report, { capabilityNames: ['GITLAB_TOKEN'], defaultBranch: 'master', other: `${NAMESPACE}/${PROJECT}-other` });
    expect(gitlab.requests.some((r) => r.includes(`${PROJECT}-other`))).toBe(false);
    const lines = await logLines(world, row.id);
    expect(lines).toContain(`[gateway] refused: GET /api/v4/projects/acme%2Fplatform%2Fapp-other is outside this run's repository`);
  }, 120_000);
});
