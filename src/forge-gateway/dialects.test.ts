import { describe, expect, it } from 'vitest';
import type { Run } from '../runs/index.js';
import { githubDialect } from './github.js';
import { gitlabDialect } from './gitlab.js';

const run = { owner: 'acme', repo: 'app' } as Run;

describe('GitHub dialect', () => {
  const github = githubDialect({ apiUrl: 'https://api.github.com', gitUrl: 'https://github.com' });

  it('serves the run’s repository by name (any case) or by id, and git; GraphQL and encoded slashes are refused', () => {
    expect(github.targetOf('/api/v3/repos/Acme/App/issues/1', undefined, run)).toEqual({ kind: 'api', rest: '/issues/1' });
    expect(github.targetOf('/api/v3/repos/acme/other', undefined, run)).toBeNull();
    expect(github.targetOf('/api/v3/repositories/42/issues', undefined, run)).toEqual({ kind: 'api', rest: '/issues', byId: '42' });
    expect(github.targetOf('/acme/app.git/info/refs', 'git-receive-pack', run)).toEqual({ kind: 'git', service: 'info' });
    expect(github.targetOf('/api/graphql', undefined, run)).toMatchObject({ kind: 'refused' });
    expect(github.targetOf('/api/v3/repos/acme/app%2F..%2Fother', undefined, run)).toMatchObject({ kind: 'refused' });
    expect(github.targetOf('/api/v3/user', undefined, run)).toEqual({ kind: 'global' });
  });

  it('maps GitHub’s writes to the gateway’s changes and sends the API to its real root', () => {
    expect(github.changeOf('PUT', '/pulls/3/merge')).toBe('merge');
    expect(github.changeOf('POST', '/pulls/3/comments')).toBe('review');
    expect(github.changeOf('POST', '/issues/3/comments')).toBe('comment');
    expect(github.changeOf('PUT', '/collaborators/mallory')).toBeNull();
    expect(github.changeOf('PUT', '/contents/README.md')).toBeNull();
    expect(github.upstreamUrl('/api/v3/repos/acme/app', { kind: 'api', rest: '' })).toBe('https://api.github.com/repos/acme/app');
    expect(github.upstreamUrl('/acme/app.git/info/refs', { kind: 'git', service: 'info' })).toBe(
      'https://github.com/acme/app.git/info/refs',
    );
    expect(github.branchUrl(run, 'feature/issue-1-x')).toBe('https://api.github.com/repos/acme/app/branches/feature/issue-1-x');
    expect(github.gitAuth('tok')).toBe(`Basic ${Buffer.from('x-access-token:tok').toString('base64')}`);
  });
});

describe('GitLab dialect', () => {
  const gitlab = gitlabDialect({ apiUrl: 'https://gitlab.example.com/api/v4', gitUrl: 'https://gitlab.example.com' });

  it('serves the run’s project by encoded path or id, and git; another project, a deeper path and GraphQL are refused', () => {
    expect(gitlab.targetOf('/api/v4/projects/acme%2Fapp/issues/1/notes', undefined, run)).toEqual({ kind: 'api', rest: '/issues/1/notes' });
    expect(gitlab.targetOf('/api/v4/projects/7/merge_requests', undefined, run)).toEqual({
      kind: 'api',
      rest: '/merge_requests',
      byId: '7',
    });
    expect(gitlab.targetOf('/api/v4/projects/acme%2Fother', undefined, run)).toBeNull();
    expect(gitlab.targetOf('/api/v4/projects/acme%2Fapp%2Fsub', undefined, run)).toBeNull();
    expect(gitlab.targetOf('/api/graphql', undefined, run)).toMatchObject({ kind: 'refused' });
    expect(gitlab.targetOf('/acme/app.git/git-receive-pack', undefined, run)).toEqual({ kind: 'git', service: 'receive' });
  });

  it('serves a project in a subgroup by its full path, and refuses its parent group, a sibling that extends its name and any other depth', () => {
    const nested = { owner: 'acme/platform', repo: 'app' } as Run;
    expect(gitlab.targetOf('/api/v4/projects/acme%2Fplatform%2Fapp/issues/1/notes', undefined, nested)).toEqual({
      kind: 'api',
      rest: '/issues/1/notes',
    });
    expect(gitlab.targetOf('/api/v4/projects/Acme%2FPlatform%2FApp', undefined, nested)).toEqual({ kind: 'api', rest: '' });
    for (const other of [
      'acme%2Fplatform',
      'acme%2Fplatform%2Fapp-other',
      'acme%2Fapp',
      'acme%2Fplatform%2Fapp%2Fsub',
      'acme%2Fplatform%2F..%2Fapp',
    ]) {
      expect(gitlab.targetOf(`/api/v4/projects/${other}`, undefined, nested), other).toBeNull();
    }
    expect(gitlab.targetOf('/acme/platform/app.git/info/refs', 'git-upload-pack', nested)).toEqual({ kind: 'git', service: 'info' });
    expect(gitlab.targetOf('/acme/platform/app/git-receive-pack', undefined, nested)).toEqual({ kind: 'git', service: 'receive' });
    for (const other of [
      '/acme/platform.git',
      '/acme/platform/app-other.git',
      '/platform/app.git',
      '/acme/platform/app/x.git',
      '/acme%2Fplatform%2Fapp.git',
    ]) {
      expect(gitlab.targetOf(`${other}/git-receive-pack`, undefined, nested), other).toBeNull();
    }
    expect(gitlab.repositoryUrl(nested)).toBe('https://gitlab.example.com/api/v4/projects/acme%2Fplatform%2Fapp');
    // A top-level run is not served a subgroup's git either.
    expect(gitlab.targetOf('/acme/app/sub.git/git-receive-pack', undefined, run)).toBeNull();
  });

  it('maps GitLab’s writes to the gateway’s changes; releases never pass (GitLab has no drafts)', () => {
    expect(gitlab.changeOf('POST', '/merge_requests/1/approve')).toBe('review');
    expect(gitlab.changeOf('POST', '/merge_requests/1/discussions')).toBe('review');
    expect(gitlab.changeOf('PUT', '/merge_requests/1/merge')).toBe('merge');
    expect(gitlab.changeOf('POST', '/members')).toBeNull();
    expect(gitlab.changeOf('POST', '/repository/files/README.md')).toBeNull();
    expect(gitlab.releaseProblem({ tag_name: 'v1' })).toContain('no draft releases');
    expect(gitlab.branchUrl(run, 'feature/issue-1-x')).toBe(
      'https://gitlab.example.com/api/v4/projects/acme%2Fapp/repository/branches/feature%2Fissue-1-x',
    );
    expect(gitlab.apiAuth('tok')).toEqual({ 'private-token': 'tok' });
  });

  it('names the merge request whose reviewer state a publish of the review sets (lib/api/draft_notes.rb bulk_publish)', () => {
    const publish = '/merge_requests/4/draft_notes/bulk_publish';
    expect(gitlab.changeOf('POST', publish)).toBe('review');
    expect(gitlab.reviewerStateOf!('POST', publish, { reviewer_state: 'requested_changes' })).toBe(4);
    expect(gitlab.reviewerStateOf!('POST', publish, { reviewer_state: 'reviewed', note: 'x' })).toBe(4);
    expect(gitlab.reviewerStateOf!('POST', publish, { Reviewer_State: 'requested_changes' })).toBe(4);
    // Publishing drafts alone, or with an empty state, sets none; nor does any other path.
    expect(gitlab.reviewerStateOf!('POST', publish, {})).toBeNull();
    expect(gitlab.reviewerStateOf!('POST', publish, { reviewer_state: '' })).toBeNull();
    expect(gitlab.reviewerStateOf!('POST', publish, null)).toBeNull();
    expect(gitlab.reviewerStateOf!('POST', '/merge_requests/4/notes', { reviewer_state: 'requested_changes' })).toBeNull();
  });
});
