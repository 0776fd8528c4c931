import { accountKey, type ForgeAccounts, type ForgeClient } from '../forge/index.js';
import { successOf, type Pipeline } from '../pipeline/index.js';
import { branchNamesIssue, OUTCOME_MISSING, type Run, type RunOutcome } from '../runs/index.js';

/**
 * How much earlier than the run's start (baton's clock) a forge timestamp may be and still count
 * as the run's: the forge's clock may lag baton's.
 */
const CLOCK_SLACK_MS = 2 * 60_000;

export type OutcomeCheck = (run: Run, outcome: RunOutcome) => Promise<RunOutcome>;

/**
 * Success is an outcome, not a claim: when the agent of a stage whose success means `pushed` or
 * `review` reports success, the forge is asked whether it happened; a claim without its outcome
 * becomes a failure whose reason says what is missing (`OUTCOME_MISSING`, shown on the issue).
 *
 * - `pushed`, a run on a pull request (rework-pr): its head moved from the commit the run was
 *   asked for at (or, without that, the pull request was updated since the run started);
 * - `pushed`, a run on an issue (develop, fix-bug): a pull request whose head branch names the
 *   issue (`feature/issue-N-…`, `fix/issue-N`) was opened or updated since the run started;
 * - `review`: the stage's bot submitted a review on the pull request since the run started; on
 *   GitLab (whose approvals carry no time) it approves the merge request, or wrote a note on it
 *   since the run started (not one of baton's own status comments).
 *
 * The forge asked is the run's own (`run.forge`), with the run's account there (`accountKey`):
 * a GitHub run is never checked against Gitea's bots. On Gitea the bot's login is the configured
 * username; elsewhere it is asked once from the forge (`GET /user`).
 *
 * When the forge cannot be asked (down, no account), the agent's claim stands: an outage of the
 * forge must not fail work that may well be done; the server's log says so.
 */
export function createOutcomeCheck(deps: {
  pipeline: Pipeline;
  accounts: ForgeAccounts;
  logger: { warn(details: object, message: string): void };
}): OutcomeCheck {
  // The login of each account's token, asked once (GitHub and GitLab; the config names Gitea's).
  const logins = new Map<string, Promise<string>>();
  const loginOf = (key: string, client: ForgeClient): Promise<string> => {
    let login = logins.get(key);
    if (!login) {
      login = client.getCurrentUser().then(
        (user) => user.login.toLowerCase(),
        // Unknown (an app token without /user): a review by anyone since the start counts.
        () => '',
      );
      logins.set(key, login);
      void login.then((l) => l === '' && logins.delete(key));
    }
    return login;
  };
  return async (run, outcome) => {
    if (outcome.status !== 'succeeded' || run.number === null || run.payload.declared === true) return outcome;
    const stage = deps.pipeline.stages.find((s) => s.name === run.stage) ?? { name: run.stage };
    const kind = successOf(stage);
    if (kind === 'result') return outcome;
    const forge = run.forge ?? 'gitea';
    const account = typeof run.payload.account === 'string' ? run.payload.account : 'dev';
    const key = deps.accounts[accountKey(forge, account)] ? accountKey(forge, account) : accountKey(forge, 'dev');
    const client = deps.accounts[key];
    if (!client) return outcome;
    const since = (run.startedAt ?? run.claimedAt ?? run.createdAt) - CLOCK_SLACK_MS;
    const after = (iso: string | null) => iso !== null && Date.parse(iso) >= since;
    try {
      const missing = kind === 'review' ? await missingReview() : await missingPush();
      return missing ? { ...outcome, status: 'failed', error: `${OUTCOME_MISSING}${missing}` } : outcome;
    } catch (err) {
      deps.logger.warn(
        { runId: run.id, key: run.key, err: err instanceof Error ? err.message : String(err) },
        'the outcome of a run could not be checked on the forge; the agent’s result stands',
      );
      return outcome;
    }

    async function missingPush(): Promise<string | null> {
      const number = run.number!;
      if (run.payload.isPull === true) {
        const pull = await client!.getPullRequest(run.owner, run.repo, number);
        const before = typeof run.payload.headSha === 'string' ? run.payload.headSha : undefined;
        const moved = before !== undefined ? pull.head.sha !== before : after(pull.updatedAt);
        return moved ? null : `The agent reported success but pushed nothing to \`${pull.head.ref}\`.`;
      }
      const pulls = await client!.listPullRequestsUpdatedSince(run.owner, run.repo, new Date(since).toISOString());
      const ours = pulls.filter((p) => branchNamesIssue(p.head.ref, number) && (after(p.createdAt) || after(p.updatedAt)));
      return ours.length > 0
        ? null
        : `The agent reported success but pushed nothing to a branch of issue #${number} (\`feature/issue-${number}-…\`, \`fix/issue-${number}-…\`) and opened or updated no pull request.`;
    }

    async function missingReview(): Promise<string | null> {
      const number = run.number!;
      const configured = typeof run.payload.accountUser === 'string' ? run.payload.accountUser.toLowerCase() : '';
      const login = forge === 'gitea' ? configured : await loginOf(key, client!);
      const byBot = (user: { login: string } | null | undefined) => login === '' || user?.login.toLowerCase() === login;
      const reviews = await client!.listPullReviews(run.owner, run.repo, number);
      if (forge === 'gitlab') {
        // Approvals have no time on GitLab: the bot's approval stands for itself. Notes have one;
        // without the bot's login only an approval can tell.
        if (reviews.some((r) => byBot(r.user))) return null;
        const notes = login === '' ? [] : await client!.listComments(run.owner, run.repo, number, 'pull');
        const wrote = notes.some((n) => byBot(n.user) && after(n.createdAt) && !STATUS_COMMENT_MARKER.test(n.body));
        return wrote ? null : `The agent reported success but submitted no review on merge request !${number}.`;
      }
      const ours = reviews.some((r) => byBot(r.user) && after(r.submittedAt));
      return ours ? null : `The agent reported success but submitted no review on pull request #${number}.`;
    }
  };
}

/** What marks baton's own status comments (outbox/comment-delivery.ts): never the agent's review. */
const STATUS_COMMENT_MARKER = /<!--\s*baton:outbox:\d+\s*-->/;
