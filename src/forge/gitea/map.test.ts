import { describe, expect, it } from 'vitest';
import { toHook, toRepository } from './map.js';

describe('Gitea hooks and repositories', () => {
  it('reads a hook’s events back in the names a create takes, whatever the Gitea version answered', () => {
    // 1.24+ answers the review flag as pull_request_review, ≤1.23 as its three delivery types;
    // both answer `issues` / `pull_request` for the bare events (asked for as *_only).
    const modern = toHook({ id: 1, type: 'gitea', events: ['issues', 'issue_label', 'pull_request_review', 'pull_request'], active: true });
    const legacy = toHook({
      id: 2,
      type: 'gitea',
      events: [
        'issues',
        'issue_label',
        'pull_request_review_approved',
        'pull_request_review_rejected',
        'pull_request_review_comment',
        'pull_request',
      ],
      active: true,
    });
    const expected = ['issue_label', 'issues_only', 'pull_request_only', 'pull_request_review'];
    expect(modern.events).toEqual(expected);
    expect(legacy.events).toEqual(expected);
  });

  it('takes a hook without config or events as empty, never as a match', () => {
    expect(toHook({ id: 3, type: 'slack' })).toEqual({
      id: 3,
      type: 'slack',
      url: '',
      contentType: '',
      events: [],
      active: false,
      branchFilter: '',
    });
  });

  it('reads the caller’s permissions, absent ones as false', () => {
    expect(toRepository({ id: 1, name: 'app', full_name: 'acme/app', permissions: { admin: false, push: true, pull: true } })).toEqual({
      owner: 'acme',
      name: 'app',
      archived: false,
      private: false,
      defaultBranch: '',
      permissions: { admin: false, push: true, pull: true },
    });
    expect(toRepository({ id: 1, name: 'app', full_name: 'acme/app' }).permissions).toEqual({ admin: false, push: false, pull: false });
  });
});
