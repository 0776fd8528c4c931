import { Hono } from 'hono';
import { RUN_STATUS, type RunQueries } from '../runs/index.js';

/**
 * The original orchestrator's `GET /queue`, same field names and units: `pending`, `active`,
 * `activeWorkspaces` (per run key: `workspaceId`, `elapsed` in whole seconds as the original
 * counted it), `failed`, `concurrency`; plus `paused`, `dead`, and per workspace `runId`,
 * `stage`, `status`, `workspaceName` and `elapsedMs`.
 */
export function queueRoutes(runs: Pick<RunQueries, 'stats' | 'listLive'>, now: () => number = Date.now): Hono {
  const app = new Hono();
  app.get('/queue', async (c) => {
    const [stats, live] = await Promise.all([runs.stats(), runs.listLive()]);
    const activeWorkspaces: Record<
      string,
      {
        runId: number;
        stage: string;
        status: string;
        workspaceId: string | null;
        workspaceName: string | null;
        elapsed: number;
        elapsedMs: number;
      }
    > = {};
    for (const run of live) {
      if (run.status === RUN_STATUS.queued) continue;
      const elapsedMs = now() - (run.startedAt ?? run.claimedAt ?? run.createdAt);
      activeWorkspaces[run.key] = {
        runId: run.id,
        stage: run.stage,
        status: run.status,
        workspaceId: run.workspaceId,
        workspaceName: run.workspaceName,
        elapsed: Math.floor(elapsedMs / 1000),
        elapsedMs,
      };
    }
    return c.json({
      pending: stats.queued,
      active: stats.provisioning + stats.running,
      activeWorkspaces,
      failed: stats.failed,
      dead: stats.dead,
      concurrency: stats.concurrency,
      paused: stats.paused,
    });
  });
  return app;
}
