import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createStore, type Store } from '../../src/store/index.js';
import { startServe, type ServeHandle } from './baton-bin.js';
import { until } from './until.js';

/**
 * The real `baton serve` the forge suites talk to, with local workspaces in the real sandbox: a
 * temporary root (mode 0711, so the sandboxed runner can pass through it), a HOME whose
 * `.gitconfig` names the commit author and trusts every checkout (`local.gitConfig`), a
 * `baton.yaml` that lets runs read `readOnlyPaths` (the fake agents' folder), a SQLite file, and
 * the suite's forge and agent variables. It is ready (`/ready` answers 200) when this resolves.
 */
export interface ForgeServe {
  root: string;
  server: ServeHandle;
  /** The server's database, for the suite's own reads. */
  store: Store;
  /** Stops the server (it must exit 0), closes the store and removes the root. */
  close(): Promise<void>;
}

export async function startForgeServe(options: {
  /** Names the temporary root: `baton-e2e-<name>-`. */
  name: string;
  readOnlyPaths: string[];
  /** The forge's URL, tokens and secret, the agent command, and whatever else the suite sets. */
  env: Record<string, string>;
  /** More of `baton.yaml` (a `pipeline:` section), after the local workspace's keys. */
  config?: string;
}): Promise<ForgeServe> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `baton-e2e-${options.name}-`));
  fs.chmodSync(root, 0o711);
  const home = path.join(root, 'home');
  fs.mkdirSync(home);
  const gitConfig = path.join(home, '.gitconfig');
  fs.writeFileSync(gitConfig, '[user]\n\tname = Baton E2E\n\temail = baton-e2e@example.invalid\n[safe]\n\tdirectory = *\n');
  fs.writeFileSync(
    path.join(root, 'baton.yaml'),
    `local:\n  readOnlyPaths: ${JSON.stringify(options.readOnlyPaths)}\n  gitConfig: ${JSON.stringify(gitConfig)}\n${options.config ?? ''}`,
  );
  const env = {
    HOME: home,
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
    BATON_DATA_DIR: path.join(root, 'data'),
    ...options.env,
  };
  let server: ServeHandle | undefined;
  let store: Store | undefined;
  const close = async () => {
    try {
      if (server) {
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      }
    } finally {
      await store?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  };
  try {
    server = await startServe(env, root);
    const started = server;
    await until(async () => (await fetch(`${started.url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
    store = createStore({ url: env.DATABASE_URL });
    return { root, server, store, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
