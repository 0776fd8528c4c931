import type { ForgeHook, ForgeLabel } from './types.js';

/** What `baton connect` does about a repository's webhook. */
export type HookPlan =
  | { action: 'create' }
  /** The hook exists as it should: nothing to send. */
  | { action: 'keep'; hook: ForgeHook }
  /** The hook exists but differs (`changes` says how): an edit sets it right. */
  | { action: 'update'; hook: ForgeHook; changes: string[] }
  /** `--recreate`: delete these and create one afresh (the only way to change a hook's secret). */
  | { action: 'recreate'; hooks: ForgeHook[] };

/**
 * Decides from the repository's hooks what to do about baton's: the one pointing at `url`
 * (ignoring a trailing slash) must be a JSON hook, active, with exactly `events`. The secret is
 * not compared: the forge never shows it.
 */
export function planHook(
  hooks: readonly ForgeHook[],
  url: string,
  events: readonly string[],
  options: { recreate?: boolean } = {},
): HookPlan {
  const ours = hooks.filter((h) => sameUrl(h.url, url));
  if (ours.length === 0) return { action: 'create' };
  if (options.recreate) return { action: 'recreate', hooks: ours };
  const hook = ours[0]!;
  const changes: string[] = [];
  if (hook.contentType !== 'json') changes.push(`content type ${hook.contentType || '(none)'} → json`);
  if (!hook.active) changes.push('inactive → active');
  const wanted = new Set(events);
  const have = new Set(hook.events);
  const missing = [...wanted].filter((e) => !have.has(e));
  const extra = [...have].filter((e) => !wanted.has(e));
  if (missing.length) changes.push(`add events ${missing.join(', ')}`);
  if (extra.length) changes.push(`drop events ${extra.join(', ')}`);
  // A branch filter only limits push, create and delete deliveries: it matters when push is wanted.
  if (wanted.has('push') && hook.branchFilter !== '' && hook.branchFilter !== '*') changes.push(`branch filter ${hook.branchFilter} → all`);
  return changes.length ? { action: 'update', hook, changes } : { action: 'keep', hook };
}

/**
 * The wanted labels the repository lacks (names compared as the pipeline compares them, ignoring
 * case). The forge accepts duplicate names, so this is what may be created, and nothing else.
 */
export function missingLabels<L extends { name: string }>(existing: readonly ForgeLabel[], wanted: readonly L[]): L[] {
  const have = new Set(existing.map((l) => l.name.toLowerCase()));
  return wanted.filter((l) => !have.has(l.name.toLowerCase()));
}

function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}
