import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createForgeAccounts,
  createGiteaClient,
  createGitHubClient,
  createGitLabClient,
  type ForgeAccounts,
} from '../../src/forge/index.js';
import { defaultPipeline } from '../../src/pipeline/index.js';
import type { Run, RunOutcome } from '../../src/runs/index.js';
import { createOutcomeCheck } from '../../src/server/outcome-check.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';

/**
 * Success is an outcome: a run whose agent claims success is checked on the (fake) Gitea; a claim
 * without its push or review becomes a failure that says what is missing.
 */
describe('the outcome check', () => {
  let gitea: FakeGitea;
  let skew = 0;
  const warnings: string[] = [];
  const succeeded: RunOutcome = { status: 'succeeded', summary: 'Done: opened a pull request.' };

  beforeEach(async () => {
    skew = -3_600_000;
    warnings.length = 0;
    gitea = await createFakeGitea({ now: () => new Date(Date.now() + skew) });
    for (const login of ['claude-dev', 'claude-review']) gitea.addUser(login, { token: `${login}-token` });
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    for (const login of ['claude-dev', 'claude-review']) gitea.addCollaborator('acme', 'app', login, 'write');
    for (let n = 1; n <= 6; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });
  });
  afterEach(async () => {
    await gitea.close();
  });

  const check = () =>
    createOutcomeCheck({
      pipeline: defaultPipeline({ dev: { username: 'claude-dev' }, review: { username: 'claude-review' } }),
      accounts: {
        dev: createGiteaClient({ baseUrl: gitea.url, token: 'claude-dev-token', timeoutMs: 2_000 }),
        review: createGiteaClient({ baseUrl: gitea.url, token: 'claude-review-token', timeoutMs: 2_000 }),
      },
      logger: { warn: (_details: unknown, message: string) => void warnings.push(message) },
    });
  const run = (stage: string, number: number, payload: Run['payload'] = {}): Run =>
    ({
      id: 1,
      key: `${stage}:acme/app#${number}`,
      stage,
      owner: 'acme',
      repo: 'app',
      number,
      status: 'running',
      payload: {
        account: stage === 'review-code' ? 'review' : 'dev',
        accountUser: stage === 'review-code' ? 'claude-review' : 'claude-dev',
        ...payload,
      },
      startedAt: Date.now(),
      createdAt: Date.now(),
      claimedAt: Date.now(),
    }) as unknown as Run;

  it('fails a develop run that pushed nothing and opened no pull request, saying so', async () => {
    // A pull request of the issue from an hour ago does not count for this run.
    gitea.addPullRequest('acme', 'app', { title: 'old', author: 'claude-dev', head: 'feature/issue-3-old' });
    skew = 0;
    const outcome = await check()(run('develop', 3), succeeded);
    expect(outcome).toMatchObject({ status: 'failed', summary: succeeded.summary });
    expect(outcome.error).toBe(
      'outcome_missing: The agent reported success but pushed nothing to a branch of issue #3 (`feature/issue-3-…`, `fix/issue-3-…`) and opened or updated no pull request.',
    );
  });

  it('keeps the success of a develop run that opened a pull request on a branch of its issue', async () => {
    skew = 0;
    gitea.addPullRequest('acme', 'app', { title: 'Fix', author: 'claude-dev', head: 'feature/issue-4-fix' });
    expect(await check()(run('develop', 4), succeeded)).toBe(succeeded);
    // Another issue's pull request is not this run's outcome.
    expect((await check()(run('fix-bug', 40), succeeded)).status).toBe('failed');
  });

  it('checks rework-pr by its pull request head, and names the branch when it did not move', async () => {
    const pull = gitea.addPullRequest('acme', 'app', {
      title: 'Fix',
      author: 'claude-dev',
      head: 'feature/issue-1-x',
      headSha: 'a'.repeat(40),
    });
    skew = 0;
    const rework = run('rework-pr', pull.number, { isPull: true, headSha: 'a'.repeat(40), headRef: 'feature/issue-1-x' });
    expect(await check()(rework, succeeded)).toMatchObject({
      status: 'failed',
      error: 'outcome_missing: The agent reported success but pushed nothing to `feature/issue-1-x`.',
    });
    gitea.pushToPullRequest('acme', 'app', pull.number, { by: 'claude-dev' });
    expect(await check()(rework, succeeded)).toBe(succeeded);
  });

  it('checks review-code by a review of its bot submitted during the run', async () => {
    const pull = gitea.addPullRequest('acme', 'app', { title: 'Fix', author: 'alice', head: 'feature/issue-2-y' });
    gitea.addReview('acme', 'app', pull.number, { author: 'claude-review', state: 'COMMENT', body: 'an earlier review' });
    skew = 0;
    const review = run('review-code', pull.number, { isPull: true });
    expect(await check()(review, succeeded)).toMatchObject({
      status: 'failed',
      error: `outcome_missing: The agent reported success but submitted no review on pull request #${pull.number}.`,
    });
    gitea.addReview('acme', 'app', pull.number, { author: 'claude-review', state: 'REQUEST_CHANGES', body: 'please fix' });
    expect(await check()(review, succeeded)).toBe(succeeded);
  });

  it('leaves other stages, failures, and claims the forge cannot be asked about as they are', async () => {
    skew = 0;
    expect(await check()(run('analyse', 1), succeeded)).toBe(succeeded);
    const failed: RunOutcome = { status: 'failed', error: 'agent_error' };
    expect(await check()(run('develop', 1), failed)).toBe(failed);
    gitea.failNext(10, { status: 503 });
    expect(await check()(run('develop', 1), succeeded)).toBe(succeeded);
    expect(warnings).toEqual(['the outcome of a run could not be checked on the forge; the agent’s result stands']);
  });
});

/**
 * The check asks the run's own forge with the run's account there (`github:dev`, `gitlab:review`):
 * before, a GitHub or GitLab run was checked with Gitea's bots (or not at all).
 */
describe('the outcome check on GitHub and GitLab', () => {
  let gitea: FakeGitea;
  let github: FakeGitHub;
  let gitlab: FakeGitLab;
  let accounts: ForgeAccounts;
  const succeeded: RunOutcome = { status: 'succeeded', summary: 'Done.' };

  beforeEach(async () => {
    gitea = await createFakeGitea();
    github = await createFakeGitHub();
    gitlab = await createFakeGitLab();
    // The same names on every forge: a pull request on Gitea must not count for a GitHub run.
    for (const login of ['claude-dev', 'claude-review']) gitea.addUser(login, { token: `gitea-${login}` });
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    gitea.addIssue('acme', 'app', { title: 'one', author: 'alice' });
    for (const login of ['octo-dev', 'octo-review', 'alice']) github.addUser(login, { token: `github-${login}-token-0123456789` });
    github.addRepo('acme', 'app');
    github.addIssue('acme', 'app', { title: 'one', author: 'alice' });
    for (const name of ['lab-dev', 'lab-review', 'alice']) gitlab.addUser(name, { token: `glpat-${name}-0123456789` });
    gitlab.addProject('acme', 'app');
    for (const name of ['lab-dev', 'lab-review']) gitlab.setAccess('acme', 'app', name, 30);
    accounts = {
      ...createForgeAccounts({
        gitea: { url: gitea.url } as never,
        bots: {
          dev: { username: 'claude-dev', token: 'gitea-claude-dev' },
          review: { username: 'claude-review', token: 'gitea-claude-review' },
        } as never,
      }),
      'github:dev': createGitHubClient({ apiUrl: github.apiUrl, token: 'github-octo-dev-token-0123456789' }),
      'github:review': createGitHubClient({ apiUrl: github.apiUrl, token: 'github-octo-review-token-0123456789' }),
      'gitlab:dev': createGitLabClient({ rootUrl: gitlab.url, token: 'glpat-lab-dev-0123456789' }),
      'gitlab:review': createGitLabClient({ rootUrl: gitlab.url, token: 'glpat-lab-review-0123456789' }),
    };
  });
  afterEach(async () => {
    await gitea.close();
    await github.close();
    await gitlab.close();
  });

  const check = () =>
    createOutcomeCheck({
      // The configured usernames are Gitea's: on the other forges the bot's login is asked.
      pipeline: defaultPipeline({ dev: { username: 'claude-dev' }, review: { username: 'claude-review' } }),
      accounts,
      logger: { warn: () => {} },
    });
  const run = (forge: 'github' | 'gitlab', stage: string, number: number, payload: Run['payload'] = {}): Run =>
    ({
      id: 1,
      key: `${forge}:${stage}:acme/app#${number}`,
      stage,
      owner: 'acme',
      repo: 'app',
      number,
      forge,
      status: 'running',
      payload: {
        forge,
        account: stage === 'review-code' ? 'review' : 'dev',
        accountUser: stage === 'review-code' ? 'claude-review' : 'claude-dev',
        ...payload,
      },
      startedAt: Date.now(),
      createdAt: Date.now(),
      claimedAt: Date.now(),
    }) as unknown as Run;

  it('fails a GitHub develop run that pushed nothing there, whatever Gitea has, and keeps one that opened its pull request', async () => {
    gitea.addPullRequest('acme', 'app', { title: 'On Gitea', author: 'claude-dev', head: 'feature/issue-1-gitea' });
    const develop = run('github', 'develop', 1);
    expect(await check()(develop, succeeded)).toMatchObject({
      status: 'failed',
      error:
        'outcome_missing: The agent reported success but pushed nothing to a branch of issue #1 (`feature/issue-1-…`, `fix/issue-1-…`) and opened or updated no pull request.',
    });
    github.addPullRequest('acme', 'app', { title: 'Fix', author: 'octo-dev', head: 'feature/issue-1-fix', base: 'main' });
    expect(await check()(develop, succeeded)).toBe(succeeded);
    // Only the run's own forge was asked for it.
    expect(github.requests).toContain(`GET ${new URL(github.apiUrl).pathname.replace(/\/$/, '')}/repos/acme/app/pulls`);
  });

  it('checks a GitHub review-code run by a review of the bot whose token it is', async () => {
    const pull = github.addPullRequest('acme', 'app', { title: 'Fix', author: 'alice', head: 'feature/issue-1-x', base: 'main' });
    github.addReview('acme', 'app', pull, 'alice', 'APPROVED');
    const review = run('github', 'review-code', pull, { isPull: true });
    expect(await check()(review, succeeded)).toMatchObject({
      status: 'failed',
      error: `outcome_missing: The agent reported success but submitted no review on pull request #${pull}.`,
    });
    github.addReview('acme', 'app', pull, 'octo-review', 'CHANGES_REQUESTED', 'please fix');
    expect(await check()(review, succeeded)).toBe(succeeded);
  });

  it('checks a GitLab review-code run by the bot’s approval or its note, never by baton’s own status comment', async () => {
    const mr = gitlab.addMergeRequest('acme', 'app', { title: 'Fix', author: 'alice', source: 'feature/issue-1-x', target: 'main' });
    const review = run('gitlab', 'review-code', mr, { isPull: true });
    const missing = `outcome_missing: The agent reported success but submitted no review on merge request !${mr}.`;
    // baton's status comment, written with the review bot's token, is no review.
    await accounts['gitlab:review']!.createComment('acme', 'app', mr, '🔄 **review-code** started\n\n<!-- baton:outbox:7 -->', 'pull');
    expect(await check()(review, succeeded)).toMatchObject({ status: 'failed', error: missing });
    await accounts['gitlab:review']!.createComment('acme', 'app', mr, 'Two findings: …', 'pull');
    expect(await check()(review, succeeded)).toBe(succeeded);

    const other = gitlab.addMergeRequest('acme', 'app', { title: 'Other', author: 'alice', source: 'feature/issue-2-y', target: 'main' });
    const approving = run('gitlab', 'review-code', other, { isPull: true });
    expect((await check()(approving, succeeded)).status).toBe('failed');
    gitlab.approve('acme', 'app', other, 'lab-review');
    expect(await check()(approving, succeeded)).toBe(succeeded);
  });

  it('fails a GitLab rework run whose merge request head did not move, naming the branch', async () => {
    const mr = gitlab.addMergeRequest('acme', 'app', {
      title: 'Fix',
      author: 'lab-dev',
      source: 'feature/issue-3-z',
      target: 'main',
      sha: 'b'.repeat(40),
    });
    const rework = run('gitlab', 'rework-pr', mr, { isPull: true, headSha: 'b'.repeat(40), headRef: 'feature/issue-3-z' });
    expect(await check()(rework, succeeded)).toMatchObject({
      status: 'failed',
      error: 'outcome_missing: The agent reported success but pushed nothing to `feature/issue-3-z`.',
    });
  });
});
