import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo, serveGitRepos, type GitHttpServer } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { acceptedDelivery } from '../helpers/deliveries.js';

/**
 * Through the real `baton serve` (built CLI, SQLite, local workspaces in
 * bubblewrap, the real `baton agent` and git): signed deliveries whose `repository.clone_url`
 * names another host ("evil") must not make anything contact that host, and the workspace clones
 * from the git server behind GITEA_URL with the bot token. The two repositories are the pair whose
 * runs used to share a key (`acme/web-api#6`, `acme-web/api#6`): each gets its own run, and each
 * run comments on its own issue.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'clone-source-webhook-secret';
const DEV_TOKEN = `dev-token-${randomUUID()}`;
const REVIEW_TOKEN = `review-token-${randomUUID()}`;
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const REPOSITORIES = [
  { owner: 'acme', repo: 'web-api' },
  { owner: 'acme-web', repo: 'api' },
];

interface Listening {
  server: http.Server;
  url: string;
}

async function listen(handler: http.RequestListener): Promise<Listening> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function close({ server }: Listening): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Passes a request on to `target` unchanged (method, path, headers, body) and pipes the answer back. */
function forward(req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
  const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
}

describe('baton serve: a payload cannot choose where a run clones from', () => {
  let root: string;
  let gitea: FakeGitea;
  let git: GitHttpServer;
  let forge: Listening;
  let evil: Listening;
  let server: ServeHandle;
  let store: Store;
  /** Every request the evil host got, and the git paths the forge served. */
  const evilRequests: string[] = [];
  const gitPaths: string[] = [];

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-clone-source-'));
    // Runs are sandboxed as nobody when this suite runs as root: it must reach the workspaces.
    fs.chmodSync(root, 0o711);
    const repos = path.join(root, 'repos');
    for (const { owner, repo } of REPOSITORIES) {
      fs.mkdirSync(path.join(repos, owner), { recursive: true });
      createBareRepo(path.join(repos, owner), repo);
    }
    git = await serveGitRepos(repos, { token: DEV_TOKEN });

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    for (const { owner, repo } of REPOSITORIES) {
      gitea.addRepo(owner, repo);
      // Senders need write access (checked by default), which the dev bot asks as repository admin.
      gitea.addCollaborator(owner, repo, 'claude-dev', 'admin');
      gitea.addCollaborator(owner, repo, 'alice', 'write');
      for (let n = 1; n <= 6; n++) gitea.addIssue(owner, repo, { title: `${owner}/${repo} issue ${n}`, author: 'alice' });
    }
    // GITEA_URL, as one Gitea serves it: the API and the repositories over git's HTTP protocol.
    forge = await listen((req, res) => {
      const gitRequest = /^\/[^/]+\/[^/]+\.git\//.test(req.url ?? '');
      if (gitRequest) gitPaths.push((req.url ?? '').split('?')[0]!);
      forward(req, res, gitRequest ? git.url : gitea.url);
    });
    // Serves nothing, and answers everything with 404: any request at all is the failure.
    evil = await listen((req, res) => {
      evilRequests.push(`${req.method} ${req.url}`);
      res.writeHead(404).end();
    });

    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const gitConfig = path.join(home, '.gitconfig');
    fs.writeFileSync(gitConfig, '[user]\n\tname = Baton Test\n\temail = baton-test@example.invalid\n');
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n`,
    );
    server = await startServe(
      {
        HOME: home,
        HOST: '127.0.0.1',
        GITEA_URL: forge.url,
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: path.join(root, 'data'),
        QUEUE_CONCURRENCY: '2',
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      },
      root,
    );
    store = createStore({ url: `sqlite:${path.join(root, 'baton.db')}` });
  }, 60_000);

  afterAll(async () => {
    try {
      if (server) {
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      }
    } finally {
      await store?.close();
      for (const listening of [forge, evil]) if (listening) await close(listening);
      await git?.close();
      await gitea?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  /** issues-opened.json for issue #6 of the repository, every URL in it pointing at the evil host. */
  function opened(owner: string, repo: string): Buffer {
    const payload = fixtureJson('issues-opened.json');
    const repository = payload.repository as Record<string, unknown>;
    Object.assign(repository.owner as Record<string, unknown>, { login: owner, username: owner });
    Object.assign(repository, {
      name: repo,
      full_name: `${owner}/${repo}`,
      clone_url: `${evil.url}/${owner}/${repo}.git`,
      ssh_url: `git@127.0.0.1:${owner}/${repo}.git`,
      html_url: `${evil.url}/${owner}/${repo}`,
    });
    const issue = payload.issue as Record<string, unknown>;
    Object.assign(issue, { number: 6, html_url: `${evil.url}/${owner}/${repo}/issues/6`, url: `${evil.url}/api/v1/repos/x` });
    payload.number = 6;
    return toBody(payload);
  }

  it('clones both colliding repositories from GITEA_URL, comments on the right issues, and never contacts the evil host', async () => {
    const runIds: number[] = [];
    for (const { owner, repo } of REPOSITORIES) {
      const body = opened(owner, repo);
      const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
      const res = await fetch(`${server.url}/webhook/gitea`, {
        method: 'POST',
        headers,
        body,
      });
      const answer = (await res.json()) as { id?: number; spooled?: boolean };
      expect(res.status, JSON.stringify(answer)).toBe(202);
      // Accepting only stores the delivery; the inbox worker starts the run.
      const delivery = await acceptedDelivery(store, answer, { body, headers });
      expect(delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
      runIds.push(delivery.runIds[0]!);
    }
    expect(new Set(runIds).size).toBe(2);

    for (const [i, id] of runIds.entries()) {
      const { owner, repo } = REPOSITORIES[i]!;
      const done = await until(async () => {
        const row = await store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
        return row && TERMINAL.includes(row.status) ? row : null;
      }, `run ${id} of ${owner}/${repo} to finish`);
      expect(done, `${done.last_error}\n${server.output()}`).toMatchObject({
        status: 'succeeded',
        owner,
        repo,
        number: 6,
        key: `analyse:${owner}/${repo}#6`,
      });
      const final = await until(
        () => gitea.comments(owner, repo, 6).find((c) => c.body.includes('**analyse** finished')),
        `the final comment on ${owner}/${repo}#6`,
      );
      expect(final.author).toBe('claude-dev');
      // One run per issue: its own queued, started and finished comments, none of the other's.
      expect(gitea.comments(owner, repo, 6).filter((c) => c.body.includes('**analyse** finished'))).toHaveLength(1);
    }

    // The clones came from the forge, authenticated with the bot token (Gitea's Basic form).
    for (const { owner, repo } of REPOSITORIES) {
      expect(gitPaths).toContain(`/${owner}/${repo}.git/info/refs`);
    }
    expect(git.authorizations).toContain(`Basic ${Buffer.from(`${DEV_TOKEN}:x-oauth-basic`).toString('base64')}`);
    // Both runs have finished and commented (the witness): the evil host was never asked anything.
    expect(evilRequests).toEqual([]);
  }, 180_000);
});
