import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LocalSandboxOptions } from '../../src/workspaces/index.js';
import { REPO_ROOT } from './child.js';

/**
 * What tests need to run local workspaces in the real bubblewrap sandbox:
 * - `dataDir`: baton's data directory, traversable (not readable) by others, because as root the
 *   sandbox runs as nobody (65534), which must reach the workspaces below it;
 * - `shared`: a directory runs may read (bare repositories, target lists for a spy agent);
 * - `sandbox`: the provider's options: this repository (the runner from source, the fake agents)
 *   and `shared` read-only, and a git config that trusts repositories owned by another user
 *   (the test's bare repositories are root's, the sandbox is not).
 */
export interface SandboxFixture {
  dataDir: string;
  shared: string;
  gitConfig: string;
  sandbox: LocalSandboxOptions;
  cleanup(): void;
}

export function createSandboxFixture(): SandboxFixture {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-data-'));
  fs.chmodSync(dataDir, 0o711);
  const shared = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-shared-'));
  fs.chmodSync(shared, 0o755);
  const gitConfig = path.join(shared, 'gitconfig');
  fs.writeFileSync(gitConfig, '[user]\n\tname = Baton Test\n\temail = baton-test@example.invalid\n[safe]\n\tdirectory = *\n');
  return {
    dataDir,
    shared,
    gitConfig,
    sandbox: { kind: 'bwrap', readOnlyPaths: [REPO_ROOT, shared], gitConfig },
    cleanup() {
      // Runners outlive baton by design; a test that failed before its runs ended leaves them.
      // Their sandboxes name this data directory in their arguments; killing those ends them.
      for (const pid of processesNaming(dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(shared, { recursive: true, force: true });
    },
  };
}

/** Processes whose command line mentions `text` (a sandbox's bwrap names its workspace there). */
function processesNaming(text: string): number[] {
  return fs.readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return [];
    try {
      return fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}
