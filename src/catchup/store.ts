import { forgeRepository, type ForgeName } from '../runs/index.js';
import type { Store } from '../store/index.js';

/** Why catch-up reads a repository. */
export const CURSOR_ORIGIN = { config: 'config', delivery: 'delivery' } as const;
export type CursorOrigin = (typeof CURSOR_ORIGIN)[keyof typeof CURSOR_ORIGIN];

export interface SyncCursor {
  /** Lower-cased `owner/repo`. */
  repository: string;
  owner: string;
  repo: string;
  origin: CursorOrigin;
  /** The forge's time (RFC 3339): the newest updated_at catch-up has seen in this repository. */
  since: string;
  lastPassAt: number | null;
  lastError: string | null;
}

/**
 * Catch-up's own tables (migration 0052-forge-sync): where each repository's catch-up has got
 * to, and the pull request heads baton has acted on. Each forge has its own places: GitHub's and
 * GitLab's repositories are keyed with their forge's name (`github:acme/app`), Gitea's as always.
 */
export function createSyncStore(store: Pick<Store, 'db'>, now: () => number = Date.now, forge?: ForgeName) {
  const { db } = store;
  const keyOf = (owner: string, repo: string) => forgeRepository(forge, owner, repo).toLowerCase();
  const named = forge === 'github' || forge === 'gitlab';
  return {
    /**
     * Adds repositories catch-up does not read yet, starting at `since`; a known one keeps its
     * place (a configured repository also seen in deliveries stays `config`).
     */
    async add(repositories: readonly { owner: string; repo: string }[], origin: CursorOrigin, since: string): Promise<number> {
      let added = 0;
      for (const { owner, repo } of repositories) {
        const result = await db
          .insertInto('forge_sync_cursors')
          .values({ repository: keyOf(owner, repo), owner, repo, origin, since, created_at: now(), last_pass_at: null, last_error: null })
          .onConflict((oc) => oc.column('repository').doNothing())
          .executeTakeFirst();
        added += Number(result.numInsertedOrUpdatedRows ?? 0n);
      }
      return added;
    },

    async list(): Promise<SyncCursor[]> {
      const rows = await db
        .selectFrom('forge_sync_cursors')
        .selectAll()
        .where('repository', named ? 'like' : 'not like', named ? `${forge}:%` : '%:%')
        .orderBy('repository')
        .execute();
      return rows.map((row) => ({
        repository: row.repository,
        owner: row.owner,
        repo: row.repo,
        origin: row.origin as CursorOrigin,
        since: row.since,
        lastPassAt: row.last_pass_at === null ? null : Number(row.last_pass_at),
        lastError: row.last_error,
      }));
    },

    /**
     * A pass over the repository finished: moves its place to `since` if that is later (two
     * replicas passing at once never move it back), and clears the last error.
     */
    async advance(repository: string, since: string): Promise<void> {
      const row = await db.selectFrom('forge_sync_cursors').select('since').where('repository', '=', repository).executeTakeFirst();
      const next = row && Date.parse(row.since) > Date.parse(since) ? row.since : since;
      await db
        .updateTable('forge_sync_cursors')
        .set({ since: next, last_pass_at: now(), last_error: null })
        .where('repository', '=', repository)
        .execute();
    },

    /** A pass over the repository failed: its place stays, so the next pass reads the same window again. */
    async failed(repository: string, error: string): Promise<void> {
      await db
        .updateTable('forge_sync_cursors')
        .set({ last_pass_at: now(), last_error: error.slice(0, 500) })
        .where('repository', '=', repository)
        .execute();
    },
  };
}

export type SyncStore = ReturnType<typeof createSyncStore>;
