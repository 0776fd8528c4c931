import fs from 'node:fs';
import path from 'node:path';
import type { FakeCoder } from '../fakes/coder/index.js';
import { startServe, type ServeHandle } from './baton-bin.js';
import { until } from './until.js';

/**
 * `baton serve` with the Coder provider on the fake Coder, as the crash and restore suites start
 * it (again and again, in the same `dir`): a SQLite file `dir/baton.db`, four slots, and a fast
 * queue (1 s leases, 0.1 s polls and backoffs) so a killed server's runs are taken over at once.
 * CALLBACK_URL is required with Coder; it points nowhere, since the fake's workspaces never call
 * back by themselves (a suite calls back for them where it must). Ready when this resolves.
 */
export async function startCoderServe(coder: FakeCoder, dir: string): Promise<ServeHandle> {
  const config = path.join(dir, 'baton.yaml');
  fs.writeFileSync(
    config,
    ['queue:', '  leaseSeconds: 1', '  pollSeconds: 0.1', '  backoffBaseSeconds: 0.1', 'cleanup:', '  backoffBaseSeconds: 0.1', ''].join(
      '\n',
    ),
  );
  const server = await startServe(
    {
      WORKSPACE_PROVIDER: 'coder',
      CODER_URL: coder.url,
      CODER_TOKEN: coder.token,
      CODER_TEMPLATE_ID: coder.template.id,
      CALLBACK_URL: 'http://127.0.0.1:1',
      DATABASE_URL: `sqlite:${path.join(dir, 'baton.db')}`,
      BATON_DATA_DIR: dir,
      BATON_CONFIG: config,
      HOST: '127.0.0.1',
      QUEUE_CONCURRENCY: '4',
    },
    dir,
  );
  await until(async () => (await fetch(`${server.url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
  return server;
}
