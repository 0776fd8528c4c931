/**
 * The `ForgeClient` conformance suite. Every implementation (and every fake it talks to) must
 * pass it. `setup` provides a client acting as a bot with write access to a repository that
 * holds one issue and one pull request; see `ForgeClientFixture` for what it must contain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForgeError, type ForgeClient, type RepoPermission } from '../../src/forge/index.js';

export interface ForgeClientFixture {
  /** Acts as `botLogin`, which has write access to `owner/repo`. */
  client: ForgeClient;
  /** Same server, a token the forge does not know. */
  badTokenClient: ForgeClient;
  /** The token `badTokenClient` presents: it must not appear in any error. */
  badToken: string;
  botLogin: string;
  owner: string;
  repo: string;
  /** An open issue titled `issueTitle` carrying exactly `issueLabels` (names). */
  issue: { number: number; title: string; labels: { name: string; color: string }[] };
  /** An open pull request from branch `head` into `base`, with these reviews (oldest first) and no labels. */
  pull: { number: number; title: string; head: string; base: string; reviews: { user: string; state: string }[] };
  /** Names of labels the repository defines (at least the issue's, plus one not on it). */
  repoLabels: string[];
  /** An issue number that does not exist in the repository. */
  missingNumber: number;
  /** Usernames with the permission each must report. */
  permissions: [username: string, expected: RepoPermission][];
  /**
   * The forge's own names of webhook events: two to create a hook with, three to edit it to.
   * @default Gitea's (`issues_only`, `issue_label`; `issues_only`, `pull_request_review`, `release`)
   */
  hookEvents?: { create: [string, string]; edit: [string, string, string] };
  /**
   * Whether a pull request is an issue too (one number sequence: Gitea, Forgejo, GitHub). GitLab
   * numbers merge requests apart: the suite then names them with the port's `kind` ('pull'),
   * which the other forges ignore, and reads the number as an issue's plain issue.
   * @default true
   */
  pullsAreIssues?: boolean;
  teardown(): Promise<void>;
}

export function describeForgeClientConformance(name: string, setup: () => Promise<ForgeClientFixture>): void {
  describe(`ForgeClient conformance: ${name}`, () => {
    let f: ForgeClientFixture;
    beforeAll(async () => {
      f = await setup();
    });
    afterAll(async () => {
      await f?.teardown();
    });

    it('reports the account it acts as', async () => {
      const me = await f.client.getCurrentUser();
      expect(me.login).toBe(f.botLogin);
      expect(me.id).toBeGreaterThan(0);
    });

    it('reads an issue with its labels, colors as #rrggbb', async () => {
      const issue = await f.client.getIssue(f.owner, f.repo, f.issue.number);
      expect(issue).toMatchObject({ number: f.issue.number, title: f.issue.title, state: 'open', isPullRequest: false });
      expect(issue.labels.map((l) => l.name).sort()).toEqual(f.issue.labels.map((l) => l.name).sort());
      for (const label of issue.labels) expect(label.color).toMatch(/^#[0-9a-f]{6}$/);
      const byName = new Map(issue.labels.map((l) => [l.name, l.color]));
      for (const label of f.issue.labels) expect(byName.get(label.name)).toBe(`#${label.color.replace(/^#/, '').toLowerCase()}`);
    });

    it('tells a pull request read as an issue apart', async () => {
      const issue = await f.client.getIssue(f.owner, f.repo, f.pull.number);
      // Numbered apart (GitLab): the same number read as an issue is that issue, never the merge request.
      expect(issue.isPullRequest).toBe(f.pullsAreIssues !== false);
      if (f.pullsAreIssues === false) expect(issue.title).not.toBe(f.pull.title);
    });

    it('reads a pull request with its branches', async () => {
      const pr = await f.client.getPullRequest(f.owner, f.repo, f.pull.number);
      expect(pr).toMatchObject({ number: f.pull.number, title: f.pull.title, state: 'open', merged: false });
      expect(pr.head.ref).toBe(f.pull.head);
      expect(pr.base.ref).toBe(f.pull.base);
      expect(pr.head.sha).toMatch(/^[0-9a-f]{40,64}$/);
    });

    it('refuses to read a plain issue as a pull request: permanent 404', async () => {
      const err = await f.client.getPullRequest(f.owner, f.repo, f.issue.number).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ForgeError);
      expect(err).toMatchObject({ status: 404, retryable: false });
    });

    it('lists the labels of an issue', async () => {
      const labels = await f.client.listIssueLabels(f.owner, f.repo, f.issue.number);
      expect(labels.map((l) => l.name).sort()).toEqual(f.issue.labels.map((l) => l.name).sort());
      for (const label of labels) expect(label.color).toMatch(/^#[0-9a-f]{6}$/);
    });

    it('lists every label of the repository', async () => {
      const names = (await f.client.listRepoLabels(f.owner, f.repo)).map((l) => l.name);
      for (const name of f.repoLabels) expect(names).toContain(name);
    });

    it('adds labels by name and by id, returning the full set, and removes one by id', async () => {
      const [first, second] = f.repoLabels;
      const byId = new Map((await f.client.listRepoLabels(f.owner, f.repo)).map((l) => [l.name, l.id]));
      const afterName = await f.client.addIssueLabels(f.owner, f.repo, f.pull.number, [first!], 'pull');
      expect(afterName.map((l) => l.name)).toEqual([first]);
      const afterId = await f.client.addIssueLabels(f.owner, f.repo, f.pull.number, [byId.get(second!)!], 'pull');
      expect(afterId.map((l) => l.name).sort()).toEqual([first, second].sort());
      for (const label of afterId) expect(label.color).toMatch(/^#[0-9a-f]{6}$/);

      await f.client.removeIssueLabel(f.owner, f.repo, f.pull.number, byId.get(first!)!, 'pull');
      expect((await f.client.listIssueLabels(f.owner, f.repo, f.pull.number, 'pull')).map((l) => l.name)).toEqual([second]);
      await f.client.removeIssueLabel(f.owner, f.repo, f.pull.number, byId.get(second!)!, 'pull');
    });

    it('lists the reviews of a pull request', async () => {
      const reviews = await f.client.listPullReviews(f.owner, f.repo, f.pull.number);
      expect(reviews.map((r) => ({ user: r.user?.login, state: r.state }))).toEqual(f.pull.reviews);
    });

    it('creates, lists and edits a comment as the bot', async () => {
      const body = `conformance comment ${Date.now()}`;
      const created = await f.client.createComment(f.owner, f.repo, f.issue.number, body);
      expect(created).toMatchObject({ body, user: { login: f.botLogin } });
      expect(created.id).toBeGreaterThan(0);

      const listed = await f.client.listComments(f.owner, f.repo, f.issue.number);
      expect(listed.at(-1)).toMatchObject({ id: created.id, body });

      const edited = await f.client.editComment(f.owner, f.repo, created.id, `${body} (edited)`);
      expect(edited).toMatchObject({ id: created.id, body: `${body} (edited)` });
      const again = await f.client.listComments(f.owner, f.repo, f.issue.number);
      expect(again.find((c) => c.id === created.id)?.body).toBe(`${body} (edited)`);
    });

    it('comments on a pull request through its issue number', async () => {
      const created = await f.client.createComment(f.owner, f.repo, f.pull.number, 'on the PR', 'pull');
      const listed = await f.client.listComments(f.owner, f.repo, f.pull.number, 'pull');
      expect(listed.map((c) => c.id)).toContain(created.id);
    });

    it('reports repository permissions as none, read, write or admin', async () => {
      for (const [username, expected] of f.permissions) {
        expect(await f.client.getUserPermission(f.owner, f.repo, username), username).toBe(expected);
      }
    });

    it('fails a missing issue with a permanent 404 carrying the forge message', async () => {
      const err = await f.client.getIssue(f.owner, f.repo, f.missingNumber).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ForgeError);
      expect(err).toMatchObject({ status: 404, retryable: false, kind: 'http' });
      expect((err as ForgeError).forgeMessage).toEqual(expect.any(String));
    });

    it('reads the repository with the account’s own rights', async () => {
      const repository = await f.client.getRepository(f.owner, f.repo);
      expect(repository).toMatchObject({ owner: f.owner, name: f.repo, archived: false });
      expect(repository.permissions.pull).toBe(true);
    });

    it('creates, finds, edits and deletes an active JSON webhook, never reading its secret back', async () => {
      const url = `https://baton.example/webhook/gitea/conformance-${Date.now()}`;
      const events = f.hookEvents ?? {
        create: ['issues_only', 'issue_label'],
        edit: ['issues_only', 'pull_request_review', 'release'],
      };
      const created = await f.client.createHook(f.owner, f.repo, {
        url,
        secret: 'conformance-secret',
        events: events.create,
      });
      try {
        expect(created).toMatchObject({ url, contentType: 'json', active: true, branchFilter: '', events: [...events.create].sort() });
        const listed = (await f.client.listHooks(f.owner, f.repo)).find((h) => h.id === created.id);
        expect(listed).toEqual(created);
        expect(JSON.stringify(listed)).not.toContain('conformance-secret');
        const edited = await f.client.editHook(f.owner, f.repo, created.id, { url, events: events.edit });
        expect(edited).toMatchObject({ active: true, events: [...events.edit].sort() });
      } finally {
        await f.client.deleteHook(f.owner, f.repo, created.id);
      }
      expect((await f.client.listHooks(f.owner, f.repo)).map((h) => h.id)).not.toContain(created.id);
    });

    it('creates a label with its colour as #rrggbb', async () => {
      const name = `conformance-${Date.now()}`;
      const label = await f.client.createLabel(f.owner, f.repo, { name, color: '#0E8A16', description: 'made by the conformance suite' });
      expect(label).toMatchObject({ name, color: '#0e8a16', description: 'made by the conformance suite' });
      expect((await f.client.listRepoLabels(f.owner, f.repo)).map((l) => l.name)).toContain(name);
    });

    it('tells whether it may write issues without writing anything', async () => {
      const before = await f.client.listComments(f.owner, f.repo, f.issue.number);
      expect(await f.client.issueWriteAccess(f.owner, f.repo)).toEqual({ allowed: true });
      expect(await f.client.listComments(f.owner, f.repo, f.issue.number)).toEqual(before);
    });

    it('fails an unknown token with a permanent 401 that does not repeat the token', async () => {
      const err = await f.badTokenClient.createComment(f.owner, f.repo, f.issue.number, 'nope').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ForgeError);
      expect(err).toMatchObject({ status: 401, retryable: false });
      expect(String((err as Error).message)).not.toContain(f.badToken);
      expect(JSON.stringify(err)).not.toContain(f.badToken);
    });
  });
}
