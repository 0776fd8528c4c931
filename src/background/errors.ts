import { maskUrlCredentials } from '../config-schema/index.js';

/**
 * The text of anything thrown, for logs and stored errors (a run's last error, `/ready`), with the
 * password of any URL in it masked: a driver or client repeating the URL it was given must not
 * put the credentials in it into a log or the API. `AggregateError` (Node's connect to a host with
 * several addresses) has an empty message of its own: its inner errors say what failed.
 */
export function errorMessage(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    const inner = err.errors.map(errorMessage).filter(Boolean);
    if (inner.length > 0) return [...new Set(inner)].join('; ');
  }
  if (err instanceof Error) return maskUrlCredentials(err.message || codeOf(err) || err.name);
  return maskUrlCredentials(String(err));
}

/** The `code` of a Node or database driver error (`ECONNREFUSED`, a SQLSTATE, `SQLITE_BUSY`), if any. */
export function codeOf(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
