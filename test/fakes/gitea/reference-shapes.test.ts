/**
 * The fake's response objects must carry every field real Gitea sends. The `issue`, `comment`,
 * `pull_request` and `sender` objects of the captured webhook payloads are the same Go structs
 * the API returns (reference/gitea/API.md), so their keys are the yardstick.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithReference } from '../../helpers/reference.js';
import { createFakeGitea, type FakeGitea } from './index.js';

const keys = (value: unknown) => Object.keys(value as Record<string, unknown>).sort();

describeWithReference('gitea/payloads', 'fake Gitea responses have the fields of real Gitea objects', (payloadDir) => {
  const payload = (file: string) =>
    JSON.parse(fs.readFileSync(path.join(payloadDir, file), 'utf8')) as Record<string, Record<string, unknown>>;
  let gitea: FakeGitea;
  let get: (path: string) => Promise<Record<string, unknown>>;
  let issueNumber: number;
  let pullNumber: number;
  let commentId: number;

  beforeAll(async () => {
    gitea = await createFakeGitea();
    const { token } = gitea.addUser('claude-dev');
    gitea.addRepo('acme', 'app');
    gitea.addLabel('acme', 'app', { name: 'bug', description: 'Something is not working' });
    issueNumber = gitea.addIssue('acme', 'app', { title: 't', author: 'claude-dev', labels: ['bug'] }).number;
    pullNumber = gitea.addPullRequest('acme', 'app', { title: 'p', author: 'claude-dev' }).number;
    commentId = gitea.addComment('acme', 'app', issueNumber, { author: 'claude-dev', body: 'b' }).id;
    get = async (p) =>
      (await (await fetch(`${gitea.url}/api/v1${p}`, { headers: { authorization: `token ${token}` } })).json()) as Record<string, unknown>;
  });
  afterAll(async () => {
    await gitea?.close();
  });

  it.each([
    ['gitea-issue_comment-created.json', 'comment', () => `/repos/acme/app/issues/comments/${commentId}`],
    ['gitea-issue_comment-created.json', 'issue', () => `/repos/acme/app/issues/${issueNumber}`],
    ['gitea-issues-label_updated.json', 'issue', () => `/repos/acme/app/issues/${issueNumber}`],
    ['gitea-pull_request-opened.json', 'pull_request', () => `/repos/acme/app/pulls/${pullNumber}`],
    ['gitea-pull_request-synchronized.json', 'pull_request', () => `/repos/acme/app/pulls/${pullNumber}`],
    ['gitea-issues-opened.json', 'sender', () => '/user'],
  ])('%s: %s', async (file, field, apiPath) => {
    const real = payload(file)[field]!;
    const fake = await get(apiPath());
    expect(keys(fake)).toEqual(expect.arrayContaining(keys(real)));
    if (field === 'pull_request') {
      const head = (real.head ?? {}) as Record<string, unknown>;
      expect(keys(fake.head)).toEqual(expect.arrayContaining(keys(head)));
    }
  });

  it('labels of an issue have the fields of real labels', async () => {
    const realLabel = (payload('gitea-issues-label_updated.json').issue!.labels as unknown[])[0];
    const [fakeLabel] = (await get(`/repos/acme/app/issues/${issueNumber}`)).labels as unknown[];
    expect(keys(fakeLabel)).toEqual(expect.arrayContaining(keys(realLabel)));
  });
});
