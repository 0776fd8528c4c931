import path from 'node:path';

export type DatabaseTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

/**
 * `sqlite:PATH` (relative to the working directory, or absolute), `sqlite::memory:`,
 * or `postgres://…` / `postgresql://…`. Returns a reason when the URL is none of these.
 */
export function parseDatabaseUrl(url: string, cwd = process.cwd()): DatabaseTarget | { error: string } {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { kind: 'postgres', url };
  if (url.startsWith('sqlite:')) {
    let file = url.slice('sqlite:'.length);
    // Accept the URL-ish spelling sqlite:///abs/path too.
    if (file.startsWith('//')) file = file.slice(2);
    if (file === '') return { error: 'has no file path after "sqlite:"' };
    if (file === ':memory:') return { kind: 'sqlite', file };
    return { kind: 'sqlite', file: path.resolve(cwd, file) };
  }
  return { error: 'must start with sqlite:, postgres:// or postgresql://' };
}
