import { describe, expect, it } from 'vitest';
import {
  branchAllowed,
  changeProblem,
  commentEditProblem,
  DEFAULT_RIGHTS,
  readChangeBody,
  readProblem,
  reviewerStateProblem,
  writeQueryProblem,
} from './rights.js';

describe('branchAllowed', () => {
  const onIssue = { number: 12, payload: {} };
  const onPull = { number: 30, payload: { isPull: true } };

  it('issue: a branch naming the run’s issue, never another issue’s, and not for a run on a pull request', () => {
    expect(branchAllowed('feature/issue-12-add-login', ['issue'], onIssue)).toBe(true);
    expect(branchAllowed('fix/issue-12', ['issue'], onIssue)).toBe(true);
    expect(branchAllowed('feature/issue-123-other', ['issue'], onIssue)).toBe(false);
    expect(branchAllowed('main', ['issue'], onIssue)).toBe(false);
    expect(branchAllowed('feature/issue-30-x', ['issue'], onPull)).toBe(false);
    expect(branchAllowed('feature/issue-12-x', ['issue'], { number: null, payload: {} })).toBe(false);
  });

  it('head: the pull request’s head only', () => {
    expect(branchAllowed('feature/issue-7-x', ['head'], onPull, 'feature/issue-7-x')).toBe(true);
    expect(branchAllowed('feature/issue-7-y', ['head'], onPull, 'feature/issue-7-x')).toBe(false);
    expect(branchAllowed('feature/issue-7-x', ['head'], onPull)).toBe(false);
    expect(branchAllowed('feature/issue-7-x', ['head'], onIssue, 'feature/issue-7-x')).toBe(false);
  });

  it('patterns: * matches any run of characters, the rest literally', () => {
    expect(branchAllowed('release/v1.2.0', ['release/*'], onIssue)).toBe(true);
    expect(branchAllowed('release/v1/x', ['release/*'], onIssue)).toBe(true);
    expect(branchAllowed('releaseXv1', ['release.*'], onIssue)).toBe(false);
    expect(branchAllowed('chore/maintenance-2026-12-02', ['chore/maintenance-*'], onIssue)).toBe(true);
    expect(branchAllowed('anything', [], onIssue)).toBe(false);
  });
});

describe('changeProblem: what a body asks for beyond its path', () => {
  const develop = {
    run: { owner: 'acme', repo: 'app', number: 12, payload: {}, stage: 'develop' },
    rights: DEFAULT_RIGHTS,
    account: 'dev' as const,
    forge: 'gitea' as const,
    rest: '/pulls/3',
  };
  const devops = { ...develop, run: { ...develop.run, stage: 'devops' }, rights: { push: [], merge: true } };

  it("refuses retargeting a pull request or a state other than open/closed without the merge right, in any key's case", () => {
    expect(changeProblem('pull-edit', { base: 'main' }, develop)).toBe(
      "changing a pull request's base branch needs the right to merge, which the develop stage has not (pipeline.stages.develop.merge)",
    );
    expect(changeProblem('pull-edit', { Base: 'main' }, develop)).toMatch(/base branch/);
    expect(changeProblem('pull-edit', { title: 'x', BASE: 'main' }, develop)).toMatch(/base branch/);
    // Go folds ſ (U+017F) to s when it matches a field name.
    expect(changeProblem('pull-edit', { baſe: 'main' }, develop)).toMatch(/base branch/);
    expect(changeProblem('pull-edit', { state: 'merged' }, develop)).toMatch(
      /^a state change to "merged" \(only open or closed\) needs the right to merge/,
    );
    expect(changeProblem('issue-edit', { state: 'merged' }, develop)).toMatch(/needs the right to merge/);
    expect(changeProblem('pull-edit', { base: 'main', state: 'merged' }, devops)).toBeNull();
    // What the prompts do passes: a title, a body, closing, reopening.
    expect(changeProblem('pull-edit', { title: 'x', body: 'y', state: 'closed' }, develop)).toBeNull();
    expect(changeProblem('pull-edit', { base: '' }, develop)).toBeNull();
    expect(changeProblem('issue-edit', { state: 'open' }, develop)).toBeNull();
  });

  it('opens pull requests only from a branch of the repository the stage may push', () => {
    expect(changeProblem('pull-create', { head: 'feature/issue-12-x', base: 'main', title: 't' }, develop)).toBeNull();
    expect(changeProblem('pull-create', { head: 'acme:feature/issue-12-x', base: 'develop' }, develop)).toBeNull();
    expect(changeProblem('pull-create', { head: 'mallory:feature/issue-12-x', base: 'main' }, develop)).toBe(
      "a pull request from mallory:feature/issue-12-x: another owner's branch; only branches of acme/app",
    );
    expect(changeProblem('pull-create', { head: 'someone-elses-work', base: 'main' }, develop)).toBe(
      'a pull request from someone-elses-work: the develop stage opens pull requests only from a branch naming issue #12 (issue-12-…) (pipeline.stages.develop.push)',
    );
    const github = { ...develop, forge: 'github' as const };
    expect(changeProblem('pull-create', { head: 'feature/issue-12-x', head_repo: 'fork' }, github)).toMatch(/another repository/);
    expect(changeProblem('pull-create', { head: 'feature/issue-12-x', head_repo: 'app' }, github)).toBeNull();
    expect(changeProblem('pull-create', { head: ['x'] }, develop)).toMatch(/not a branch name/);
  });

  it("reads GitLab's fields: target_branch, state_event (merge in API v3), source_branch, target_project_id, /approve", () => {
    const gitlab = { ...develop, forge: 'gitlab' as const, rest: '/merge_requests/3' };
    expect(changeProblem('pull-edit', { target_branch: 'main' }, gitlab)).toMatch(
      /^changing a pull request's base branch needs the right to merge/,
    );
    expect(changeProblem('pull-edit', { state_event: 'merge' }, gitlab)).toMatch(/^a state change to "merge" \(only close or reopen\)/);
    expect(changeProblem('pull-edit', { state_event: 'close', title: 'x' }, gitlab)).toBeNull();
    // GitLab has no owner:branch heads: a colon is part of the branch's name there.
    expect(changeProblem('pull-create', { source_branch: 'feature/issue-12-x', target_branch: 'main' }, gitlab)).toBeNull();
    expect(changeProblem('pull-create', { source_branch: 'main', target_branch: 'release' }, gitlab)).toMatch(
      /^a pull request from main: the develop stage/,
    );
    expect(changeProblem('pull-create', { source_branch: 'feature/issue-12-x', target_project_id: 99 }, gitlab)).toMatch(
      /from or into another repository/,
    );
    expect(changeProblem('review', {}, { ...gitlab, rest: '/merge_requests/3/approve' })).toMatch(/only the review account approves/);
    expect(changeProblem('review', {}, { ...gitlab, rest: '/merge_requests/3/approve', account: 'review' })).toBeNull();
  });

  it("lets only the review account set its GitLab reviewer state, on the run's own merge request only", () => {
    const onPull = {
      run: { owner: 'acme', repo: 'app', number: 3, payload: { isPull: true }, stage: 'review-code' },
      account: 'review' as const,
    };
    expect(reviewerStateProblem(3, onPull, undefined)).toBeNull();
    expect(reviewerStateProblem(4, onPull, 'feature/issue-3-x')).toBe(
      'a reviewer state on !4: this run may request changes on its own merge request !3 only',
    );
    expect(reviewerStateProblem(3, { ...onPull, account: 'dev' }, undefined)).toMatch(/^only the review account sets its reviewer state/);
    // A run on issue #12 (test, by its label): the merge request whose source branch names the issue.
    const onIssue = { run: { ...onPull.run, number: 12, payload: {}, stage: 'test' }, account: 'review' as const };
    expect(reviewerStateProblem(3, onIssue, 'feature/issue-12-login')).toBeNull();
    expect(reviewerStateProblem(3, onIssue, 'feature/issue-123-other')).toMatch(
      /only on a merge request whose source branch names issue #12$/,
    );
    expect(reviewerStateProblem(3, onIssue, undefined)).toMatch(/names issue #12$/);
    expect(reviewerStateProblem(3, { ...onIssue, account: 'dev' }, 'feature/issue-12-login')).toMatch(/the dev account may not$/);
  });

  it('refuses a GitLab text that holds a quick action, in any field GitLab runs them in, for either account', () => {
    const note = { ...develop, forge: 'gitlab' as const, rest: '/merge_requests/3/notes' };
    expect(changeProblem('comment', { body: 'Done.\n/merge' }, note)).toBe(
      'a body with a line starting "/merge", which GitLab runs as a quick action; indent the line or put it in backticks',
    );
    expect(changeProblem('comment', { body: '/approve' }, { ...note, account: 'review' })).toMatch(/quick action/);
    expect(changeProblem('comment', { Body: '/submit_review requested_changes' }, note)).toMatch(/"\/submit_review"/);
    expect(changeProblem('review', { note: 'x\r\n/target_branch main' }, { ...note, rest: '/merge_requests/3/draft_notes' })).toMatch(
      /a note with a line/,
    );
    expect(changeProblem('issue-create', { title: 't', description: '/move acme/other' }, { ...note, rest: '/issues' })).toMatch(
      /a description with a line/,
    );
    // Paths, an indented line and words after a slash elsewhere are text; other forges have no quick actions.
    expect(changeProblem('comment', { body: 'See /tmp/x.md\n/src/a.ts:12 is wrong\n  /merge\n`/merge`' }, note)).toBeNull();
    expect(changeProblem('comment', { body: '/merge' }, { ...note, forge: 'gitea' })).toBeNull();
  });

  it('takes no fields from the query of a write (GitLab reads them there too), credentials aside', () => {
    expect(writeQueryProblem(new URLSearchParams('target_branch=main'))).toBe(
      'a change carries its fields in its JSON body, not in the query (target_branch)',
    );
    expect(writeQueryProblem(new URLSearchParams('token=bgw_1&private_token=x'))).toBeNull();
    expect(writeQueryProblem(new URLSearchParams(''))).toBeNull();
  });

  it('never forces a merge, and lets only the review account approve', () => {
    expect(changeProblem('merge', { Do: 'merge', force_merge: true }, devops)).toMatch(/force_merge/);
    expect(changeProblem('merge', { Do: 'merge' }, devops)).toBeNull();
    expect(changeProblem('review', { event: 'APPROVED', body: 'lgtm' }, develop)).toBe(
      'only the review account approves pull requests; the dev account may comment or request changes',
    );
    expect(changeProblem('review', { event: 'APPROVE' }, develop)).toMatch(/only the review account/);
    expect(changeProblem('review', { event: 'REQUEST_CHANGES', body: 'tests fail' }, develop)).toBeNull();
    expect(changeProblem('review', { event: 'APPROVED' }, { ...develop, account: 'review' })).toBeNull();
  });

  it('reads JSON bodies only: a form-encoded body could carry what a JSON check does not see', () => {
    expect(readChangeBody(Buffer.from('title=x&base=main'))).toBeNull();
    expect(changeProblem('pull-edit', readChangeBody(Buffer.from('title=x&base=main')), develop)).toBe(
      'the gateway passes a JSON body of a change, nothing else (no form)',
    );
    expect(changeProblem('comment', readChangeBody(Buffer.from('body=hello')), develop)).toMatch(/no form/);
    expect(changeProblem('pull-edit', readChangeBody(Buffer.from('["main"]')), develop)).toBe(
      'the body of a pull-edit must be a JSON object',
    );
    // GitHub takes the labels to add as a bare array.
    expect(changeProblem('label', readChangeBody(Buffer.from('["bug"]')), develop)).toBeNull();
    expect(readChangeBody(undefined)).toEqual({});
    expect(readChangeBody(Buffer.from(' {"title":"x"} '))).toEqual({ title: 'x' });
  });
});

describe('readProblem: reads under the repository that reach past it', () => {
  it('refuses CI secrets and variables, runner tokens, webhooks, deploy keys and cross-repository dependencies', () => {
    for (const rest of [
      '/actions/runners/registration-token',
      '/actions/secrets',
      '/actions/variables/NAME',
      '/hooks',
      '/hooks/3',
      '/keys',
      '/issues/4/dependencies',
      '/issues/4/blocks',
      '/environments/prod/secrets',
    ])
      expect(readProblem(rest), rest).toMatch(/are not read through the gateway$/);
    for (const rest of [
      '',
      '/issues/4',
      '/issues/4/comments',
      '/pulls?state=open',
      '/contents/src/keys.ts',
      '/contents/secrets/README.md',
      '/raw/actions/runners.md',
      '/branches/main',
      '/git/refs',
    ])
      expect(readProblem(rest), rest).toBeNull();
  });
});

describe('commentEditProblem: the bot edits and deletes only its own comments', () => {
  it('compares the comment’s author with the bot, on every forge’s fields, and refuses when the forge does not say', () => {
    expect(commentEditProblem({ user: { login: 'Claude-Dev' } }, { login: 'claude-dev' })).toBeNull();
    expect(commentEditProblem({ author: { username: 'claude-dev' } }, { username: 'claude-dev' })).toBeNull();
    expect(commentEditProblem({ user: { login: 'maintainer' } }, { login: 'claude-dev' })).toBe(
      'a change to a comment by maintainer: the bot edits and deletes only its own comments',
    );
    expect(commentEditProblem(null, { login: 'claude-dev' })).toBe('the forge did not say who wrote this comment');
    expect(commentEditProblem({ user: { login: 'claude-dev' } }, null)).toBe('the forge did not say who wrote this comment');
  });
});
