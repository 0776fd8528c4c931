import fs from 'node:fs';
import path from 'node:path';

/** A login file a run needs that baton cannot hand to it: the message says which and what to do. */
export class CredentialsError extends Error {
  override name = 'CredentialsError';
}

/** The run's own user, when baton runs as root and runs are another uid. */
export interface RunUser {
  uid: number;
  gid: number;
}

/** A credential a run needs, and where in the run's home it goes. */
export interface RunCredential {
  /** The setting that names it, for the error (`local.claudeCredentials`). */
  setting: string;
  /** The host file, as the operator keeps it (commonly 0600, readable by baton's user only). */
  source: string;
  /** Where the run finds it, relative to its home (`.claude/.credentials.json`). */
  target: string;
}

/**
 * Hands each credential to a run as a copy in the run's own home, owned by the run's user and
 * readable by it only (0600), the way a run's other secrets reach it: never by making the
 * operator's file readable to others. A bind of the operator's file would only work when the
 * run's uid can read it, which a 0600 `~/.claude/.credentials.json` of root never is for the
 * unprivileged uid runs get when baton runs as root. The copy is the run's: Claude Code may
 * refresh its token in it; it goes with the workspace.
 *
 * Called for the readiness check's throw-away workspace too, so a file baton cannot read fails
 * `/ready`, `baton doctor` and the start, naming the file, instead of each run.
 */
export function handCredentials(homeDir: string, credentials: readonly RunCredential[], runAs: RunUser | undefined): void {
  for (const credential of credentials) {
    let content: Buffer;
    try {
      content = fs.readFileSync(credential.source);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new CredentialsError(
        `${credential.setting} ${credential.source} cannot be read by baton (${code}, uid ${process.getuid?.() ?? '?'}): ` +
          'make it readable by the user baton runs as (it may stay 0600, owned by that user), or remove the setting. ' +
          'See docs/troubleshooting.md#run-credentials',
        { cause: err },
      );
    }
    const file = path.join(homeDir, credential.target);
    const dirs: string[] = [];
    for (let d = path.dirname(file); d !== homeDir && !fs.existsSync(d); d = path.dirname(d)) dirs.unshift(d);
    for (const d of dirs) fs.mkdirSync(d, { mode: 0o700 });
    fs.writeFileSync(file, content, { mode: 0o600 });
    fs.chmodSync(file, 0o600);
    if (runAs) for (const p of [...dirs, file]) fs.chownSync(p, runAs.uid, runAs.gid);
  }
}
