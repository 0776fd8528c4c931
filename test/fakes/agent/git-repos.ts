import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface SeedRepoOptions {
  /** Files committed on `main` (path → content). */
  main?: Record<string, string>;
  /** Files committed on `develop` on top of main; null = no develop branch. */
  develop?: Record<string, string> | null;
}

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * A real bare repository on disk (`<root>/<name>.git`) with a seeded commit on `main` and, unless
 * `develop: null`, one more on `develop`. Its HEAD points at main, like a forge's default branch.
 */
export function createBareRepo(root: string, name: string, options: SeedRepoOptions = {}): string {
  const bare = path.join(root, `${name}.git`);
  const work = path.join(root, `${name}-seed`);
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  git(root, 'init', '--quiet', '--initial-branch=main', work);
  writeFiles(work, { 'README.md': `# ${name}\n`, ...options.main });
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'seed main');
  git(work, 'remote', 'add', 'origin', bare);
  git(work, 'push', '--quiet', 'origin', 'main');
  if (options.develop !== null) {
    git(work, 'checkout', '--quiet', '-b', 'develop');
    writeFiles(work, { 'DEVELOP.md': 'work in progress\n', ...options.develop });
    git(work, 'add', '-A');
    git(work, 'commit', '--quiet', '-m', 'seed develop');
    git(work, 'push', '--quiet', 'origin', 'develop');
  }
  fs.rmSync(work, { recursive: true, force: true });
  return bare;
}

function writeFiles(dir: string, files: Record<string, string>) {
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
}
