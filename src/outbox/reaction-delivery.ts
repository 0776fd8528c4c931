import type { ForgeAccounts } from '../forge/index.js';
import { PermanentError } from '../background/index.js';
import { outboxFailure } from './forge-failure.js';
import type { OutboxEntry, OutboxHandler } from './types.js';

/** Payload of a `reaction` entry: which bot reacts how to which comment. */
export interface ReactionPayload {
  account: string;
  owner: string;
  repo: string;
  commentId: number;
  /** `eyes`, `+1`, `rocket`, … (the forge's allowed reactions). */
  content: string;
  /**
   * The issue or pull request the comment is on (entries queued before it lack it): GitLab reaches
   * a note's award emoji only through its issue or merge request (`kind: 'pull'`).
   */
  number?: number;
  kind?: 'pull';
}

/**
 * Adds `reaction` entries through the bot account each names. A reaction given twice is one
 * reaction (the forge answers with the existing one), so a retry after a lost answer is harmless.
 */
export function createReactionHandler(options: { accounts: ForgeAccounts }): OutboxHandler {
  return async (entry: OutboxEntry): Promise<void> => {
    const p = entry.payload as Partial<ReactionPayload> | null;
    if (
      !p ||
      typeof p.account !== 'string' ||
      typeof p.owner !== 'string' ||
      typeof p.repo !== 'string' ||
      typeof p.commentId !== 'number' ||
      typeof p.content !== 'string'
    ) {
      throw new PermanentError(`outbox entry ${entry.id} is not a valid reaction (needs account, owner, repo, commentId, content)`);
    }
    const client = options.accounts[p.account];
    if (!client) throw new PermanentError(`no forge account "${p.account}" is configured`);
    try {
      const on = typeof p.number === 'number' ? { number: p.number, ...(p.kind === 'pull' ? { kind: p.kind } : {}) } : undefined;
      await client.addCommentReaction(p.owner, p.repo, p.commentId, p.content, on);
    } catch (err) {
      throw outboxFailure(err);
    }
  };
}
