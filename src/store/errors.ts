/**
 * Database errors are told apart by SQLSTATE (PostgreSQL) or extended result code (SQLite),
 * never by message text.
 */
const PG_UNIQUE_VIOLATION = '23505';
const SQLITE_UNIQUE = ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'];
const PG_CONNECTION_CLASSES = ['08', '57P'];
const CONNECTION_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'];

function codeOf(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === PG_UNIQUE_VIOLATION || (code !== undefined && SQLITE_UNIQUE.includes(code));
}

/** True when the database could not be reached (as opposed to a query it rejected). */
export function isConnectionError(err: unknown): boolean {
  const code = codeOf(err);
  if (!code) return false;
  return CONNECTION_CODES.includes(code) || PG_CONNECTION_CLASSES.some((prefix) => code.startsWith(prefix));
}
