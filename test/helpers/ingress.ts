import { DEFAULTS } from '../../src/config/index.js';
import { createGiteaIngress, parseWebhooksConfig, type GiteaIngressDeps } from '../../src/ingress/index.js';
import { parsePipelineConfig } from '../../src/pipeline/index.js';
import { createRunEngine, type FullRunEngine } from '../../src/runs/index.js';
import { createSqliteTestStore, type TestStore } from './stores.js';

export const TEST_BOTS = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };

export interface IngressHarness {
  app: ReturnType<typeof createGiteaIngress>;
  engine: FullRunEngine;
  t: TestStore;
  post(
    path: string,
    body: Uint8Array | string,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  cleanup(): Promise<void>;
}

/** The ingress over a real SQLite file and the real run engine. */
export async function createIngressHarness(
  options: {
    secret?: string;
    webhooks?: unknown;
    pipeline?: unknown;
    permissionOf?: GiteaIngressDeps['permissionOf'];
    logger?: GiteaIngressDeps['logger'];
    store?: () => Promise<TestStore>;
  } = {},
): Promise<IngressHarness> {
  const t = await (options.store ?? createSqliteTestStore)();
  await t.store.migrate();
  const engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue } });
  const pipeline = parsePipelineConfig(options.pipeline, TEST_BOTS);
  const webhooks = parseWebhooksConfig(options.webhooks);
  const problems = [...pipeline.problems, ...webhooks.problems];
  if (problems.length > 0) throw new Error(`bad test config: ${problems.join('; ')}`);
  const app = createGiteaIngress({
    engine,
    store: t.store,
    pipeline: pipeline.pipeline,
    webhooks: webhooks.webhooks,
    secret: options.secret,
    permissionOf: options.permissionOf,
    logger: options.logger,
  });
  return {
    app,
    engine,
    t,
    async post(path, body, headers) {
      const res = await app.request(path, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers });
      const text = await res.text();
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new Error(`non-JSON answer ${res.status}: ${text.slice(0, 200)}`);
      }
      return { status: res.status, body: parsed };
    },
    cleanup: () => t.cleanup(),
  };
}
