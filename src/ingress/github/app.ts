import { Hono, type Context } from 'hono';
import { errorMessage } from '../../background/index.js';
import { errorBody, errorHandler, HttpError, limitBody } from '../../web-kit/index.js';
import { forgeRepository } from '../../runs/index.js';
import type { IngressLogger } from '../gitea/index.js';
import { createDeliveryAcceptor, type Spool, type WebhookAnswer } from '../spool/index.js';
import { DELIVERY_SOURCE, type InboxStore } from '../inbox/index.js';
import { refusedDelivery, verifySignature } from '../signature.js';
import { isAllowed, parseWebhooksConfig, type WebhooksConfig } from '../webhooks-config.js';
import { gitHubNumberOf, readGitHubRepository } from './normalize.js';

/** Where GitHub delivers. */
export const GITHUB_WEBHOOK_PATH = '/webhook/github';

export interface GitHubIngressDeps {
  inbox: Pick<InboxStore, 'insert'>;
  /** The parsed `webhooks:` section (allowlist, body limit). */
  webhooks?: WebhooksConfig;
  /** GITHUB_WEBHOOK_SECRET. Without one every delivery is refused: GitHub's are always signed. */
  secret?: string;
  logger?: IngressLogger;
  now?: () => number;
  /**
   * The replica's spool, the same one Gitea's endpoints use: a delivery the inbox cannot store
   * within `acceptBudgetMs` is kept there and answered 202. Without one it is refused with 503.
   */
  spool?: Pick<Spool, 'append' | 'pending' | 'refused'>;
  /** @default 2_000 */
  acceptBudgetMs?: number;
  /** Called for every delivery refused with 503 (stored neither in the database nor in the spool). */
  onRefused?: () => void;
}

const JSON_TYPES = /^application\/([a-z0-9.+-]+\+)?json$/;
const GUID = /^[\x21-\x7e]{1,100}$/;
const HOOK_ID = /^[0-9]{1,20}$/;
const silent: IngressLogger = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * `POST /webhook/github`: size limit → `X-Hub-Signature-256` (HMAC-SHA256 of the raw body, constant
 * time) before anything is parsed → parse → allowlist → one insert into the inbox → 202. GitHub
 * waits 10 s for an answer and never retries by itself (a redelivery is a person's or a
 * script's, with the same `X-GitHub-Delivery`), so the work is the inbox worker's, as for Gitea.
 *
 * The delivery is stored as `<X-GitHub-Hook-ID>:<X-GitHub-Delivery>`: the GUID is the event's,
 * shared by every hook subscribed to it (a repository's and an organisation's), and the same on a
 * redelivery; with the hook it names one delivery of one hook, and a redelivery is its duplicate.
 * Two hooks delivering the same event carry the same body, which the inbox's body dedup catches.
 */
export function createGitHubIngress(deps: GitHubIngressDeps): Hono {
  const now = deps.now ?? Date.now;
  const logger = deps.logger ?? silent;
  const webhooks = deps.webhooks ?? parseWebhooksConfig(undefined).webhooks;
  const store = createDeliveryAcceptor({
    inbox: deps.inbox,
    ...(deps.spool ? { spool: deps.spool } : {}),
    ...(deps.acceptBudgetMs !== undefined ? { acceptBudgetMs: deps.acceptBudgetMs } : {}),
    ...(deps.onRefused ? { onRefused: deps.onRefused } : {}),
    logger,
  });
  const app = new Hono();
  app.post(
    GITHUB_WEBHOOK_PATH,
    async (c, next) => {
      await next();
      if (c.error instanceof HttpError) {
        const details = { delivery: c.req.header('x-github-delivery'), event: c.req.header('x-github-event'), path: GITHUB_WEBHOOK_PATH };
        logger.warn({ ...details, status: c.error.status, outcome: c.error.message }, 'webhook delivery refused');
      }
    },
    limitBody(webhooks.maxBodyBytes),
    async (c) => c.json(await receive(c), 202),
  );
  app.all(GITHUB_WEBHOOK_PATH, (c) => {
    c.header('Allow', 'POST');
    return c.json(errorBody('method_not_allowed', `${c.req.method} is not allowed: webhooks are delivered with POST`), 405);
  });
  app.onError(errorHandler(logger));

  async function receive(c: Context): Promise<WebhookAnswer> {
    const all = c.req.header();
    const contentType = (all['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!JSON_TYPES.test(contentType)) {
      throw new HttpError(
        415,
        'unsupported_media_type',
        "unsupported Content-Type: set the GitHub webhook's content type to application/json",
      );
    }
    const event = all['x-github-event']?.trim();
    if (!event) throw new HttpError(400, 'bad_request', 'missing X-GitHub-Event header');
    const guid = all['x-github-delivery']?.trim();
    if (guid !== undefined && !GUID.test(guid))
      throw new HttpError(400, 'bad_request', 'X-GitHub-Delivery must be 1 to 100 printable characters');
    const hookId = all['x-github-hook-id']?.trim();
    if (hookId !== undefined && !HOOK_ID.test(hookId)) throw new HttpError(400, 'bad_request', 'X-GitHub-Hook-ID must be a number');
    const raw = await readBody(c);
    if (raw.byteLength === 0) throw new HttpError(400, 'bad_request', 'empty body: expected a JSON webhook payload');

    // Signatures come first: nothing of an unsigned body is read, whatever webhooks.allowUnsigned says.
    if (!deps.secret) throw refusedDelivery('no GITHUB_WEBHOOK_SECRET is configured: GitHub deliveries are refused');
    const signature = all['x-hub-signature-256']?.trim();
    if (!signature) throw refusedDelivery('missing signature: X-Hub-Signature-256 is required');
    if (!signature.startsWith('sha256=') || !verifySignature(raw, signature, deps.secret)) {
      throw refusedDelivery('invalid signature');
    }

    const payload = parseJson(raw);
    const repository = payload.repository === undefined ? null : readGitHubRepository(payload);
    if (repository && !isAllowed(webhooks.allow, repository.owner, repository.repo)) {
      throw new HttpError(403, 'forbidden', `repository ${repository.owner}/${repository.repo} is not in webhooks.allow`);
    }
    return store({
      source: DELIVERY_SOURCE.webhook,
      endpoint: GITHUB_WEBHOOK_PATH,
      deliveryId: guid === undefined ? null : `${hookId ?? '-'}:${guid}`,
      event,
      eventType: typeof payload.action === 'string' ? `${event}.${payload.action}`.slice(0, 100) : null,
      headers: keptHeaders(all),
      body: decode(raw),
      // Named with its forge: a Gitea repository of the same name is another repository.
      repository: repository ? forgeRepository('github', repository.owner, repository.repo) : null,
      number: gitHubNumberOf(payload),
      receivedAt: now(),
    });
  }
  return app;
}

/** What the worker and an operator read; never the signature. */
const KEPT = [
  'content-type',
  'user-agent',
  'x-github-event',
  'x-github-delivery',
  'x-github-hook-id',
  'x-github-hook-installation-target-type',
  'x-github-hook-installation-target-id',
];

function keptHeaders(all: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of KEPT) if (all[name] !== undefined) kept[name] = all[name].slice(0, 500);
  return kept;
}

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
