import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { errorMessage } from '../../background/index.js';
import { errorBody, errorHandler, HttpError, limitBody } from '../../http/index.js';
import { LABEL_COMPARING_KINDS, route as routeEvent, type ForgeEvent, type Pipeline, type RouteResult } from '../../pipeline/index.js';
import type { EnqueueResult, RunEngine, TaskRequest } from '../../runs/index.js';
import type { Store } from '../../store/index.js';
import { canWrite, createPermissionCache, type PermissionLookup } from '../permissions.js';
import { verifySignature } from '../signature.js';
import { createIngressState, type IssueRef } from '../state.js';
import { isAllowed, parseWebhooksConfig, type WebhooksConfig } from '../webhooks-config.js';
import { readDeliveryHeaders, type DeliveryHeaders } from './headers.js';
import { classify, readRepository, toForgeEvent } from './normalize.js';
import { allowsStage, WEBHOOK_ROUTES, type WebhookRoute } from './routes.js';

/** pino-compatible; only these three levels are used. Messages never carry secrets or signatures. */
export interface IngressLogger {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface GiteaIngressDeps {
  /** Only `enqueue` is used. */
  engine: Pick<RunEngine, 'enqueue'>;
  /** Holds the delivery and label tables of migration 0010-ingress. */
  store: Pick<Store, 'db'>;
  pipeline: Pipeline;
  /** The parsed `webhooks:` section (parseWebhooksConfig). @default no allowlist, no permission rule, 5 MiB */
  webhooks?: WebhooksConfig;
  /**
   * WEBHOOK_SECRET, or the generated one (config.gitea.webhookSecret). A delivery no secret applies
   * to is refused with 401 unless `webhooks.allowUnsigned` is on.
   */
  secret?: string;
  /** Required when `webhooks.requireWritePermission` is true; the forge client provides it. */
  permissionOf?: PermissionLookup;
  logger?: IngressLogger;
  now?: () => number;
}

export interface RunAnswer {
  stage: string;
  runId: number;
  outcome: EnqueueResult['outcome'];
  reason: string;
}

/** The 2xx body. `reason` says why nothing was queued, or what queued it. */
export interface WebhookAnswer {
  ok: true;
  queued: boolean;
  runId?: number;
  stage?: string;
  reason: string;
  /** Present when the delivery started more than one stage. */
  runs?: RunAnswer[];
}

const JSON_TYPES = /^application\/([a-z0-9.+-]+\+)?json$/;
const FORM_TYPE = 'application/x-www-form-urlencoded';
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;
const silent: IngressLogger = { info: () => {}, warn: () => {}, error: () => {} };
const NO_SECRET =
  "unsigned deliveries are refused: give the Gitea webhook baton's secret (WEBHOOK_SECRET, or the one baton serve generated in its data directory)";

/**
 * The Gitea/Forgejo webhook endpoints (`POST /webhook/gitea` and the legacy per-workflow paths).
 *
 * Order matters and is the point of this module: size limit → signature over the raw bytes →
 * parse → repository-bound signature and allowlist → normalise → dedup by delivery id → route →
 * permission rule → enqueue. Nothing is parsed for an unsigned request when a global secret is set.
 * Refusals are `HttpError`s, answered in the app's one envelope `{ error: { code, message } }`.
 */
export function createGiteaIngress(deps: GiteaIngressDeps): Hono {
  const now = deps.now ?? Date.now;
  const logger = deps.logger ?? silent;
  const webhooks = deps.webhooks ?? parseWebhooksConfig(undefined).webhooks;
  if (webhooks.requireWritePermission && !deps.permissionOf) {
    throw new Error('webhooks.requireWritePermission is true but no permission lookup (forge client) was given to the ingress');
  }
  const permissionOf =
    webhooks.requireWritePermission && deps.permissionOf
      ? createPermissionCache(deps.permissionOf, webhooks.permissionCacheMs, now)
      : undefined;
  const state = createIngressState(deps.store, now);
  const secrets = secretTable(deps.secret, webhooks);

  const app = new Hono();
  // The size limit comes first: a body over it is refused before anything reads it whole.
  const limit = limitBody(webhooks.maxBodyBytes);
  for (const webhookRoute of WEBHOOK_ROUTES) {
    app.post(webhookRoute.path, refusalsLogged(webhookRoute), limit, (c) => handle(c, webhookRoute));
    app.all(webhookRoute.path, (c) => {
      c.header('Allow', 'POST');
      return c.json(errorBody('method_not_allowed', `${c.req.method} is not allowed: webhooks are delivered with POST`), 405);
    });
  }
  // The same handler as the whole app's, so this group answers the same when used on its own.
  app.onError(errorHandler(logger));

  /** Logs every refused delivery (the body limit's included) with what Gitea sent. */
  function refusalsLogged(webhookRoute: WebhookRoute): MiddlewareHandler {
    return async (c, next) => {
      await next();
      // Hono has already answered the error (onError); it is left on the context for middleware.
      if (c.error instanceof HttpError) {
        const headers = readDeliveryHeaders((name) => c.req.header(name));
        const details = { delivery: headers.delivery, event: headers.eventType ?? headers.event, path: webhookRoute.path };
        logger.warn({ ...details, status: c.error.status, outcome: c.error.message }, 'webhook delivery refused');
      }
    };
  }

  async function handle(c: Context, webhookRoute: WebhookRoute): Promise<Response> {
    const headers = readDeliveryHeaders((name) => c.req.header(name));
    const log = { delivery: headers.delivery, event: headers.eventType ?? headers.event, path: webhookRoute.path };
    const answer = await receive(c, webhookRoute, headers);
    logger.info({ ...log, status: answer.status, outcome: answer.body.reason, runIds: runIdsOf(answer.body) }, 'webhook delivery');
    return c.json(answer.body, answer.status);
  }

  async function receive(
    c: Context,
    webhookRoute: WebhookRoute,
    headers: DeliveryHeaders,
  ): Promise<{ status: 200 | 202; body: WebhookAnswer }> {
    const contentType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const isForm = contentType === FORM_TYPE;
    if (!isForm && !JSON_TYPES.test(contentType)) {
      throw new HttpError(
        415,
        'unsupported_media_type',
        contentType
          ? `unsupported Content-Type "${contentType.slice(0, 80)}": send application/json`
          : 'missing Content-Type: send application/json',
      );
    }
    if (headers.event === undefined && headers.eventType === undefined) {
      throw new HttpError(400, 'bad_request', 'missing X-Gitea-Event header (or X-Forgejo-Event)');
    }
    if (headers.delivery !== undefined && !DELIVERY_ID.test(headers.delivery)) {
      throw new HttpError(400, 'bad_request', 'X-Gitea-Delivery must be 1 to 200 printable characters');
    }
    const raw = await readBody(c);
    if (raw.byteLength === 0) throw new HttpError(400, 'bad_request', 'empty body: expected a JSON webhook payload');
    // For the form content type Gitea signs the JSON inside `payload=`, not the body itself.
    const signed = isForm ? formPayload(raw) : raw;

    const matched = matchingSecrets(signed, headers.signature, secrets);
    // Signatures are required: before anything is parsed, a delivery must be signed with one of
    // the secrets, unless the operator accepts unsigned ones (then only a secret that applies to
    // the repository, known after parsing, is required).
    if (secrets.global !== undefined || !webhooks.allowUnsigned) {
      if (secrets.global === undefined && secrets.byRepo.size === 0) throw new HttpError(401, 'unauthorized', NO_SECRET);
      if (headers.signature === undefined) throw new HttpError(401, 'unauthorized', 'missing signature: X-Gitea-Signature is required');
      if (matched.size === 0) throw new HttpError(401, 'unauthorized', 'invalid signature');
    }

    const payload = parseJson(signed);
    const classified = classify(headers, payload);
    let repository: { owner: string; repo: string };
    try {
      repository = readRepository(payload);
    } catch (err) {
      // An event baton does not handle may be repository-less (org or package events); when no
      // per-repository secret could apply, the global check above already vouched for it.
      if ('unsupported' in classified && secrets.byRepo.size === 0)
        return ignored(`unsupported event "${classified.unsupported.slice(0, 80)}"`);
      throw err;
    }
    const { owner, repo } = repository;
    const full = `${owner}/${repo}`.toLowerCase();
    const required = secrets.byRepo.has(full) ? full : secrets.global !== undefined ? '' : undefined;
    if (required === undefined && !webhooks.allowUnsigned) {
      throw new HttpError(401, 'unauthorized', `no webhook secret applies to ${owner}/${repo}: ${NO_SECRET}`);
    }
    if (required !== undefined && !matched.has(required)) {
      throw new HttpError(
        401,
        'unauthorized',
        headers.signature === undefined ? 'missing signature: X-Gitea-Signature is required' : `invalid signature for ${owner}/${repo}`,
      );
    }
    if (!isAllowed(webhooks.allow, owner, repo)) {
      throw new HttpError(403, 'forbidden', `repository ${owner}/${repo} is not in webhooks.allow`);
    }

    if ('unsupported' in classified) return ignored(`unsupported event "${classified.unsupported.slice(0, 80)}"`);
    const { event, labelsKnown } = toForgeEvent(classified, payload, headers.forge);
    if (webhookRoute.kinds && !webhookRoute.kinds.includes(event.kind)) {
      return ignored(`${event.kind} events are not handled by ${webhookRoute.path}`);
    }

    const delivery = headers.delivery;
    if (delivery !== undefined && !(await state.claimDelivery(delivery, { event: classified.event, repository: full }))) {
      return { status: 200, body: { ok: true, queued: false, reason: 'duplicate delivery' } };
    }
    try {
      return { status: 202, body: await act(event, labelsKnown, webhookRoute, delivery) };
    } catch (err) {
      // The delivery had no effect we can vouch for: forget it so Gitea's redelivery is acted on.
      if (delivery !== undefined) await state.releaseDelivery(delivery).catch(() => {});
      logger.error({ delivery, err: errorMessage(err) }, 'webhook could not be acted on');
      // The cause stays in the log: database or forge error text is not for the sender.
      throw new HttpError(503, 'unavailable', 'temporarily unable to act on the delivery; redeliver it later', { cause: err });
    }
  }

  async function act(event: ForgeEvent, labelsKnown: boolean, webhookRoute: WebhookRoute, delivery?: string): Promise<WebhookAnswer> {
    // Only events whose rules compare labels read or write the label memory: it keeps the other
    // deliveries (comments, pushes to a PR, reviews) to the dedup row and the enqueue.
    const issue: IssueRef | undefined =
      event.number !== undefined && LABEL_COMPARING_KINDS.includes(event.kind)
        ? { owner: event.owner, repo: event.repo, number: event.number }
        : undefined;
    const previous = issue ? await state.labelsSeen(webhookRoute.scope, issue) : null;
    let result: RouteResult = routeEvent(event, deps.pipeline, { previousLabels: previous });
    if (Array.isArray(result)) {
      const kept = result.filter((r) => allowsStage(webhookRoute, r.stage));
      result = kept.length > 0 ? kept : { ignored: 'no trigger matches' };
    }
    if (Array.isArray(result) && permissionOf) {
      const permission = await permissionOf(event.owner, event.repo, event.sender);
      if (!canWrite(permission)) result = { ignored: `sender ${event.sender} lacks write permission` };
    }
    const answers: RunAnswer[] = [];
    if (Array.isArray(result)) {
      for (const request of result) answers.push(await enqueue(request, event, delivery));
    }
    // Remembered after the enqueue: if that failed, a redelivery must still see the labels as new.
    if (issue && labelsKnown && !sameLabels(previous, event.labels)) await state.rememberLabels(webhookRoute.scope, issue, event.labels);
    if (!Array.isArray(result)) return { ok: true, queued: false, reason: result.ignored };
    return summarise(answers);
  }

  async function enqueue(request: TaskRequest, event: ForgeEvent, delivery?: string): Promise<RunAnswer> {
    const payload = { ...request.payload, forge: event.forge, ...(delivery !== undefined ? { delivery } : {}) };
    const result = await deps.engine.enqueue({ ...request, payload });
    const id = result.run.id;
    const reasons: Record<EnqueueResult['outcome'], string> = {
      queued: String(request.payload?.trigger ?? 'queued'),
      coalesced: `coalesced into run ${id}`,
      followup: `follow-up recorded on run ${id}`,
      dropped: `dropped: run ${id} is already in progress`,
    };
    return { stage: request.stage, runId: id, outcome: result.outcome, reason: reasons[result.outcome] };
  }

  return app;
}

function ignored(reason: string): { status: 202; body: WebhookAnswer } {
  return { status: 202, body: { ok: true, queued: false, reason } };
}

function summarise(answers: RunAnswer[]): WebhookAnswer {
  const lead = answers.find((a) => a.outcome === 'queued') ?? answers[0]!;
  const body: WebhookAnswer = {
    ok: true,
    queued: answers.some((a) => a.outcome === 'queued'),
    runId: lead.runId,
    stage: lead.stage,
    reason: answers.map((a) => (answers.length > 1 ? `${a.stage}: ${a.reason}` : a.reason)).join('; '),
  };
  if (answers.length > 1) body.runs = answers;
  return body;
}

function runIdsOf(body: WebhookAnswer): number[] | undefined {
  if (body.runs) return body.runs.map((r) => r.runId);
  return body.runId !== undefined ? [body.runId] : undefined;
}

interface SecretTable {
  global?: string;
  /** Lower-cased owner/repo → secret. */
  byRepo: Map<string, string>;
}

function secretTable(global: string | undefined, webhooks: WebhooksConfig): SecretTable {
  const byRepo = new Map<string, string>();
  for (const [name, entry] of Object.entries(webhooks.repositories)) if (entry.secret) byRepo.set(name.toLowerCase(), entry.secret);
  return { global: global || undefined, byRepo };
}

/** Which secrets (`''` = the global one, else `owner/repo`) the signature was made with. */
function matchingSecrets(body: Uint8Array, signature: string | undefined, secrets: SecretTable): Set<string> {
  const matched = new Set<string>();
  if (signature === undefined) return matched;
  const bySecret = new Map<string, string[]>();
  if (secrets.global !== undefined) bySecret.set(secrets.global, ['']);
  for (const [repo, secret] of secrets.byRepo) bySecret.set(secret, [...(bySecret.get(secret) ?? []), repo]);
  for (const [secret, names] of bySecret) {
    if (verifySignature(body, signature, secret)) for (const name of names) matched.add(name);
  }
  return matched;
}

/** The raw bytes (the body limit has already counted them): the signature is over exactly these. */
async function readBody(c: Context): Promise<Uint8Array> {
  try {
    return new Uint8Array(await c.req.arrayBuffer());
  } catch (err) {
    throw new HttpError(400, 'bad_request', 'could not read the request body', { cause: err });
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new HttpError(400, 'bad_request', 'body is not valid UTF-8 text');
  }
}

function formPayload(raw: Uint8Array): Uint8Array {
  const payload = new URLSearchParams(decode(raw)).get('payload');
  if (payload === null || payload === '') throw new HttpError(400, 'bad_request', 'form body has no payload field');
  return Buffer.from(payload, 'utf8');
}

function parseJson(bytes: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decode(bytes));
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'invalid_json', `invalid JSON: ${errorMessage(err).slice(0, 200)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'bad_request', 'payload must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** Never seen and seen without labels mean the same to the rules: every label that appears is new. */
function sameLabels(previous: readonly string[] | null, current: readonly string[]): boolean {
  if (previous === null) return current.length === 0;
  if (previous.length !== current.length) return false;
  const set = new Set(previous.map((l) => l.toLowerCase()));
  return current.every((l) => set.has(l.toLowerCase()));
}
