import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'vitest';
import { REPO_ROOT } from './child.js';

/**
 * The shared upstream references (real Gitea payloads, Coder and Claude Code facts), read in
 * place and never copied into the repository: `BATON_REFERENCE_DIR`, or `../shared/reference`
 * next to the repository. Every suite finds them through this one place.
 */
export const REFERENCE_DIR = process.env.BATON_REFERENCE_DIR || path.resolve(REPO_ROOT, '../shared/reference');

/** A file or folder of the reference, e.g. `referencePath('gitea/payloads')`. */
export function referencePath(relative: string): string {
  return path.join(REFERENCE_DIR, relative);
}

/**
 * `describe` for a suite that checks baton against a reference file or folder; `body` gets its
 * absolute path. Every reference suite behaves the same way when the reference is missing:
 * under `CI=true` the suite fails with one test naming the missing path (a CI run never passes
 * by quietly testing less); otherwise the suite is skipped, visibly, with a name and a warning
 * that say which path is missing and that `BATON_REFERENCE_DIR` can point at it.
 */
export function describeWithReference(relative: string, name: string, body: (file: string) => void): void {
  const file = referencePath(relative);
  if (fs.existsSync(file)) {
    describe(name, () => body(file));
    return;
  }
  const missing = `${file} is missing (../shared/reference next to the repository, or set BATON_REFERENCE_DIR)`;
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('finds its reference', () => {
        throw new Error(`CI=true requires the reference: ${missing}`);
      });
    });
    return;
  }
  console.warn(`SKIPPED "${name}": ${missing}`);
  describe.skip(`${name} [skipped: ${missing}]`, () => body(file));
}
