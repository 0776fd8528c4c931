import { PermanentError } from '../background/index.js';
import { accountKey, type ForgeAccounts } from '../forge/index.js';
import { hookFor, RUN_EVENT, type TransitionHook } from '../runs/index.js';
import { outboxFailure } from './forge-failure.js';
import type { Outbox } from './outbox.js';
import type { OutboxEntry, OutboxHandler } from './types.js';

/**
 * The GitLab review bot as a reviewer of the merge request it reviews. GitLab sets a reviewer
 * state ("Request changes", which starts rework) only for a reviewer of the merge request, and
 * answers 204 while setting nothing for anyone else (update_reviewer_state_service.rb); the
 * review account may not edit merge requests through the forge gateway. So baton, not the agent,
 * adds the review account to the reviewers when a review run of a merge request is queued: an
 * outbox entry in the enqueue's own transaction, delivered before the run's agent gets that far.
 */
export const REVIEWER_KIND = 'reviewer';

export interface ReviewerPayload {
  account: string;
  owner: string;
  repo: string;
  number: number;
}

export function createReviewerHook(options: { accounts: ForgeAccounts; outbox: Pick<Outbox, 'enqueue'> }): TransitionHook {
  return hookFor([RUN_EVENT.queued], async (scope, { run }) => {
    if (run.forge !== 'gitlab' || run.payload.account !== 'review' || run.payload.isPull !== true || run.number === null) return;
    const account = accountKey('gitlab', 'review');
    if (!options.accounts[account]?.addSelfAsReviewer) return;
    const payload: ReviewerPayload = { account, owner: run.owner, repo: run.repo, number: run.number };
    await options.outbox.enqueue(scope, { kind: REVIEWER_KIND, payload, dedupKey: `reviewer:${run.id}`, runId: run.id });
  });
}

export function createReviewerHandler(options: { accounts: ForgeAccounts }): OutboxHandler {
  return async (entry: OutboxEntry): Promise<void> => {
    const p = entry.payload as Partial<ReviewerPayload> | null;
    if (!p || typeof p.account !== 'string' || typeof p.owner !== 'string' || typeof p.repo !== 'string' || typeof p.number !== 'number')
      throw new PermanentError(`outbox entry ${entry.id} is not a valid reviewer entry (needs account, owner, repo, number)`);
    const client = options.accounts[p.account];
    if (!client?.addSelfAsReviewer) throw new PermanentError(`forge account "${p.account}" cannot add itself as a reviewer`);
    try {
      await client.addSelfAsReviewer(p.owner, p.repo, p.number);
    } catch (err) {
      throw outboxFailure(err);
    }
  };
}
