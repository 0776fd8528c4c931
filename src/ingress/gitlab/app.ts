import { createHash, timingSafeEqual } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { errorMessage } from '../../background/index.js';
import { errorBody, errorHandler, HttpError, limitBody } from '../../web-kit/index.js';
import { forgeRepository } from '../../runs/index.js';
import type { IngressLogger } from '../gitea/index.js';
import { DELIVERY_SOURCE, type InboxStore } from '../inbox/index.js';
import { createDeliveryAcceptor, type Spool, type WebhookAnswer } from '../spool/index.js';
import { refusedDelivery } from '../signature.js';
import { isAllowed, parseWebhooksConfig, type WebhooksConfig } from '../webhooks-config.js';
import { gitLabNumberOf, readGitLabRepository } from './normalize.js';

/** Where GitLab delivers. */
export const GITLAB_WEBHOOK_PATH = '/webhook/gitlab';

export interface GitLabIngressDeps {
  inbox: Pick<InboxStore, 'insert'>;
  /** The parsed `webhooks:` section (allowlist, body limit). */
  webhooks?: WebhooksConfig;
  /** GITLAB_WEBHOOK_SECRET. Without one every delivery is refused. */
  secret?: string;
  logger?: IngressLogger;
  now?: () => number;
  /**
   * The replica's spool, the same one Gitea's and GitHub's endpoints use: a delivery the inbox
   * cannot store within `acceptBudgetMs` is kept there and answered 202 (a GitLab hook that fails
   * 4 times in a row is disabled). Without one it is refused with 503.
   */
  spool?: Pick<Spool, 'append' | 'pending' | 'refused'>;
  /** @default 2_000 */
  acceptBudgetMs?: number;
  /** Called for every delivery refused with 503 (stored neither in the database nor in the spool). */
  onRefused?: () => void;
}

const JSON_TYPES = /^application\/([a-z0-9.+-]+\+)?json$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,100}$/;
const silent: IngressLogger = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * `POST /webhook/gitlab`: size limit → `X-Gitlab-Token` (the hook's secret token itself, compared
 * in constant time) before anything is parsed → parse → allowlist → one insert into the inbox →
 * 202. GitLab disables a hook that keeps failing (4 failures in a row: for a while, backing off up
 * to 24 h; 40: for good), so the answer is fast and the work is the inbox worker's.
 *
 * The delivery is stored under its `Idempotency-Key`, which GitLab keeps the same when a delivery
 * is retried or resent by hand (`X-Gitlab-Event-UUID` is new on a resend), so a resend is its
 * duplicate; a GitLab older than 17.4 sends no key, and the event UUID stands in for it.
 */
export function createGitLabIngress(deps: GitLabIngressDeps): Hono {
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
    GITLAB_WEBHOOK_PATH,
    async (c, next) => {
      await next();
      if (c.error instanceof HttpError) {
        const details = { delivery: c.req.header('idempotency-key'), event: c.req.header('x-gitlab-event'), path: GITLAB_WEBHOOK_PATH };
        logger.warn({ ...details, status: c.error.status, outcome: c.error.message }, 'webhook delivery refused');
      }
    },
    limitBody(webhooks.maxBodyBytes),
    async (c) => c.json(await receive(c), 202),
  );
  app.all(GITLAB_WEBHOOK_PATH, (c) => {
    c.header('Allow', 'POST');
    return c.json(errorBody('method_not_allowed', `${c.req.method} is not allowed: webhooks are delivered with POST`), 405);
  });
  app.onError(errorHandler(logger));

  async function receive(c: Context): Promise<WebhookAnswer> {
    const all = c.req.header();
    // The token comes first: nothing of the request but its headers is read before it matches.
    if (!deps.secret) throw refusedDelivery('no GITLAB_WEBHOOK_SECRET is configured: GitLab deliveries are refused');
    const token = all['x-gitlab-token'];
    if (token === undefined || token === '') throw refusedDelivery('missing token: X-Gitlab-Token is required');
    if (!sameSecret(token, deps.secret)) throw refusedDelivery('invalid token');

    const contentType = (all['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!JSON_TYPES.test(contentType))
      throw new HttpError(415, 'unsupported_media_type', 'unsupported Content-Type: expected application/json');
    const event = all['x-gitlab-event']?.trim();
    if (!event) throw new HttpError(400, 'bad_request', 'missing X-Gitlab-Event header');
    const key = all['idempotency-key']?.trim() || all['x-gitlab-event-uuid']?.trim();
    if (key !== undefined && !DELIVERY_ID.test(key))
      throw new HttpError(400, 'bad_request', 'Idempotency-Key and X-Gitlab-Event-UUID must be 1 to 100 printable characters');
    const raw = await readBody(c);
    if (raw.byteLength === 0) throw new HttpError(400, 'bad_request', 'empty body: expected a JSON webhook payload');

    const payload = parseJson(raw);
    const repository = payload.project === undefined ? null : readGitLabRepository(payload);
    if (repository && !isAllowed(webhooks.allow, repository.owner, repository.repo)) {
      throw new HttpError(403, 'forbidden', `repository ${repository.owner}/${repository.repo} is not in webhooks.allow`);
    }
    const attributes = payload.object_attributes;
    const action =
      typeof attributes === 'object' && attributes !== null && typeof (attributes as Record<string, unknown>).action === 'string'
        ? ((attributes as Record<string, unknown>).action as string)
        : undefined;
    return store({
      source: DELIVERY_SOURCE.webhook,
      endpoint: GITLAB_WEBHOOK_PATH,
      // Prefixed: another forge's delivery ids are another space.
      deliveryId: key === undefined ? null : `gitlab:${key}`,
      event,
      eventType: action === undefined ? null : `${event}.${action}`.slice(0, 100),
      headers: keptHeaders(all),
      body: decode(raw),
      // Named with its forge: a Gitea or GitHub repository of the same name is another repository.
      repository: repository ? forgeRepository('gitlab', repository.owner, repository.repo) : null,
      number: gitLabNumberOf(payload),
      receivedAt: now(),
    });
  }
  return app;
}

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function sameSecret(given: string, secret: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** What the worker and an operator read; never the token. */
const KEPT = [
  'content-type',
  'user-agent',
  'x-gitlab-event',
  'x-gitlab-event-uuid',
  'x-gitlab-webhook-uuid',
  'x-gitlab-instance',
  'idempotency-key',
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
