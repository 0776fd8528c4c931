import { RetryLaterError } from '../../background/index.js';
import type { Pipeline, RouteResult, ForgeEvent } from '../../pipeline/index.js';
import { commandOf, LABEL_COMPARING_KINDS, route as routeEvent } from '../../pipeline/index.js';
import type { EnqueueResult, TaskRequest } from '../../runs/index.js';
import type { Store, TransactionScope } from '../../store/index.js';
import { allowsStage, readDeliveryHeaders, WEBHOOK_ROUTES, type WebhookRoute } from '../gitea/index.js';
import { canWrite, type PermissionLookup } from '../permissions.js';
import { pullRequestHeads } from '../heads.js';
import { factOf, forgeFacts } from '../facts.js';
import { createIngressState, type IssueRef } from '../state.js';
import { isFromBot, processCommand, processReply, type Finish } from './chat-delivery.js';
import { waitingRunOf, type CommandDeps } from './commands.js';
import { DeliveryLeaseLostError } from './errors.js';
import { labelMemoryScope, messageOf, normalize } from './normalize.js';
import { PERMISSION_HELP, readPermissionFailure } from './permission-answer.js';
import type { EarlierCopy, InboxStore } from './store.js';
import { DELIVERY_OUTCOME, type ClaimedDelivery, type DeliveryVerdict } from './types.js';

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
  /**
   * Why a forge's deliveries must wait (a GitHub App's bot login is not known yet, so its own
   * events could not be told from a person's), or null when they may be processed.
   */
  waitFor?: (forge: ForgeEvent['forge']) => string | null;
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
    const read = readEvent(delivery);
    if (isSettled(read)) return record(claimed, read.settled);
    const { event, labelsKnown, headers, webhookRoute } = read;
    const wait = deps.waitFor?.(event.forge);
    if (wait) throw new RetryLaterError(wait);

    // Earlier copies of this body (or delivery id): what they acted on, and the labels they saw.
    const copies = options.force ? [] : await deps.inbox.earlierCopies(delivery, delivery.receivedAt - deps.retentionMs);
    const pendingCopy = copies.find((c) => c.status !== 'processed');
    if (pendingCopy) {
      // Only a copy with the same delivery id can be of another subject (and so not yet done):
      // it will have the effect.
      return record(claimed, { outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${pendingCopy.id}` });
    }
    const known = await factOfDelivery(event, copies, options);
    if (isSettled(known)) return record(claimed, known.settled);
    const finish: Finish = (verdict, write) => record(claimed, verdict, write, known.fact);

    const chat = await processChat(claimed, event, copies, finish);
    if (chat) return chat;

    const memory = await readMemory(delivery, event, labelsKnown, copies, options);
    const routed = routeDelivery(event, webhookRoute, memory, copies);
    if (isSettled(routed)) return finish(routed.settled, routed.write);
    const refused = await checkPermission(event, memory);
    if (refused) return finish(refused.settled, refused.write);

    const requests = routed;
    const { labelsBefore, rememberLabels } = memory;
    return finish({ outcome: DELIVERY_OUTCOME.started, verdict: '', labelsBefore, stages: requests.map((r) => r.stage) }, async (scope) => {
      const answers: RunAnswer[] = [];
      for (const request of requests) answers.push(await enqueue(scope, request, event, headers.delivery));
      await rememberLabels?.(scope);
      return answers;
    });
  };

  /** The delivery as a ForgeEvent of an event its endpoint handles, or the verdict why not. */
  function readEvent(
    delivery: ClaimedDelivery['delivery'],
  ): Settled | { event: ForgeEvent; labelsKnown: boolean; headers: ReturnType<typeof readDeliveryHeaders>; webhookRoute: WebhookRoute } {
    const headers = readDeliveryHeaders((name) => delivery.headers[name.toLowerCase()]);
    let payload: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(delivery.body);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('payload must be a JSON object');
      payload = value as Record<string, unknown>;
    } catch (err) {
      return settled({ outcome: DELIVERY_OUTCOME.invalid, verdict: `invalid payload: ${messageOf(err)}` });
    }
    const normalized = normalize(delivery.endpoint, headers, delivery.headers, payload);
    if ('unsupported' in normalized) {
      return settled({ outcome: DELIVERY_OUTCOME.ignored, verdict: `ignored: unsupported event "${normalized.unsupported.slice(0, 80)}"` });
    }
    if ('invalid' in normalized) return settled({ outcome: DELIVERY_OUTCOME.invalid, verdict: `invalid payload: ${normalized.invalid}` });
    const { event, labelsKnown } = normalized;
    const webhookRoute: WebhookRoute = routes.get(delivery.endpoint) ?? everything;
    if (webhookRoute.kinds && !webhookRoute.kinds.includes(event.kind)) {
      return settled({
        outcome: DELIVERY_OUTCOME.ignored,
        verdict: `ignored: ${event.kind} events are not handled by ${webhookRoute.path}`,
      });
    }
    return { event, labelsKnown, headers, webhookRoute };
  }

  /**
   * One effect per forge fact, however baton learnt of it: its webhook, or catch-up reading the
   * forge API after that webhook was lost (source `sync`), whichever came second finds it acted
   * on. Only the first copy of a body counts (later copies are the copies logic's above).
   */
  async function factOfDelivery(
    event: ForgeEvent,
    copies: readonly EarlierCopy[],
    options: ProcessOptions,
  ): Promise<Settled | { fact?: FactToRecord }> {
    const key = copies.length === 0 ? factOf(event) : undefined;
    if (key === undefined) return {};
    if (!options.force && (await forgeFacts.seen(deps.store.db, event.owner, event.repo, [key], event.forge)).has(key)) {
      return settled({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate: ${describeFact(key)} already acted on` });
    }
    return { fact: { owner: event.owner, repo: event.repo, forge: event.forge, key, force: options.force === true } };
  }

  /** A ChatOps command, or the reply to a run's question: its verdict; null when the delivery is neither. */
  async function processChat(claimed: ClaimedDelivery, event: ForgeEvent, copies: readonly EarlierCopy[], finish: Finish) {
    // On every forge: the command's permission lookup, reaction and reply go through that forge's
    // accounts, and it reads only that forge's runs of the issue (commands.ts).
    const command = deps.commands && event.number !== undefined ? commandOf(event, deps.pipeline) : null;
    if (command && deps.commands) {
      return processCommand(
        deps,
        deps.commands,
        finish,
        claimed.delivery.id,
        { ...event, number: event.number! },
        command,
        copies.length > 0,
      );
    }
    // A plain new comment on an issue whose run asked a question is the reply that resumes it.
    const waiting =
      deps.commands && event.number !== undefined && isNewComment(event) && copies.length === 0
        ? await waitingRunOf(deps.commands, { ...event, number: event.number }).catch((err: unknown) => {
            throw new RetryLaterError(`could not read the issue's runs: ${messageOf(err)}`, { cause: err });
          })
        : undefined;
    if (waiting && deps.commands && !isFromBot(deps.pipeline, event)) return processReply(deps.commands, finish, event, waiting);
    return null;
  }

  /**
   * What the delivery's rules compare against: the labels the issue had before (a copy's
   * snapshot, else the label memory) and whether the pull request's head was acted on; and the
   * writes that move both memories forward, with the verdict.
   */
  async function readMemory(
    delivery: ClaimedDelivery['delivery'],
    event: ForgeEvent,
    labelsKnown: boolean,
    copies: readonly EarlierCopy[],
    options: ProcessOptions,
  ): Promise<DeliveryMemory> {
    const memoryScope = labelMemoryScope(event.forge, event.isPull);
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
    return { previous, labelsBefore, head, headSeen, rememberLabels };
  }

  /** The stages the delivery starts (its endpoint's, not yet acted on by a copy), or the verdict why none. */
  function routeDelivery(
    event: ForgeEvent,
    webhookRoute: WebhookRoute,
    memory: DeliveryMemory,
    copies: readonly EarlierCopy[],
  ): Settled | TaskRequest[] {
    const { headSeen, head, labelsBefore, rememberLabels } = memory;
    const actedOn = new Set(copies.flatMap((c) => c.stages));
    let result: RouteResult =
      headSeen && event.kind === 'pr_synchronized'
        ? { ignored: `head ${head!.sha.slice(0, 12)} already acted on` }
        : routeEvent(headSeen ? { ...event, kind: 'pr_labels' } : event, deps.pipeline, { previousLabels: memory.previous });
    if (Array.isArray(result)) {
      const kept = result.filter((r) => allowsStage(webhookRoute, r.stage));
      result = kept.length > 0 ? kept : { ignored: 'no trigger matches' };
    }
    if (Array.isArray(result) && actedOn.size > 0) {
      const fresh = result.filter((r) => !actedOn.has(r.stage));
      if (fresh.length === 0) {
        return settled({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${copies[0]!.id}`, labelsBefore });
      }
      result = fresh;
    } else if (!Array.isArray(result) && copies.length > 0) {
      return settled({ outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate of delivery ${copies[0]!.id}`, labelsBefore });
    }
    if (!Array.isArray(result)) {
      return settled(
        { outcome: DELIVERY_OUTCOME.ignored, verdict: `ignored: ${result.ignored}`, labelsBefore },
        rememberingOnly(rememberLabels),
      );
    }
    return result;
  }

  /** With `webhooks.requireWritePermission`: the verdict when the sender may not start runs, else null. */
  async function checkPermission(event: ForgeEvent, memory: DeliveryMemory): Promise<Settled | null> {
    if (!deps.permissionOf) return null;
    const { labelsBefore, rememberLabels } = memory;
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
          `(or turn webhooks.requireWritePermission off); replay the delivery once fixed; ${PERMISSION_HELP}`;
        deps.onPermissionProblem?.(problem);
        // The label memory stays where it was, so a replay after the fix sees the same labels as new.
        return settled({ outcome: DELIVERY_OUTCOME.misconfigured, verdict: `misconfigured: ${problem}`, labelsBefore });
      }
      // 404: Gitea does not know the sender (a deleted account, gitea-actions).
      return settled(
        {
          outcome: DELIVERY_OUTCOME.notPermitted,
          verdict: `not permitted: sender ${event.sender} is unknown to the forge; ${PERMISSION_HELP}`,
          labelsBefore,
        },
        rememberingOnly(rememberLabels),
      );
    }
    if (permitted) return null;
    return settled(
      {
        outcome: DELIVERY_OUTCOME.notPermitted,
        verdict: `not permitted: sender ${event.sender} lacks write permission; ${PERMISSION_HELP}`,
        labelsBefore,
      },
      rememberingOnly(rememberLabels),
    );
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

  /**
   * Writes (runs, label memory), the fact and the verdict in one transaction; a lost lease rolls it
   * all back. The fact is written first: a second delivery of it processed at the same moment (a
   * webhook and catch-up's copy on two replicas) waits on its row and, finding it, writes nothing
   * but its verdict, `duplicate`. A misconfigured verdict records no fact: it is owed a replay.
   */
  async function record(
    claimed: ClaimedDelivery,
    verdict: DeliveryVerdict & { runs?: RunAnswer[] },
    write?: (scope: TransactionScope) => Promise<RunAnswer[]>,
    fact?: FactToRecord,
  ): Promise<DeliveryVerdict & { runs: RunAnswer[] }> {
    try {
      return await deps.store.transaction(async (_trx, scope) => {
        if (fact && verdict.outcome !== DELIVERY_OUTCOME.misconfigured) {
          const first = await forgeFacts.record(scope.trx, fact.owner, fact.repo, fact.key, claimed.delivery.id, now(), fact.forge);
          if (!first && !fact.force) {
            verdict = { outcome: DELIVERY_OUTCOME.duplicate, verdict: `duplicate: ${describeFact(fact.key)} already acted on` };
            write = undefined;
          }
        }
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

type Write = (scope: TransactionScope) => Promise<RunAnswer[]>;

/** A verdict reached before the end: recorded as it is, with what it writes. */
interface Settled {
  settled: DeliveryVerdict;
  write?: Write;
}

const settled = (verdict: DeliveryVerdict, write?: Write): Settled => ({ settled: verdict, ...(write ? { write } : {}) });

function isSettled(value: object): value is Settled {
  return 'settled' in value;
}

/** A verdict that starts nothing but still moves the memories forward. */
const rememberingOnly =
  (rememberLabels: ((scope: TransactionScope) => Promise<void>) | undefined): Write =>
  async (scope) => {
    await rememberLabels?.(scope);
    return [];
  };

/** What readMemory found: the labels before, the pull request's head, and the write that moves both forward. */
interface DeliveryMemory {
  previous: readonly string[] | null;
  labelsBefore: string[] | null;
  head: { sha: string; number: number } | undefined;
  headSeen: boolean;
  rememberLabels: ((scope: TransactionScope) => Promise<void>) | undefined;
}

/** A fact to record with the verdict; `force`: a replay, which acts whether or not it is recorded. */
interface FactToRecord {
  owner: string;
  repo: string;
  forge: ForgeEvent['forge'];
  key: string;
  force: boolean;
}

/** `comment:12` → "comment 12", for the verdict. */
function describeFact(key: string): string {
  const [kind, id] = key.split(':');
  if (kind === 'opened') return `the opening of #${id}`;
  if (kind === 'review') return `the review of #${id} by ${key.split(':')[2]}`;
  return `${kind} ${id}`;
}

function summarise(answers: readonly RunAnswer[]): string {
  return answers.map((a) => (answers.length > 1 ? `${a.stage}: ${a.reason}` : a.reason)).join('; ');
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
