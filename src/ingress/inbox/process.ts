import { RetryLaterError } from '../../background/index.js';
import type { ChatCommand, Pipeline, RouteResult, ForgeEvent } from '../../pipeline/index.js';
import { commandOf, LABEL_COMPARING_KINDS, route as routeEvent } from '../../pipeline/index.js';
import { readCommandContext, refuseCommand, runCommand, waitingRunOf, type CommandDeps } from './commands.js';
import type { EnqueueResult, Run, TaskRequest } from '../../runs/index.js';
import type { Store, TransactionScope } from '../../store/index.js';
import {
  allowsStage,
  classify,
  readDeliveryHeaders,
  readRepository,
  toForgeEvent,
  WEBHOOK_ROUTES,
  type WebhookRoute,
} from '../gitea/index.js';
import { classifyGitHub, gitHubForgeEvent, GITHUB_WEBHOOK_PATH } from '../github/index.js';
import { classifyGitLab, gitLabForgeEvent, GITLAB_WEBHOOK_PATH } from '../gitlab/index.js';
import { canWrite, type PermissionLookup } from '../permissions.js';
import { pullRequestHeads } from '../heads.js';
import { createIngressState, type IssueRef } from '../state.js';
import { DeliveryLeaseLostError } from './errors.js';
import { readPermissionFailure } from './permission-answer.js';
import type { InboxStore } from './store.js';
import { DELIVERY_OUTCOME, type ClaimedDelivery, type DeliveryVerdict } from './types.js';

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

type Normalized = { event: ForgeEvent; labelsKnown: boolean } | { unsupported: string } | { invalid: string };

/** The delivery as a ForgeEvent, read as the forge that sent it sends it. */
function normalize(
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
    readRepository(payload);
    const synced = /^sync:(github|gitlab)$/.exec(endpoint)?.[1] as 'github' | 'gitlab' | undefined;
    return toForgeEvent(classified, payload, synced ?? headers.forge);
  } catch (err) {
    return { invalid: messageOf(err) };
  }
}

/** What a run request came to, in the verdict. */
export interface RunAnswer {
  stage: string;
  runId: number;
  outcome: EnqueueResult['outcome'];
  reason: string;
}

export interface DeliveryProcessorDeps {
  inbox: InboxStore;
  store: Pick<Store, 'transaction' | 'db'>;
  /** `enqueueIn` enqueues inside the transaction that records the verdict. */
  engine: { enqueueIn(scope: TransactionScope, request: TaskRequest): Promise<EnqueueResult> };
  pipeline: Pipeline;
  /** Present when `webhooks.requireWritePermission` is on (already cached by the caller). */
  permissionOf?: PermissionLookup;
  /** Earlier copies received longer ago than this do not count as duplicates. */
  retentionMs: number;
  /**
   * ChatOps: comments that start with the mention are commands (commands.ts). Without it they are
   * plain comments. `permissionOf` here is always asked (cached by the caller), whatever
   * `webhooks.requireWritePermission` says: only people with write access give commands.
   */
  commands?: CommandDeps & { permissionOf: PermissionLookup };
  /** Told after every permission lookup: the configuration problem it revealed, or null when it worked. */
  onPermissionProblem?: (problem: string | null) => void;
  now?: () => number;
}

export interface ProcessOptions {
  /** Process even when an earlier copy already had the effect (the inspector's replay). @default false */
  force?: boolean;
}

export type DeliveryProcessor = (claimed: ClaimedDelivery, options?: ProcessOptions) => Promise<DeliveryVerdict & { runs: RunAnswer[] }>;

/**
 * Turns one stored delivery into its effect and verdict: parse → normalise → endpoint filter →
 * dedup against earlier copies → label diff → route → permission → enqueue + verdict in one
 * transaction. Throws `RetryLaterError` for what may pass (forge API down, database trouble):
 * the worker puts the delivery off; everything permanent ends as a verdict.
 *
 * Dedup is per stage, not per delivery: a copy of the body (a manual redelivery under a new id,
 * or the same body sent to another path by a second webhook) routes against the label memory its
 * first copy saw and starts only the stages no copy has acted on yet. A redelivery therefore has
 * no second effect, while two legacy paths that each start their own stages still both work.
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDeps): DeliveryProcessor {
  const now = deps.now ?? Date.now;
  const routes = new Map(WEBHOOK_ROUTES.map((r) => [r.path, r]));
  const everything = routes.get('/webhook/gitea')!;

  return async function processDelivery(claimed, options = {}) {
    const { delivery } = claimed;
    const finish = (verdict: DeliveryVerdict & { runs?: RunAnswer[] }, write?: (scope: TransactionScope) => Promise<RunAnswer[]>) =>
      record(claimed, verdict, write);

    const headers = readDeliveryHeaders((name) => delivery.headers[name.toLowerCase()]);
    let payload: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(delivery.body);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('payload must be a JSON object');
      payload = value as Record<string, unknown>;
    } catch (err) {
      return finish({ outcome: DELIVERY_OUTCOME.invalid, verdict: `invalid payload: ${messageOf(err)}` });
    }
    const normalized = normalize(delivery.endpoint, headers, delivery.headers, payload);
    if ('unsupported' in normalized) {
      return finish({ outcome: DELIVERY_OUTCOME.ignored, verdict: `ignored: unsupported event "${normalized.unsupported.slice(0, 80)}"` });
    }
    if ('invalid' in normalized) return finish({ outcome: DELIVERY_OUTCOME.invalid, verdict: `invalid payload: ${normalized.invalid}` });
    const { event, labelsKnown } = normalized;
    const memoryScope = labelMemoryScope(event.forge, event.isPull);
    const webhookRoute: WebhookRoute = routes.get(delivery.endpoint) ?? everything;
    if (webhookRoute.kinds && !webhookRoute.kinds.includes(event.kind)) {
      return finish({
        outcome: DELIVERY_OUTCOME.ignored,
        verdict: `ignored: ${event.kind} events are not handled by ${webhookRoute.path}`,
      });
    }

    // Earlier copies of this body (or delivery id): what they acted on, and the labels they saw.
    const copies = options.force ? [] : await deps.inbox.earlierCopies(delivery, delivery.receivedAt - deps.retentionMs);
    const pendingCopy = copies.find((c) => c.status !== 'processed');
    if (pendingCopy) {
      // Only a copy with the same delivery id can be of another subject (and so not yet done):
      // it will have the effect.
      return finish({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${pendingCopy.id}` });
    }
    const actedOn = new Set(copies.flatMap((c) => c.stages));

    // ChatOps replies through Gitea's accounts and reads runs by repository name: on GitHub and
    // GitLab a comment is a comment, never a command, until commands know the forge.
    const commandForge = event.forge !== 'github' && event.forge !== 'gitlab';
    const command = deps.commands && commandForge && event.number !== undefined ? commandOf(event, deps.pipeline) : null;
    if (command && deps.commands) {
      return processCommand(deps.commands, claimed, { ...event, number: event.number! }, command, copies.length > 0);
    }
    // A plain new comment on an issue whose run asked a question is the reply that resumes it.
    const waiting =
      deps.commands && event.number !== undefined && isNewComment(event) && copies.length === 0
        ? await waitingRunOf(deps.commands, { ...event, number: event.number }).catch((err: unknown) => {
            throw new RetryLaterError(`could not read the issue's runs: ${messageOf(err)}`, { cause: err });
          })
        : undefined;
    if (waiting && deps.commands && !isFromBot(event)) {
      return processReply(deps.commands, claimed, event, waiting);
    }

    const issue: IssueRef | undefined =
      event.number !== undefined && LABEL_COMPARING_KINDS.includes(event.kind)
        ? { owner: event.owner, repo: event.repo, number: event.number }
        : undefined;
    const state = createIngressState(deps.store, now);
    const snapshot = copies.find((c) => c.labelsBefore !== null)?.labelsBefore ?? (options.force ? delivery.labelsBefore : null);
    const previous = issue ? (snapshot ?? (await state.labelsSeen(memoryScope, issue))) : null;
    const labelsBefore = issue ? [...(previous ?? [])] : null;
    // Only the first copy moves the label memory, and only forward: a copy carries old labels.
    const rememberLabelMemory =
      copies.length === 0 && issue && labelsKnown && !sameLabels(previous, event.labels)
        ? (scope: TransactionScope) => createIngressState({ db: scope.trx }, now).rememberLabels(memoryScope, issue, event.labels)
        : undefined;

    // One review per pull request head, however baton learnt of it (this webhook, or catch-up from
    // the forge API, which delivers the same fact with source `sync`): a head already acted on
    // starts nothing again, and an opening already acted on still counts its new labels. The head
    // is remembered with the label memory, in the verdict's transaction. (Added by catch-up.)
    const head =
      event.headSha !== undefined && event.number !== undefined && (event.kind === 'pr_opened' || event.kind === 'pr_synchronized')
        ? { sha: event.headSha, number: event.number }
        : undefined;
    const headSeen =
      head !== undefined &&
      !options.force &&
      (await pullRequestHeads.seen(deps.store.db, event.owner, event.repo, head.number, event.forge)) === head.sha;
    const rememberHead =
      head && !headSeen && copies.length === 0
        ? (scope: TransactionScope) =>
            pullRequestHeads.remember(scope.trx, event.owner, event.repo, head.number, head.sha, now(), event.forge)
        : undefined;
    const rememberLabels =
      rememberLabelMemory || rememberHead
        ? async (scope: TransactionScope) => {
            await rememberLabelMemory?.(scope);
            await rememberHead?.(scope);
          }
        : undefined;

    let result: RouteResult =
      headSeen && event.kind === 'pr_synchronized'
        ? { ignored: `head ${head!.sha.slice(0, 12)} already acted on` }
        : routeEvent(headSeen ? { ...event, kind: 'pr_labels' } : event, deps.pipeline, { previousLabels: previous });
    if (Array.isArray(result)) {
      const kept = result.filter((r) => allowsStage(webhookRoute, r.stage));
      result = kept.length > 0 ? kept : { ignored: 'no trigger matches' };
    }
    if (Array.isArray(result) && actedOn.size > 0) {
      const fresh = result.filter((r) => !actedOn.has(r.stage));
      if (fresh.length === 0) {
        return finish({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${copies[0]!.id}`, labelsBefore });
      }
      result = fresh;
    } else if (!Array.isArray(result) && copies.length > 0) {
      return finish({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${copies[0]!.id}`, labelsBefore });
    }
    if (!Array.isArray(result)) {
      return finish({ outcome: DELIVERY_OUTCOME.ignored, verdict: `ignored: ${result.ignored}`, labelsBefore }, async (scope) => {
        await rememberLabels?.(scope);
        return [];
      });
    }

    if (deps.permissionOf) {
      let permitted: boolean;
      try {
        permitted = canWrite(await deps.permissionOf(event.owner, event.repo, event.sender, event.forge));
        deps.onPermissionProblem?.(null);
      } catch (err) {
        const failure = readPermissionFailure(err);
        if (failure.kind === 'transient') {
          throw new RetryLaterError(`permission lookup failed: ${failure.message}`, { delayMs: failure.retryAfterMs, cause: err });
        }
        if (failure.kind === 'misconfigured') {
          const problem =
            `the forge refused baton's permission lookup on ${event.owner}/${event.repo} (${failure.message}): ` +
            'the dev bot token must belong to a site admin or a repository admin to read other users’ permission ' +
            '(or turn webhooks.requireWritePermission off); replay the delivery once fixed';
          deps.onPermissionProblem?.(problem);
          // The label memory stays where it was, so a replay after the fix sees the same labels as new.
          return finish({ outcome: DELIVERY_OUTCOME.misconfigured, verdict: `misconfigured: ${problem}`, labelsBefore });
        }
        // 404: Gitea does not know the sender (a deleted account, gitea-actions).
        return finish(
          {
            outcome: DELIVERY_OUTCOME.notPermitted,
            verdict: `not permitted: sender ${event.sender} is unknown to the forge`,
            labelsBefore,
          },
          async (scope) => {
            await rememberLabels?.(scope);
            return [];
          },
        );
      }
      if (!permitted) {
        return finish(
          { outcome: DELIVERY_OUTCOME.notPermitted, verdict: `not permitted: sender ${event.sender} lacks write permission`, labelsBefore },
          async (scope) => {
            await rememberLabels?.(scope);
            return [];
          },
        );
      }
    }

    const requests = result;
    return finish({ outcome: DELIVERY_OUTCOME.started, verdict: '', labelsBefore, stages: requests.map((r) => r.stage) }, async (scope) => {
      const answers: RunAnswer[] = [];
      for (const request of requests) answers.push(await enqueue(scope, request, event, headers.delivery));
      await rememberLabels?.(scope);
      return answers;
    });
  };

  /**
   * A command: from a bot or an ignored user it is nothing (a bot's reply quoting the help must
   * not loop); from someone without write access it gets a reply saying so; otherwise it is
   * carried out with its reaction and reply, in the verdict's transaction.
   */
  async function processCommand(
    commands: NonNullable<DeliveryProcessorDeps['commands']>,
    claimed: ClaimedDelivery,
    event: ForgeEvent & { number: number },
    command: ChatCommand,
    copied: boolean,
  ) {
    const finish = (verdict: DeliveryVerdict, write?: (scope: TransactionScope) => Promise<RunAnswer[]>) => record(claimed, verdict, write);
    const sender = event.sender.toLowerCase();
    if (deps.pipeline.botUsers.includes(sender) || deps.pipeline.ignoreUsers.includes(sender)) {
      return finish({
        outcome: DELIVERY_OUTCOME.ignored,
        verdict: `ignored: command from ${deps.pipeline.botUsers.includes(sender) ? 'a bot' : 'an ignored user'}`,
      });
    }
    if (copied) return finish({ outcome: DELIVERY_OUTCOME.duplicate, verdict: 'duplicate: an earlier copy of this command was taken' });
    let permitted = false;
    try {
      permitted = canWrite(await commands.permissionOf(event.owner, event.repo, event.sender));
      deps.onPermissionProblem?.(null);
    } catch (err) {
      const failure = readPermissionFailure(err);
      if (failure.kind === 'transient') {
        throw new RetryLaterError(`permission lookup failed: ${failure.message}`, { delayMs: failure.retryAfterMs, cause: err });
      }
      if (failure.kind === 'misconfigured') {
        return finish({
          outcome: DELIVERY_OUTCOME.misconfigured,
          verdict: `misconfigured: the forge refused the permission lookup of a command (${failure.message})`,
        });
      }
    }
    if (!permitted) {
      return finish(
        { outcome: DELIVERY_OUTCOME.notPermitted, verdict: `not permitted: ${event.sender} lacks write permission for a command` },
        async (scope) => {
          await refuseCommand(commands, scope, event);
          return [];
        },
      );
    }
    const context = await readCommandContext(commands, event, command).catch((err: unknown) => {
      throw new RetryLaterError(`could not read the issue's runs: ${messageOf(err)}`, { cause: err });
    });
    const verdict: DeliveryVerdict = { outcome: DELIVERY_OUTCOME.command, verdict: `command ${command.name}` };
    return finish(verdict, async (scope) => {
      const result = await runCommand(commands, scope, event, command, context, deps.pipeline, `delivery-${claimed.delivery.id}`);
      if (!result) {
        // Taken already: catch-up delivered the comment again after its webhook (or the reverse).
        Object.assign(verdict, { outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate: command ${command.name} already taken` });
        return [];
      }
      const said = `command ${command.name}: ${result.reply.split('\n')[0]!.slice(0, 200)}`;
      verdict.verdict = said;
      return result.runIds.map((runId, i) => ({ stage: result.stages[i]!, runId, outcome: 'queued' as const, reason: said }));
    });
  }

  function isFromBot(event: ForgeEvent): boolean {
    const sender = event.sender.toLowerCase();
    return deps.pipeline.botUsers.includes(sender) || deps.pipeline.ignoreUsers.includes(sender);
  }

  /**
   * A reply to a waiting run's question, from someone with write access, resumes its session;
   * anyone else's comment does not (and starts nothing either: the issue waits for its answer).
   */
  async function processReply(
    commands: NonNullable<DeliveryProcessorDeps['commands']>,
    claimed: ClaimedDelivery,
    event: ForgeEvent,
    run: Run,
  ) {
    const finish = (verdict: DeliveryVerdict, write?: (scope: TransactionScope) => Promise<RunAnswer[]>) => record(claimed, verdict, write);
    let permitted = false;
    try {
      permitted = canWrite(await commands.permissionOf(event.owner, event.repo, event.sender));
    } catch (err) {
      const failure = readPermissionFailure(err);
      if (failure.kind === 'transient') {
        throw new RetryLaterError(`permission lookup failed: ${failure.message}`, { delayMs: failure.retryAfterMs, cause: err });
      }
    }
    if (!permitted) {
      return finish({
        outcome: DELIVERY_OUTCOME.notPermitted,
        verdict: `not permitted: ${event.sender} may not answer run ${run.id}'s question`,
      });
    }
    return finish({ outcome: DELIVERY_OUTCOME.started, verdict: `reply resumes run ${run.id}` }, async (scope) => {
      const resumed = await commands.engine.resumeIn(scope, run.id, { text: event.comment?.body ?? '', by: event.sender });
      return [
        {
          stage: resumed.stage,
          runId: resumed.id,
          outcome: 'queued' as const,
          reason: `reply by ${event.sender} resumes run ${resumed.id}`,
        },
      ];
    });
  }

  async function enqueue(scope: TransactionScope, request: TaskRequest, event: ForgeEvent, deliveryId?: string): Promise<RunAnswer> {
    const payload = { ...request.payload, forge: event.forge, ...(deliveryId !== undefined ? { delivery: deliveryId } : {}) };
    const result = await deps.engine.enqueueIn(scope, { ...request, payload });
    const id = result.run.id;
    const reasons: Record<EnqueueResult['outcome'], string> = {
      queued: String(request.payload?.trigger ?? 'queued'),
      coalesced: `coalesced into run ${id}`,
      followup: `follow-up recorded on run ${id}`,
      dropped: `dropped: run ${id} is already in progress`,
    };
    return { stage: request.stage, runId: id, outcome: result.outcome, reason: reasons[result.outcome] };
  }

  /** Writes (runs, label memory) and the verdict in one transaction; a lost lease rolls it all back. */
  async function record(
    claimed: ClaimedDelivery,
    verdict: DeliveryVerdict & { runs?: RunAnswer[] },
    write?: (scope: TransactionScope) => Promise<RunAnswer[]>,
  ): Promise<DeliveryVerdict & { runs: RunAnswer[] }> {
    try {
      return await deps.store.transaction(async (_trx, scope) => {
        const runs = write ? await write(scope) : [];
        const final: DeliveryVerdict & { runs: RunAnswer[] } = {
          ...verdict,
          runs,
          ...(runs.length > 0 ? { verdict: summarise(runs), runIds: runs.map((r) => r.runId) } : {}),
        };
        if (!(await deps.inbox.markProcessed(scope, claimed, final))) throw new DeliveryLeaseLostError(claimed.delivery.id);
        return final;
      });
    } catch (err) {
      if (err instanceof DeliveryLeaseLostError) throw err;
      throw new RetryLaterError(`could not record the verdict: ${messageOf(err)}`, { cause: err });
    }
  }
}

function summarise(answers: readonly RunAnswer[]): string {
  return answers.map((a) => (answers.length > 1 ? `${a.stage}: ${a.reason}` : a.reason)).join('; ');
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}

/** Never seen and seen without labels mean the same to the rules: every label that appears is new. */
function sameLabels(previous: readonly string[] | null, current: readonly string[]): boolean {
  if (previous === null) return current.length === 0;
  if (previous.length !== current.length) return false;
  const set = new Set(previous.map((l) => l.toLowerCase()));
  return current.every((l) => set.has(l.toLowerCase()));
}

function isNewComment(event: ForgeEvent): boolean {
  return (event.kind === 'issue_comment' || event.kind === 'pr_comment') && event.action === 'created' && event.comment !== undefined;
}
