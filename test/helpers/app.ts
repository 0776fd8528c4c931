import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/server/index.js';
import { type Env } from '../../src/config-schema/index.js';
import { createHttpServer } from '../../src/http/index.js';
import { createApp, type App, type AppDeps } from '../../src/server/index.js';
import { createMemoryProvider } from '../../src/workspaces/index.js';
import { silentLogger } from './logger.js';
import type { TestStore } from './stores.js';

/** The admin token every test app starts with (BATON_BOOTSTRAP_TOKEN). */
export const ADMIN_TOKEN = 'baton_test-admin-token-0123456789abcdef';

export interface TestApp {
  app: App;
  /** Base URL of the real HTTP server on 127.0.0.1. */
  url: string;
  dataDir: string;
  /** Stops the server, the app (which closes the store) and removes the data directory. */
  close(): Promise<void>;
}

/**
 * A real baton app on a real port over the given test store, started (migrations, bootstrap
 * token, workers). `env` adds configuration; `file` is written as baton.yaml.
 */
export async function startTestApp(
  t: TestStore,
  options: { env?: Env; file?: string; deps?: Partial<AppDeps>; start?: boolean } = {},
): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-app-'));
  if (options.file !== undefined) fs.writeFileSync(path.join(dataDir, 'baton.yaml'), options.file);
  const { config } = loadConfig(
    {
      BATON_DATA_DIR: dataDir,
      BATON_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'silent',
      DATABASE_URL: t.url.startsWith('sqlite:') ? t.url : 'sqlite:unused.db',
      ...options.env,
    },
    dataDir,
  );
  const app = createApp(config, {
    logger: silentLogger,
    store: t.store,
    provider: createMemoryProvider(),
    events: { heartbeatMs: 200, pollMs: 100 },
    ...options.deps,
  });
  if (options.start !== false) await app.start();
  // The server `baton serve` runs, with the same limits (http: in baton.yaml).
  const server = createHttpServer(app.hono, { port: 0, hostname: '127.0.0.1', limits: config.http });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    dataDir,
    async close() {
      await app.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const bearer = (token = ADMIN_TOKEN) => ({ authorization: `Bearer ${token}` });
