import type { ForgeAccounts } from '../forge/index.js';
import { PermanentError } from '../background/index.js';
import { outboxFailure } from './forge-failure.js';
import type { OutboxEntry, OutboxHandler } from './types.js';

/** Payload of a `comment` entry: which bot says what on which issue or PR. */
export interface CommentPayload {
  /** Bot account's key in `ForgeAccounts` (`dev`, `review` on Gitea; `github:dev` on GitHub). */
  account: string;
  owner: string;
  repo: string;
  number: number;
  body: string;
  /** `pull` when `number` is a merge request's where the forge numbers them apart (GitLab's `!7`). */
  kind?: 'pull';
}

export interface CommentDeliveryResult {
  commentId: number;
  url: string;
  /** True when a previous attempt had posted it already and this one only found it. */
  recovered?: boolean;
}

/** Hidden in rendered Markdown; lets a retry find a comment an earlier attempt already posted. */
export function commentMarker(entryId: number): string {
  return `<!-- baton:outbox:${entryId} -->`;
}

/**
 * Posts `comment` entries through the bot account each names. A failed attempt may still have
 * posted (the answer was lost to a timeout or a dropped connection), so every retry first looks
 * for its marker among the comments before posting again.
 */
export function createCommentHandler(options: { accounts: ForgeAccounts }): OutboxHandler {
  return async (entry: OutboxEntry): Promise<CommentDeliveryResult> => {
    const payload = parsePayload(entry);
    const client = options.accounts[payload.account];
    if (!client) {
      throw new PermanentError(
        `no forge account "${payload.account}" is configured (known: ${Object.keys(options.accounts).join(', ') || 'none'})`,
      );
    }
    const marker = commentMarker(entry.id);
    try {
      if (entry.attempts > 1) {
        const existing = (await client.listComments(payload.owner, payload.repo, payload.number, payload.kind)).find((c) =>
          c.body.includes(marker),
        );
        if (existing) return { commentId: existing.id, url: existing.htmlUrl, recovered: true };
      }
      const comment = await client.createComment(payload.owner, payload.repo, payload.number, `${payload.body}\n\n${marker}`, payload.kind);
      return { commentId: comment.id, url: comment.htmlUrl };
    } catch (err) {
      throw outboxFailure(err);
    }
  };
}

function parsePayload(entry: OutboxEntry): CommentPayload {
  const p = entry.payload as Partial<CommentPayload> | null;
  if (
    !p ||
    typeof p.account !== 'string' ||
    typeof p.owner !== 'string' ||
    typeof p.repo !== 'string' ||
    typeof p.number !== 'number' ||
    typeof p.body !== 'string'
  ) {
    throw new PermanentError(`outbox entry ${entry.id} is not a valid comment (needs account, owner, repo, number, body)`);
  }
  return p as CommentPayload;
}
