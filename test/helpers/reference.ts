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
 * absolute path. A missing reference fails the suite with one test naming the missing path, on
 * every machine: the references are the contract baton is tested against, and a run that passes
 * by quietly testing less would claim what it never checked.
 */
export function describeWithReference(relative: string, name: string, body: (file: string) => void): void {
  const file = referencePath(relative);
  if (fs.existsSync(file)) {
    describe(name, () => body(file));
    return;
  }
  describe(name, () => {
    it('finds its reference', () => {
      throw new Error(`${file} is missing (../shared/reference next to the repository, or set BATON_REFERENCE_DIR)`);
    });
  });
}
