import type { ForgeEvent } from '../../pipeline/index.js';
import { classify, readDeliveryHeaders, readRepository, toForgeEvent } from '../gitea/index.js';
import { classifyGitHub, gitHubForgeEvent, GITHUB_WEBHOOK_PATH } from '../github/index.js';
import { classifyGitLab, gitLabForgeEvent, GITLAB_WEBHOOK_PATH } from '../gitlab/index.js';

/**
 * The one label memory every endpoint shares (migration 0010's `scope` column keeps its old
 * per-path rows, unused): the same label change delivered to two paths is one change.
 */
export const LABEL_MEMORY_SCOPE = 'gitea';

/**
 * The label memory of a forge: Gitea's and Forgejo's is the one above, each other forge has its
 * own. GitLab numbers merge requests apart from issues (`!7` is not `#7`), so they have one more.
 */
export function labelMemoryScope(forge: ForgeEvent['forge'], isPull = false): string {
  if (forge === 'gitlab') return isPull ? 'gitlab:mr' : 'gitlab';
  return forge === 'github' ? forge : LABEL_MEMORY_SCOPE;
}

/**
 * The endpoint catch-up's deliveries of a forge carry: `sync` for Gitea (as always), `sync:github`
 * for GitHub. Their bodies are Gitea-shaped whatever the forge (src/catchup/synthesize.ts), so
 * they are read as Gitea's, with the forge the endpoint names.
 */
export function syncEndpoint(forge: ForgeEvent['forge']): string {
  return forge === 'github' || forge === 'gitlab' ? `sync:${forge}` : 'sync';
}

export type Normalized = { event: ForgeEvent; labelsKnown: boolean } | { unsupported: string } | { invalid: string };

/** The delivery as a ForgeEvent, read as the forge that sent it sends it. */
export function normalize(
  endpoint: string,
  headers: ReturnType<typeof readDeliveryHeaders>,
  stored: Record<string, string>,
  payload: Record<string, unknown>,
): Normalized {
  try {
    if (endpoint === GITHUB_WEBHOOK_PATH) {
      const classified = classifyGitHub(stored['x-github-event'] ?? '', payload);
      if ('unsupported' in classified) return classified;
      return gitHubForgeEvent(classified, payload);
    }
    if (endpoint === GITLAB_WEBHOOK_PATH) {
      const classified = classifyGitLab(stored['x-gitlab-event'] ?? '', payload);
      if ('unsupported' in classified) return classified;
      return gitLabForgeEvent(classified, payload);
    }
    const classified = classify(headers, payload);
    if ('unsupported' in classified) return classified;
    const synced = /^sync:(github|gitlab)$/.exec(endpoint)?.[1] as 'github' | 'gitlab' | undefined;
    readRepository(payload, synced);
    return toForgeEvent(classified, payload, synced ?? headers.forge);
  } catch (err) {
    return { invalid: messageOf(err) };
  }
}

export function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}
