/**
 * The release, checked offline: the workflow Forgejo/Gitea Actions runs on a tag (parsed as YAML,
 * the GitHub Actions syntax both read), the version users name (`baton --version`, package.json),
 * and the changelog and upgrade guide that describe it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { runBaton } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string | boolean>;
}
interface Job {
  'runs-on': string;
  needs?: string | string[];
  container?: { image: string };
  steps: Step[];
}
interface Workflow {
  name: string;
  on: { push: { tags: string[] } };
  jobs: Record<string, Job>;
}

const read = (file: string) => fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
const workflow = YAML.parse(read('.forgejo/workflows/release.yaml')) as Workflow;
const version = (JSON.parse(read('package.json')) as { version: string }).version;

/** GitHub Actions tag filters: `+` repeats the previous character class, `*` matches anything. */
function tagMatches(filter: string, tag: string): boolean {
  const pattern = filter.replace(/[.]/g, '\\.').replace(/\*/g, '.*');
  return new RegExp(`^${pattern}$`).test(tag);
}

describe('the release workflow', () => {
  it('runs on semver tags only', () => {
    const filters = workflow.on.push.tags;
    const matches = (tag: string) => filters.some((f) => tagMatches(f, tag));
    for (const tag of ['v0.1.0', 'v1.2.3', 'v10.20.30', 'v1.2.3-rc.1']) expect(matches(tag), tag).toBe(true);
    for (const tag of ['1.2.3', 'v1.2', 'latest', 'vnext']) expect(matches(tag), tag).toBe(false);
    expect(Object.keys(workflow.on)).toEqual(['push']);
  });

  it('tests first, with the CI entry point (npm test), and checks the tag against package.json', () => {
    const test = workflow.jobs.test!;
    expect(test.container?.image).toMatch(/^node:20\b/);
    const runs = test.steps.map((s) => s.run ?? '').join('\n');
    expect(runs).toMatch(/^\.ci\/run$/m);
    expect(read('.ci/run')).toMatch(/^npm test$/m);
    expect(runs).toContain('test "v${version}" = "${GITHUB_REF_NAME}"');
    expect(runs).toContain('CHANGELOG.md');
    expect(runs).toContain('docs/upgrading.md');
  });

  it('builds the image from the Dockerfile only after the tests passed, and pushes it with its semver tags', () => {
    const image = workflow.jobs.image!;
    expect([image.needs].flat()).toEqual(['test']);
    const uses = (prefix: string) => image.steps.find((s) => s.uses?.startsWith(prefix));
    const login = uses('docker/login-action@')!;
    expect(login.with).toEqual({
      registry: '${{ vars.REGISTRY }}',
      username: '${{ secrets.REGISTRY_USERNAME }}',
      password: '${{ secrets.REGISTRY_PASSWORD }}',
    });
    const meta = uses('docker/metadata-action@')!;
    expect(meta.id).toBe('meta');
    expect(String(meta.with!.tags).trim().split('\n')).toEqual([
      'type=semver,pattern={{version}}',
      'type=semver,pattern={{major}}.{{minor}}',
      'type=semver,pattern={{major}}',
    ]);
    const build = uses('docker/build-push-action@')!;
    expect(build.with).toMatchObject({ context: '.', push: true, tags: '${{ steps.meta.outputs.tags }}' });
    expect(fs.existsSync(path.join(REPO_ROOT, 'Dockerfile'))).toBe(true);
  });

  it('pins every action to a major version and writes no secret in the file', () => {
    for (const job of Object.values(workflow.jobs)) {
      for (const step of job.steps) if (step.uses) expect(step.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
    }
    const text = read('.forgejo/workflows/release.yaml');
    for (const [, value] of text.matchAll(/(?:password|token|username):\s*(.+)/g)) expect(value).toMatch(/^\$\{\{ secrets\.\w+ \}\}$/);
  });
});

describe('the version', () => {
  it('is semver, printed by baton --version, and described in CHANGELOG.md and docs/upgrading.md', async () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?$/);
    const printed = await runBaton(['--version']);
    expect(printed.stdout.trim()).toBe(version);
    expect(read('CHANGELOG.md')).toMatch(new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\]`, 'm'));
    expect(read('docs/upgrading.md')).toMatch(new RegExp(`^## ${version.replace(/\./g, '\\.')}$`, 'm'));
  });
});
