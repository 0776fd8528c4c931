import fs from 'node:fs';
import path from 'node:path';

/**
 * Where `command` would be found when started with this PATH: the way execvp looks it up, so a
 * readiness check and a spawn agree. A name with a slash is taken as a path (relative to `cwd`).
 * @returns the absolute path of an executable file, or null
 */
export function findCommand(command: string, searchPath: string | undefined, cwd = process.cwd()): string | null {
  if (command === '') return null;
  if (command.includes('/')) return isExecutableFile(path.resolve(cwd, command)) ? path.resolve(cwd, command) : null;
  for (const dir of (searchPath ?? '').split(':')) {
    // An empty PATH entry means the current directory to execvp; an agent command found only
    // there would depend on where the runner happens to be, so it does not count.
    if (dir === '' || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, command);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
