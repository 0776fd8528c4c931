import { Hono } from 'hono';
import { DEFAULTS } from '../../src/runs/index.js';
import {
  createGiteaIngress,
  createGitHubIngress,
  createGitLabIngress,
  createInboxProcessing,
  parseWebhooksConfig,
  type Delivery,
  type GiteaIngressDeps,
  type InboxProcessing,
  type PermissionLookup,
} from '../../src/ingress/index.js';
import { parsePipelineConfig } from '../../src/pipeline/index.js';
import { createRunEngine, createRunQueries, type RunQueries, type RunService } from '../../src/runs/index.js';
import { createSqliteTestStore, type TestStore } from './stores.js';
import { until } from './until.js';

export const TEST_BOTS = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };

export interface PostResult {
  status: number;
  /** The HTTP answer: `{ ok: true, id }` on 202, the error envelope otherwise. */
  body: Record<string, unknown>;
  /** On 202 (unless `wait: false`): the stored delivery once the worker has processed it. */
  delivery?: Delivery;
}

export interface IngressHarness {
  app: Hono;
  engine: RunService;
  /** The reads of the same runs. */
  runs: RunQueries;
  processing: InboxProcessing;
  t: TestStore;
  /** Posts a delivery; on 202 waits for its verdict unless `wait` is false. */
  post(path: string, body: Uint8Array | string, headers: Record<string, string>, options?: { wait?: boolean }): Promise<PostResult>;
  /** Waits until the delivery is processed and returns it. */
  processed(id: number): Promise<Delivery>;
  cleanup(): Promise<void>;
}

/** The ingress and the inbox worker over a real SQLite file (or `store`) and the real run engine. */
export async function createIngressHarness(
  options: {
    secret?: string;
    /** Mounts `/webhook/github` too, verifying with this secret. */
    githubSecret?: string;
    /** Mounts `/webhook/gitlab` too, checking this secret token. */
    gitlabSecret?: string;
    webhooks?: unknown;
    pipeline?: unknown;
    permissionOf?: PermissionLookup;
    logger?: GiteaIngressDeps['logger'];
    store?: () => Promise<TestStore>;
    /** First retry wait of the worker. @default 20 */
    retryBaseMs?: number;
  } = {},
): Promise<IngressHarness> {
  const t = await (options.store ?? createSqliteTestStore)();
  await t.store.migrate();
  const engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue } });
  const runs = createRunQueries({ store: t.store, concurrency: DEFAULTS.queue.concurrency });
  const pipeline = parsePipelineConfig(options.pipeline, TEST_BOTS);
  // The sender's permission (on by default) is opted into by the tests of that rule, which give a lookup.
  const webhooks = parseWebhooksConfig({ requireWritePermission: false, ...(options.webhooks as object | undefined) });
  const problems = [...pipeline.problems, ...webhooks.problems];
  if (problems.length > 0) throw new Error(`bad test config: ${problems.join('; ')}`);
  const silent = { info: () => {}, warn: () => {}, error: () => {} };
  let processing: InboxProcessing;
  try {
    processing = createInboxProcessing({
      store: t.store,
      engine,
      pipeline: pipeline.pipeline,
      webhooks: webhooks.webhooks,
      permissionOf: options.permissionOf,
      logger: options.logger ?? silent,
      retryBaseMs: options.retryBaseMs ?? 20,
      pollMs: 200,
    });
  } catch (err) {
    await t.cleanup();
    throw err;
  }
  await processing.worker.start();
  const app = new Hono();
  app.route(
    '/',
    createGiteaIngress({ inbox: processing.inbox, webhooks: webhooks.webhooks, secret: options.secret, logger: options.logger }),
  );
  if (options.githubSecret !== undefined) {
    app.route(
      '/',
      createGitHubIngress({ inbox: processing.inbox, webhooks: webhooks.webhooks, secret: options.githubSecret, logger: options.logger }),
    );
  }
  if (options.gitlabSecret !== undefined) {
    app.route(
      '/',
      createGitLabIngress({ inbox: processing.inbox, webhooks: webhooks.webhooks, secret: options.gitlabSecret, logger: options.logger }),
    );
  }
  const processed = (id: number) =>
    until(async () => {
      const d = await processing.inbox.get(id);
      return d?.status === 'processed' ? d : undefined;
    }, `delivery ${id} processed`);
  return {
    app,
    engine,
    runs,
    processing,
    t,
    processed,
    async post(path, body, headers, postOptions = {}) {
      const res = await app.request(path, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers });
      const text = await res.text();
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new Error(`non-JSON answer ${res.status}: ${text.slice(0, 200)}`);
      }
      if (res.status !== 202 || postOptions.wait === false) return { status: res.status, body: parsed };
      return { status: res.status, body: parsed, delivery: await processed(parsed.id as number) };
    },
    async cleanup() {
      await processing.worker.stop();
      await t.cleanup();
    },
  };
}
