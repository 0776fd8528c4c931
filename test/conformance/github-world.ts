import type { FakeGitHub } from '../fakes/github/index.js';
import type { ForgeClientFixture } from './forge-client.js';

/**
 * The repository the ForgeClient conformance suite reads on the fake GitHub, the same for every
 * GitHub client (a user's token, a GitHub App): `acme/app` with people of each role, labels, an
 * issue and a pull request with two reviews. The caller makes `acme/app` and gives its bot admin there (hooks need it).
 */
export function seedGitHubConformance(
  github: FakeGitHub,
): Omit<ForgeClientFixture, 'client' | 'badTokenClient' | 'badToken' | 'botLogin' | 'teardown'> {
  for (const login of ['acme', 'reader', 'writer', 'maintainer', 'triager', 'stranger', 'alice']) github.addUser(login);
  github.setPermission('acme', 'app', 'reader', 'read');
  github.setPermission('acme', 'app', 'writer', 'write');
  github.setPermission('acme', 'app', 'maintainer', 'maintain');
  github.setPermission('acme', 'app', 'triager', 'triage');
  github.addLabel('acme', 'app', 'bug', 'D73A4A');
  github.addLabel('acme', 'app', 'ready-for-development', '0e8a16');
  github.addLabel('acme', 'app', 'needs-review', 'fbca04');
  const issue = github.addIssue('acme', 'app', { title: 'Spelling error in the README file', author: 'alice', labels: ['bug'] });
  const pull = github.addPullRequest('acme', 'app', { title: 'Update the README', author: 'alice', head: 'changes', base: 'main' });
  github.addReview('acme', 'app', pull, 'writer', 'CHANGES_REQUESTED', 'please fix');
  github.addReview('acme', 'app', pull, 'maintainer', 'APPROVED');
  return {
    owner: 'acme',
    repo: 'app',
    issue: { number: issue, title: 'Spelling error in the README file', labels: [{ name: 'bug', color: 'd73a4a' }] },
    pull: {
      number: pull,
      title: 'Update the README',
      head: 'changes',
      base: 'main',
      reviews: [
        { user: 'writer', state: 'REQUEST_CHANGES' },
        { user: 'maintainer', state: 'APPROVED' },
      ],
    },
    repoLabels: ['ready-for-development', 'needs-review'],
    missingNumber: 999,
    permissions: [
      ['acme', 'admin'],
      ['writer', 'write'],
      ['maintainer', 'write'],
      ['triager', 'read'],
      ['reader', 'read'],
      // A public repository: GitHub says read for anyone.
      ['stranger', 'read'],
    ],
    hookEvents: { create: ['issues', 'issue_comment'], edit: ['issues', 'pull_request', 'pull_request_review'] },
  };
}
