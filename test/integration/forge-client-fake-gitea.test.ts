import { createGiteaClient } from '../../src/forge/index.js';
import { describeForgeClientConformance } from '../conformance/forge-client.js';
import { createFakeGitea, type FakeGiteaOptions } from '../fakes/gitea/index.js';

async function fixture(options: FakeGiteaOptions & { legacyColors?: boolean }) {
  const gitea = await createFakeGitea(options);
  const bot = gitea.addUser('claude-dev');
  gitea.addUser('alice');
  gitea.addUser('bob');
  gitea.addUser('mallory');
  gitea.addRepo('acme', 'app');
  gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
  gitea.addCollaborator('acme', 'app', 'alice', 'write');
  gitea.addCollaborator('acme', 'app', 'bob', 'read');
  const color = (hex: string) => (options.legacyColors ? `#${hex.toUpperCase()}` : hex);
  gitea.addLabel('acme', 'app', { name: 'bug', color: color('ee0701') });
  gitea.addLabel('acme', 'app', { name: 'ready-for-development', color: color('00aabb') });
  gitea.addLabel('acme', 'app', { name: 'unused', color: color('cccccc') });
  const issue = gitea.addIssue('acme', 'app', { title: 'Crash on start', author: 'alice', labels: ['bug', 'ready-for-development'] });
  const pull = gitea.addPullRequest('acme', 'app', { title: 'Fix crash', author: 'claude-dev', head: 'fix/crash', base: 'main' });
  gitea.addReview('acme', 'app', pull.number, { author: 'alice', state: 'REQUEST_CHANGES', body: 'Add a test' });
  gitea.addReview('acme', 'app', pull.number, { author: 'bob', state: 'APPROVED' });
  const badToken = 'f'.repeat(40);
  return {
    client: createGiteaClient({ baseUrl: gitea.url, token: bot.token }),
    badTokenClient: createGiteaClient({ baseUrl: gitea.url, token: badToken }),
    badToken,
    botLogin: 'claude-dev',
    owner: 'acme',
    repo: 'app',
    issue: {
      number: issue.number,
      title: 'Crash on start',
      labels: [
        { name: 'bug', color: 'ee0701' },
        { name: 'ready-for-development', color: '00aabb' },
      ],
    },
    pull: {
      number: pull.number,
      title: 'Fix crash',
      head: 'fix/crash',
      base: 'main',
      reviews: [
        { user: 'alice', state: 'REQUEST_CHANGES' },
        { user: 'bob', state: 'APPROVED' },
      ],
    },
    repoLabels: ['bug', 'ready-for-development', 'unused'],
    missingNumber: 999,
    permissions: [
      ['acme', 'admin'],
      ['claude-dev', 'admin'],
      ['alice', 'write'],
      ['bob', 'read'],
      // acme/app is public: anyone signed in may read it.
      ['mallory', 'read'],
    ] as [string, 'none' | 'read' | 'write' | 'admin'][],
    teardown: () => gitea.close(),
  };
}

describeForgeClientConformance('Gitea client against the fake Gitea', () => fixture({}));
describeForgeClientConformance('Gitea client against the fake Gitea mimicking Gitea <1.24 (owner permission, #RRGGBB colors)', () =>
  fixture({ legacyOwnerPermission: true, legacyColors: true }),
);
