import { createHash } from 'node:crypto';

/**
 * Coder workspace names (`codersdk.NameValid`): 1–32 bytes, ASCII letters and digits with single
 * hyphens between them, and not the reserved words `new` / `create`.
 */
export const CODER_NAME_MAX_LENGTH = 32;
const CODER_NAME_PATTERN = /^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$/;
const RESERVED_NAMES = new Set(['new', 'create']);

/**
 * Every name baton derives starts with this, so baton's workspaces can be told apart from a
 * person's workspaces on the same Coder account (together with the template and the owner).
 */
export const BATON_NAME_PREFIX = 'bt-';

/**
 * Names baton gives workspaces: what `workspaceNameForKey` produces (`bt-…`), and the
 * dispatcher's per-run form `baton-<run id>`.
 */
export const BATON_WORKSPACE_NAME_PATTERN = /^(?:bt-[a-z0-9]+(?:-[a-z0-9]+)*|baton-[0-9]+)$/;

const HASH_LENGTH = 7;

/** Coder's own error text for an invalid name, checked in Coder's order; null when valid. */
export function coderNameProblem(name: string): string | null {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > CODER_NAME_MAX_LENGTH) return `must be <= ${CODER_NAME_MAX_LENGTH} characters`;
  if (bytes < 1) return 'must be >= 1 character';
  if (RESERVED_NAMES.has(name)) return `cannot use "${name}" as a name`;
  if (!CODER_NAME_PATTERN.test(name)) return 'must be alphanumeric with hyphens';
  return null;
}

export function isValidCoderName(name: string): boolean {
  return coderNameProblem(name) === null;
}

export function isBatonWorkspaceName(name: string): boolean {
  return BATON_WORKSPACE_NAME_PATTERN.test(name) && Buffer.byteLength(name) <= CODER_NAME_MAX_LENGTH;
}

function shortHash(key: string): string {
  const digest = createHash('sha256').update(key, 'utf8').digest();
  // 7 base-36 characters ≈ 36 bits: collisions need ~300k names sharing one shortened slug.
  return digest.readBigUInt64BE(0).toString(36).padStart(13, '0').slice(-HASH_LENGTH);
}

/**
 * The workspace name for a run key (`{stage}-{owner}-{repo}-{number}`): readable, deterministic
 * and valid for Coder. A key that is already a clean lower-case slug and fits is used as is
 * (after the prefix); otherwise the slug is shortened, keeping its last segment (usually the issue
 * number), and a hash of the full key is appended, so keys that slug alike (`a.b` vs `a_b`,
 * `Acme` vs `acme`) or share a long prefix never collide.
 *
 * @example workspaceNameForKey('develop-acme-app-42') // 'bt-develop-acme-app-42'
 * @example workspaceNameForKey('develop-acme-my.long_repository-name-42') // 'bt-develop-acme-my-lo-42-syduz39'
 */
export function workspaceNameForKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(`workspaceNameForKey: run key must be a non-empty string, got ${JSON.stringify(key)}`);
  }
  const slug = key
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const budget = CODER_NAME_MAX_LENGTH - BATON_NAME_PREFIX.length;
  if (slug === key && slug.length <= budget) return BATON_NAME_PREFIX + slug;

  const hash = shortHash(key);
  const room = budget - HASH_LENGTH - 1;
  return BATON_NAME_PREFIX + [shorten(slug, room), hash].filter(Boolean).join('-');
}

/** Shortens a slug to `room` characters, keeping its last segment when that segment is short. */
function shorten(slug: string, room: number): string {
  if (slug.length <= room) return slug;
  const cut = slug.lastIndexOf('-');
  const tail = cut > 0 ? slug.slice(cut + 1) : '';
  if (tail.length > 0 && tail.length <= 10 && tail.length + 2 <= room) {
    const head = slug.slice(0, room - tail.length - 1).replace(/-+$/, '');
    return head ? `${head}-${tail}` : tail;
  }
  return slug.slice(0, room).replace(/-+$/, '');
}
