import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './child.js';

/**
 * What a user's own commands leave in a checkout (the demo, `npm start`'s data directory, a
 * `baton init`), and what is installed or built: none of it is copied, so a copy is the checkout
 * as a fresh clone has it. node_modules is linked, not copied (npm install is not under test).
 */
const LEFT_OUT = new Set(['.git', 'node_modules', 'dist', 'demo', 'data', 'baton.yaml', 'coverage', 'bench/results']);

export interface CheckoutCopy {
  /** The copy's root: run commands here as a user would in their clone. */
  root: string;
  remove(): void;
}

/** A copy of this checkout in a fresh temporary directory, as a fresh clone plus `npm install`. */
export function copyCheckout(): CheckoutCopy {
  // A short parent: the paths of a run's sockets under demo/data must stay within the 107 bytes
  // of a unix socket address, as they do in a clone in a home directory.
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'b-'));
  // Readable by the unprivileged uid runs use when the tests run as root, like a clone in a home.
  fs.chmodSync(parent, 0o755);
  const root = path.join(parent, 'baton');
  fs.cpSync(REPO_ROOT, root, {
    recursive: true,
    filter: (source) => !LEFT_OUT.has(path.relative(REPO_ROOT, source)),
  });
  fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(root, 'node_modules'));
  return { root, remove: () => fs.rmSync(parent, { recursive: true, force: true }) };
}
