import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalProvider, type WorkspaceProvider } from '../../src/workspaces/index.js';
import { defaultSpec } from '../conformance/workspace-provider.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

/**
 * All runs shared uid 65534 (nobody): any host process of `nobody` could read and write live
 * workspaces, and one run another's. With `local.runUids` each run has a uid of its own, and its
 * directories are that uid's alone (0700).
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const RANGE = { first: 231000, last: 231099 };
const root = process.getuid?.() === 0;

let fixture: SandboxFixture;
let provider: WorkspaceProvider | undefined;

beforeEach(() => {
  fixture = createSandboxFixture();
});

afterEach(async () => {
  if (provider) {
    for (const w of await provider.list()) await provider.delete(w.name);
    await provider.close?.();
    provider = undefined;
  }
  fixture.cleanup();
});

/** Whether `uid` can list `dir`, tried by a real process of that uid. */
const canList = (uid: number, dir: string) => spawnSync('ls', [dir], { uid, gid: uid, stdio: 'ignore' }).status === 0;

describe.runIf(root)('local.runUids: a uid of its own for each run', () => {
  it("keeps each run's directories its own: neither another run nor nobody can read them", async () => {
    provider = createLocalProvider({
      dataDir: fixture.dataDir,
      command: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose', '--', 'stand-in runner'],
      env: { FAKE_CLAUDE_MODE: 'hang' },
      stopGraceMs: 500,
      sandbox: { ...fixture.sandbox, kind: 'bwrap', runUids: RANGE },
    });
    await provider.create({ ...defaultSpec('uid-a'), runId: 5 });
    await provider.create({ ...defaultSpec('uid-b'), runId: 6 });
    const work = (name: string) => path.join(fixture.dataDir, 'workspaces', name, 'work');
    await until(async () => (await provider!.get('uid-b'))?.status === 'running', 'both runs to be running');
    const a = fs.statSync(work('uid-a'));
    const b = fs.statSync(work('uid-b'));
    expect([a.uid, b.uid]).toEqual([RANGE.first + 5, RANGE.first + 6]);
    for (const stat of [a, b]) expect(stat.mode & 0o777).toBe(0o700);
    // The runner really is that uid.
    const runner = JSON.parse(fs.readFileSync(path.join(fixture.dataDir, 'workspaces', 'uid-a', 'runner.json'), 'utf8')) as {
      runner: { pid: number };
    };
    expect(fs.statSync(`/proc/${runner.runner.pid}`).uid).toBe(RANGE.first + 5);

    expect(canList(a.uid, work('uid-a'))).toBe(true);
    expect(canList(b.uid, work('uid-a'))).toBe(false);
    expect(canList(65534, work('uid-a'))).toBe(false);
    expect(canList(65534, work('uid-b'))).toBe(false);
  }, 60_000);
});
