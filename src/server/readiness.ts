import fs from 'node:fs';
import path from 'node:path';
import { codeOf, errorMessage } from '../background/index.js';
import type { ReadinessCheck } from '../http/index.js';
import { parseDatabaseUrl, type Store } from '../store/index.js';
import type { WorkspaceProvider } from '../workspaces/index.js';

/** Free bytes for an unprivileged writer on the filesystem holding `dir`. */
export type FreeSpace = (dir: string) => Promise<number>;

const freeSpace: FreeSpace = async (dir) => {
  const stats = await fs.promises.statfs(dir);
  return stats.bavail * stats.bsize;
};

/**
 * What `GET /ready` asks, in the order it reports them; `GET /ready/ingress` asks those marked
 * `ingress`. A new dependency that must answer before this replica takes work is one more entry
 * here.
 */
export function readinessChecks(deps: {
  store: Store;
  dataDir: string;
  provider: WorkspaceProvider;
  /** GITEA_URL, when set. */
  forgeUrl?: string;
  /** Whether this process has accepted a forge webhook since it started. */
  forgeDeliverySeen: () => boolean;
  /** A SQLite database's filesystem is checked for free space too. */
  databaseUrl: string;
  /** 0 = no free-space check. */
  minFreeSpaceBytes: number;
  /** @default fs.statfs */
  freeSpace?: FreeSpace;
  /** The inbox's permission lookup problem (the forge refused it), or null. */
  permissionProblem?: () => string | null;
  /**
   * The replica's spool (webhooks.spoolDir). With one, taking webhooks does not need the database
   * (a delivery it cannot store in time is spooled), so `/ready/ingress` asks the spool's
   * directory instead: a load balancer that took every replica out while the database is away
   * would lose what the forges send once.
   */
  spoolDir?: string;
}): ReadinessCheck[] {
  const { store, dataDir, provider, spoolDir } = deps;
  const needsDatabase = spoolDir === undefined;
  const checks: ReadinessCheck[] = [
    { name: 'database', ingress: needsDatabase, check: () => store.ping() },
    {
      name: 'migrations',
      ingress: needsDatabase,
      check: async () => {
        const pending = await store.pendingMigrations();
        if (pending.length > 0) throw new Error(`pending: ${pending.join(', ')} (run "baton migrate" or start baton serve)`);
      },
    },
    { name: 'data directory', ingress: true, check: () => checkWritable(dataDir) },
    ...(spoolDir === undefined
      ? []
      : [
          {
            name: 'spool',
            ingress: true,
            check: async () => {
              await fs.promises.mkdir(spoolDir, { recursive: true, mode: 0o700 });
              await checkWritable(spoolDir);
            },
          },
        ]),
  ];
  if (!deps.forgeUrl) {
    // Without GITEA_URL baton can run manual runs fine; a forge sending webhooks, though, expects
    // comments that will never come: that is a misconfiguration worth taking this replica out for.
    checks.push({
      name: 'forge',
      check: async () => {
        if (deps.forgeDeliverySeen()) {
          throw new Error(
            'a webhook from the forge arrived, but GITEA_URL is not set: baton cannot post status comments or check permissions. ' +
              'Set GITEA_URL, GITEA_DEV_TOKEN and GITEA_REVIEW_TOKEN (see docs/gitea.md)',
          );
        }
      },
    });
  }
  if (deps.permissionProblem) {
    const problem = deps.permissionProblem;
    // The forge answered 401/403 to the sender-permission lookup: no delivery can start a stage
    // until an operator fixes the bot token's rights. Clears once a lookup works again.
    checks.push({
      name: 'webhook permissions',
      check: async () => {
        const p = problem();
        if (p) throw new Error(p);
      },
    });
  }
  if (deps.minFreeSpaceBytes > 0) {
    // A full disk does not stop a database from answering a ping, nor (with some space left for
    // a probe) a directory from taking an empty file: only the free space says it in time.
    const target = parseDatabaseUrl(deps.databaseUrl);
    const dirs = [dataDir];
    if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:') dirs.push(path.dirname(target.file));
    checks.push({
      name: 'disk space',
      ingress: true,
      check: () => checkFreeSpace([...new Set(dirs)], deps.minFreeSpaceBytes, deps.freeSpace ?? freeSpace),
    });
  }
  if (provider.health) {
    checks.push({
      name: `provider ${provider.name}`,
      check: async () => {
        const { ok, reason } = provider.health?.() ?? { ok: true };
        if (!ok) throw new Error(reason ?? 'unhealthy');
      },
    });
  }
  return checks;
}

async function checkWritable(dir: string): Promise<void> {
  const probe = path.join(dir, `.ready-${process.pid}`);
  try {
    await fs.promises.writeFile(probe, '');
    await fs.promises.rm(probe, { force: true });
  } catch (err) {
    throw new Error(`${dir} is not writable (${codeOf(err) ?? errorMessage(err)})`);
  }
}

async function checkFreeSpace(dirs: string[], floor: number, free: FreeSpace): Promise<void> {
  const low: string[] = [];
  for (const dir of dirs) {
    const bytes = await free(dir);
    if (bytes < floor) low.push(`${dir} has ${mib(bytes)} free`);
  }
  if (low.length > 0) {
    throw new Error(
      `${low.join('; ')}, below the floor of ${mib(floor)} (BATON_MIN_FREE_SPACE_MB): free some space; runs and deliveries cannot be stored safely`,
    );
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MiB`;
}
