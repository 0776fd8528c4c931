import { describe, expect, it } from 'vitest';
import { isBranchName, isForgeName, parseRepositoryName } from './names.js';

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
