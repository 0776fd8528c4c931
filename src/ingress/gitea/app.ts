import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { errorMessage } from '../../background/index.js';
import { errorBody, errorHandler, HttpError, limitBody } from '../../web-kit/index.js';
import { DELIVERY_SOURCE, type InboxStore } from '../inbox/index.js';
import { createDeliveryAcceptor, type Spool, type WebhookAnswer } from '../spool/index.js';
import { refusedDelivery, verifySignature } from '../signature.js';
import { isAllowed, parseWebhooksConfig, type WebhooksConfig } from '../webhooks-config.js';
import { readDeliveryHeaders, type DeliveryHeaders } from './headers.js';
import { readRepository } from './normalize.js';
import { WEBHOOK_ROUTES, type WebhookRoute } from './routes.js';

/** pino-compatible; only these levels are used. Messages never carry secrets or signatures. */
export interface IngressLogger {
  debug?(details: Record<string, unknown>, message: string): void;
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface GiteaIngressDeps {
  /** Where accepted deliveries are stored; the inbox worker processes them afterwards. */
  inbox: Pick<InboxStore, 'insert'>;
  /** The parsed `webhooks:` section (parseWebhooksConfig). @default no allowlist, no permission rule, 5 MiB */
  webhooks?: WebhooksConfig;
  /**
   * WEBHOOK_SECRET, or the generated one (config.gitea.webhookSecret). A delivery no secret applies
   * to is refused with 401 unless `webhooks.allowUnsigned` is on.
   */
  secret?: string;
  logger?: IngressLogger;
  now?: () => number;
  /**
   * Where a delivery goes when the inbox cannot store it within `acceptBudgetMs`; without one,
   * such a delivery is refused with 503.
   */
  spool?: Pick<Spool, 'append' | 'pending' | 'refused'>;
  /** How long the inbox insert may take before the delivery is spooled instead. @default 2_000 */
  acceptBudgetMs?: number;
  /** Called for every delivery refused with 503 (stored neither in the database nor in the spool). */
  onRefused?: () => void;
}

export type { WebhookAnswer };

const JSON_TYPES = /^application\/([a-z0-9.+-]+\+)?json$/;
const FORM_TYPE = 'application/x-www-form-urlencoded';
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;
const silent: IngressLogger = { info: () => {}, warn: () => {}, error: () => {} };
const NO_SECRET =
  "unsigned deliveries are refused: give the Gitea webhook baton's secret (WEBHOOK_SECRET, or the one baton serve generated in its data directory)";

/**
 * The Gitea/Forgejo webhook endpoints (`POST /webhook/gitea` and the legacy per-workflow paths).
 *
 * Accepting is verifying and storing, nothing else: size limit → signature over the raw bytes →
 * parse → repository-bound signature and allowlist → one durable insert into the inbox → 202 with
 * the delivery's id. Gitea makes exactly one attempt per event and waits at most DELIVER_TIMEOUT
 * (5 s) (reference/gitea/WEBHOOKS.md §Delivery), so nothing that can be slow or fail for a while
 * (routing, the permission lookup, the label diff, the enqueue) happens here: the inbox worker
 * does it, retrying what may pass. Only a failure to store answers 5xx.
 * Nothing is parsed for an unsigned request when a global secret is set. Refusals are
 * `HttpError`s, answered in the app's one envelope `{ error: { code, message } }`.
 */
export function createGiteaIngress(deps: GiteaIngressDeps): Hono {
  const now = deps.now ?? Date.now;
  const logger = deps.logger ?? silent;
  const webhooks = deps.webhooks ?? parseWebhooksConfig(undefined).webhooks;
  const secrets = secretTable(deps.secret, webhooks);
  // Into the inbox, or the replica's spool when the database has not committed it in time.
  const store = createDeliveryAcceptor({
    inbox: deps.inbox,
    ...(deps.spool ? { spool: deps.spool } : {}),
    ...(deps.acceptBudgetMs !== undefined ? { acceptBudgetMs: deps.acceptBudgetMs } : {}),
    ...(deps.onRefused ? { onRefused: deps.onRefused } : {}),
    logger,
  });

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
    // Every header once, as a plain record (names lower-cased): about thirty are looked up.
    const all = c.req.header();
    const headers = readDeliveryHeaders((name) => all[name]);
    const log = { delivery: headers.delivery, event: headers.eventType ?? headers.event, path: webhookRoute.path };
    const answer = await receive(c, webhookRoute, headers, all);
    // Debug, not info: the stored row is the record of it (the inspector), the worker logs its
    // verdict at info, and a line per request cost a tenth of the accept path (`npm run bench:ingress`).
    logger.debug?.({ ...log, status: 202, ...answer }, 'webhook delivery accepted');
    return c.json(answer, 202);
  }

  async function receive(
    c: Context,
    webhookRoute: WebhookRoute,
    headers: DeliveryHeaders,
    all: Record<string, string>,
  ): Promise<WebhookAnswer> {
    const contentType = (all['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
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
      if (secrets.global === undefined && secrets.byRepo.size === 0) throw refusedDelivery(NO_SECRET);
      if (headers.signature === undefined) throw refusedDelivery('missing signature: X-Gitea-Signature is required');
      if (matched.size === 0) throw refusedDelivery('invalid signature');
    }

    const payload = parseJson(signed);
    // A repository-less event (org or package events) is stored when no per-repository secret
    // could apply: the global check above already vouched for it, and the worker ignores it. A
    // repository that is there must be well-formed with names Gitea allows (they become part of
    // URLs and run keys): anything else is refused here and not kept.
    const repository = payload.repository === undefined && secrets.byRepo.size === 0 ? null : readRepository(payload);
    let signedForRepository = false;
    if (repository) {
      const { owner, repo } = repository;
      const full = `${owner}/${repo}`.toLowerCase();
      const required = secrets.byRepo.has(full) ? full : secrets.global !== undefined ? '' : undefined;
      if (required === undefined && !webhooks.allowUnsigned) {
        throw refusedDelivery(`no webhook secret applies to ${owner}/${repo}: ${NO_SECRET}`);
      }
      if (required !== undefined && !matched.has(required)) {
        throw refusedDelivery(
          headers.signature === undefined ? 'missing signature: X-Gitea-Signature is required' : `invalid signature for ${owner}/${repo}`,
        );
      }
      if (!isAllowed(webhooks.allow, owner, repo)) {
        throw new HttpError(403, 'forbidden', `repository ${owner}/${repo} is not in webhooks.allow`);
      }
      signedForRepository = required !== undefined;
    }

    return store({
      source: DELIVERY_SOURCE.webhook,
      endpoint: webhookRoute.path,
      deliveryId: headers.delivery ?? null,
      event: headers.event ?? null,
      eventType: headers.eventType ?? null,
      headers: storedHeaders(all),
      body: decode(signed),
      repository: repository ? `${repository.owner}/${repository.repo}` : null,
      number: numberOf(payload),
      receivedAt: now(),
      signed: signedForRepository,
    });
  }

  return app;
}

/**
 * The delivery headers worth keeping (names lower-cased): what the worker reads to classify the
 * event, and what an operator inspecting it wants to see. Never a signature nor `Authorization`
 * (a webhook's "Authorization Header" is a secret of its own).
 */
const KEPT_HEADERS = [
  'content-type',
  'user-agent',
  ...['x-forgejo-', 'x-gitea-', 'x-gogs-', 'x-github-'].flatMap((prefix) => ['delivery', 'event', 'event-type'].map((s) => prefix + s)),
];

function storedHeaders(all: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = all[name];
    if (value !== undefined) kept[name] = value.slice(0, 500);
  }
  return kept;
}

/** The issue or pull request a payload is about, for ordering (label memory depends on order). */
function numberOf(payload: Record<string, unknown>): number | null {
  const candidates = [payload.number, objectField(payload.issue, 'number'), objectField(payload.pull_request, 'number')];
  const found = candidates.find((n): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n > 0);
  return found ?? null;
}

function objectField(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
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
