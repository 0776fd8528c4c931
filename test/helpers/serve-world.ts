import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULTS, type QueueConfig } from '../../src/runs/index.js';
import { createRunEngine, createRunQueries, type RunQueries, type RunService } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { freePort } from './baton-bin.js';
import { spawnTs, type ChildHandle } from './child.js';
import { createSandboxFixture, type SandboxFixture } from './sandbox.js';

const CHILD = 'test/fixtures/serve-child.ts';

/**
 * What the crash and slot tests share: `baton serve` as a test child (test/fixtures/serve-child.ts)
 * on a SQLite file, its runs in the real sandbox on the declared repository `acme/app` (a bare
 * repository), and this process's own engine on the same database to enqueue and watch runs.
 */
export interface ServeWorld {
  port: number;
  fixture: SandboxFixture;
  /** The environment `start` gives every server. */
  env: Record<string, string>;
  /** This process's engine on the servers' database. */
  engine: RunService;
  /** This process's reads of the servers' runs. */
  runs: RunQueries;
  /** Starts a server (more may follow: after a kill, on the same port) and waits until it is ready. */
  start(extra?: Record<string, string>): Promise<ChildHandle>;
  /** Kills every server, closes the store, removes the files and whatever the runs left running. */
  close(): Promise<void>;
}

export async function createServeWorld(options: {
  name: string;
  /** The agent every run starts (the runner's BATON_AGENT_COMMAND), or one made from the directory runs may read. */
  agent: string[] | ((shared: string) => string[]);
  /** `queue:` settings of baton.yaml (seconds), besides `pollSeconds: 0.1`. */
  queue?: Record<string, number>;
  env?: Record<string, string>;
  /** The test engine's queue settings. @default DEFAULTS.queue */
  engineQueue?: QueueConfig;
}): Promise<ServeWorld> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `baton-${options.name}-`));
  const fixture = createSandboxFixture();
  const repo = createBareRepo(fixture.shared, 'app');
  const queue = { pollSeconds: 0.1, ...options.queue };
  fs.writeFileSync(
    path.join(root, 'baton.yaml'),
    [
      'queue:',
      ...Object.entries(queue).map(([key, value]) => `  ${key}: ${value}`),
      'repositories:',
      `  acme/app: { path: ${JSON.stringify(repo)} }`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const database = `sqlite:${path.join(root, 'baton.db')}`;
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKSPACE_PROVIDER: 'local',
    DATABASE_URL: database,
    BATON_DATA_DIR: fixture.dataDir,
    BATON_CONFIG: path.join(root, 'baton.yaml'),
    SANDBOX: JSON.stringify(fixture.sandbox),
    AGENT_COMMAND: JSON.stringify(typeof options.agent === 'function' ? options.agent(fixture.shared) : options.agent),
    ...options.env,
  };
  const children: ChildHandle[] = [];
  let store: Store | undefined;
  let engine: RunService | undefined;
  let runs: RunQueries | undefined;
  return {
    port,
    fixture,
    env,
    get engine() {
      store ??= createStore({ url: database });
      engine ??= createRunEngine({ store, queue: options.engineQueue ?? DEFAULTS.queue });
      return engine;
    },
    get runs() {
      store ??= createStore({ url: database });
      runs ??= createRunQueries({ store, concurrency: (options.engineQueue ?? DEFAULTS.queue).concurrency });
      return runs;
    },
    async start(extra = {}) {
      const child = spawnTs(CHILD, { ...env, ...extra });
      children.push(child);
      await child.waitFor((m) => m.ready === true);
      return child;
    },
    async close() {
      await Promise.all(children.splice(0).map((c) => c.kill()));
      await store?.close();
      fixture.cleanup();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
