import { describe, expect, it } from 'vitest';
import { gitLabNamespaceProblem, isBranchName, isForgeName, parseGitLabProjectPath, parseRepositoryName } from './names.js';

describe('repository names', () => {
  it.each(['acme/app', 'Acme-Corp/my_app.v2', 'a/b', '0/x'])('takes %s', (name) => {
    const [owner, repo] = name.split('/');
    expect(parseRepositoryName(name)).toEqual({ owner, repo });
  });

  it.each([
    'acme',
    'acme/app/extra',
    '../etc/passwd',
    'acme/..',
    '-rf/app',
    'acme/-app',
    'acme/.hidden',
    'acme/app.git',
    'ac me/app',
    'acme/',
    '/app',
    'acme/a..b',
  ])('refuses %s', (name) => {
    expect(parseRepositoryName(name)).toBeNull();
  });
});

describe('forge names (Gitea rule)', () => {
  it.each(['acme', 'web-api', 'my_app.v2', '.hidden', '-', 'a..b', 'X'])('takes %s', (name) => {
    expect(isForgeName(name)).toBe(true);
  });

  it.each(['', '.', '..', 'a/b', 'evil.example:8080', 'a b', 'a?b', 'a#b', 'a%2fb', 'a@b', 'é', 'a\\b', 'x'.repeat(256)])(
    'refuses %j',
    (name) => {
      expect(isForgeName(name)).toBe(false);
    },
  );
});

describe('branch names', () => {
  it.each(['main', 'develop', 'feature/parser', 'release-2.0', 'fix_1'])('takes %s', (name) => {
    expect(isBranchName(name)).toBe(true);
  });

  it.each([
    '',
    '-b',
    '--upload-pack=x',
    '/main',
    '.hidden',
    'a..b',
    'a//b',
    'a/.b',
    'x.lock',
    'a/',
    'a.',
    'a b',
    'a~1',
    'a^',
    'a:b',
    'a@{1}',
    'x'.repeat(201),
  ])('refuses %j', (name) => {
    expect(isBranchName(name)).toBe(false);
  });
});

describe('GitLab project paths (namespace with subgroups, then project)', () => {
  const deepest = Array.from({ length: 21 }, (_, i) => `g${i}`).join('/');

  it.each([
    ['acme/app', 'acme', 'app'],
    ['acme/platform/app', 'acme/platform', 'app'],
    ['Acme_Corp/web.api/my-app.', 'Acme_Corp/web.api', 'my-app.'],
    ['_private/x', '_private', 'x'],
    [`${deepest}/app`, deepest, 'app'],
  ])('takes %s as namespace %s and project %s', (path, owner, repo) => {
    expect(parseGitLabProjectPath(path)).toEqual({ owner, repo });
  });

  it.each([
    'app',
    'acme/',
    '/app',
    'acme//app',
    'acme/../app',
    'acme/./app',
    'acme/-x/app',
    'acme/.x/app',
    'acme/platform/.git',
    'acme/platform/app.git',
    'acme/platform.atom/app',
    'acme/platform./app',
    'acme/pl atform/app',
    'acme/pl%2Fatform/app',
    'acme\\platform/app',
    'acme/platform/app?x',
    `acme/${'x'.repeat(256)}/app`,
    `${deepest}/g21/app`,
  ])('refuses %j', (path) => {
    expect(parseGitLabProjectPath(path)).toBeNull();
  });

  it('says what is wrong with a namespace, naming the segment', () => {
    expect(gitLabNamespaceProblem('acme/platform')).toBeUndefined();
    expect(gitLabNamespaceProblem('acme/..')).toBe(
      'has a segment ".." that is not a GitLab path (each segment letters, digits, "_", "-" and ".", starting with a letter, a digit or "_", not ending in ".git" or ".atom")',
    );
    expect(gitLabNamespaceProblem(`${deepest}/g21`)).toBe(
      'has 22 segments: a GitLab namespace has at most 21 (a group and 20 levels of subgroups)',
    );
  });
});
