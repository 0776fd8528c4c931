import { codeOf } from '../background/index.js';

/**
 * Database errors are told apart by SQLSTATE (PostgreSQL) or extended result code (SQLite),
 * never by message text.
 */
const PG_UNIQUE_VIOLATION = '23505';
const SQLITE_UNIQUE = ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'];
const PG_CONNECTION_CLASSES = ['08', '57P'];
const CONNECTION_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'];

/**
 * Errors no retry can fix: the configuration (DATABASE_URL, the database's grants, the file) must
 * change. SQLSTATE class 28 is a refused login (wrong password, unknown role, no pg_hba entry);
 * 3D000 a database that does not exist; 3F000 a schema that does not exist; 42501 a missing
 * privilege (creating the tables). On SQLite, a file that cannot be opened or written, or is not a
 * database. Everything else (refused or dropped connections, a server starting up or shutting
 * down, too many connections) may pass and is retried.
 */
const PG_PERMANENT_CLASSES = ['28'];
const PG_PERMANENT_CODES = ['3D000', '3F000', '42501'];
const SQLITE_PERMANENT_PREFIXES = ['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_READONLY', 'SQLITE_PERM', 'SQLITE_AUTH'];

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

/** True when retrying cannot help (see the lists above); false for anything that may pass. */
export function isPermanentDatabaseError(err: unknown): boolean {
  const code = codeOf(err);
  if (!code) return false;
  if (code.startsWith('SQLITE_')) return SQLITE_PERMANENT_PREFIXES.some((prefix) => code.startsWith(prefix));
  return /^[0-9A-Z]{5}$/.test(code) && (PG_PERMANENT_CODES.includes(code) || PG_PERMANENT_CLASSES.includes(code.slice(0, 2)));
}
