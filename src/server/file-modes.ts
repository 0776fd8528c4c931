import fs from 'node:fs';
import path from 'node:path';
import { parseDatabaseUrl } from '../store/index.js';

/**
 * What baton keeps that other local users must not read: the data directory (run payloads, logs,
 * every workspace) and the SQLite database with its WAL and shared-memory files (runs, token and
 * session hashes). Returns one warning per path that is looser than it should be, saying how to fix it.
 *
 * A directory may be traversable by others (`o+x`, e.g. 0711): that reveals no names, and the
 * sandboxed runs of a baton running as root are another user who must pass through to reach
 * their workspace. Reading or writing it is what must not be allowed.
 */
export function checkFileModes(options: { dataDir: string; databaseUrl: string }): string[] {
  const paths: Array<{ file: string; directory: boolean }> = [
    { file: options.dataDir, directory: true },
    { file: path.join(options.dataDir, 'workspaces'), directory: true },
  ];
  const target = parseDatabaseUrl(options.databaseUrl);
  if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:') {
    for (const suffix of ['', '-wal', '-shm']) paths.push({ file: `${target.file}${suffix}`, directory: false });
  }
  const warnings: string[] = [];
  for (const { file, directory } of paths) {
    let mode: number;
    try {
      mode = fs.statSync(file).mode & 0o777;
    } catch {
      continue;
    }
    const loose = directory ? mode & 0o066 : mode & 0o077;
    if (loose === 0) continue;
    const wanted = directory ? '700' : '600';
    warnings.push(
      `${file} has mode ${mode.toString(8).padStart(4, '0')}: other local users can ${loose & 0o022 ? 'change' : 'read'} it ` +
        `(${directory ? 'run payloads, logs, workspaces' : 'runs, logs, token and session hashes'}). Run "chmod ${wanted} ${file}".`,
    );
  }
  return warnings;
}
