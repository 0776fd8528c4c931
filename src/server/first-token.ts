import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/index.js';

/** Where the first admin token goes when there is no terminal to show it on. */
export const FIRST_TOKEN_FILE = 'first-admin-token';

/**
 * Hands over the admin token minted on a first start, never through the log stream (which
 * container runtimes and log shippers collect and keep): on the terminal when stderr is one,
 * otherwise into a file only baton's user can read, whose path (not content) is logged.
 */
export function announceFirstToken(
  token: string,
  options: { dataDir: string; logger: Pick<Logger, 'warn'>; terminal?: Pick<NodeJS.WriteStream, 'isTTY' | 'write'> },
): void {
  const terminal = options.terminal ?? process.stderr;
  if (terminal.isTTY) {
    terminal.write(
      `\nbaton: first start, no API tokens yet. This admin token is shown once; store it now:\n\n  ${token}\n\n` +
        'Use it as "Authorization: Bearer <token>", in BATON_TOKEN for the CLI, or to log in to the dashboard.\n' +
        'Mint more with "baton token create --name NAME --scope read|operate|admin"; revoke with "baton token revoke NAME".\n\n',
    );
    return;
  }
  const file = path.join(options.dataDir, FIRST_TOKEN_FILE);
  // A leftover from an earlier first start (its database since replaced) is not this token.
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  options.logger.warn(
    { file },
    `first start without a terminal: the admin API token was written to ${file} (mode 0600). Read it, keep it somewhere safe, then delete the file.`,
  );
}
