import type { MaintenanceRepo } from './config-section.js';
import type { TaskRequest } from '../runs/index.js';
import { DEFAULT_SKIP_PERMISSIONS } from './stages.js';
import type { Pipeline } from './types.js';

/**
 * The runs one firing of the maintenance schedule asks for: one per configured repository for each
 * stage with a `cron` trigger (the default table has one: `maintenance`). With `slot` (the fire
 * time, e.g. `2026-11-30T09:00Z`) the dedup key names the slot, so schedulers on several replicas
 * create each run once.
 */
export function maintenanceRequests(repos: readonly MaintenanceRepo[], pipeline: Pipeline, options: { slot?: string } = {}): TaskRequest[] {
  const stages = pipeline.stages.filter((s) => s.triggers.some((t) => t.event === 'cron'));
  return stages.flatMap((stage) =>
    repos.map((r): TaskRequest => {
      const request: TaskRequest = {
        stage: stage.name,
        owner: r.owner,
        repo: r.repo,
        onDuplicate: stage.onDuplicate,
        payload: {
          account: stage.account,
          accountUser: pipeline.accounts[stage.account],
          build: stage.build,
          ...(stage.setupTokens?.length ? { setupTokens: stage.setupTokens } : {}),
          skipPermissions: stage.skipPermissions ?? DEFAULT_SKIP_PERMISSIONS,
          trigger: options.slot ? `schedule ${options.slot}` : 'schedule',
        },
      };
      // The same form as runs' slot keys (src/runs/keys.ts `slotKey`).
      if (options.slot) request.key = `${stage.name}:${r.owner}/${r.repo}@${options.slot}`;
      return request;
    }),
  );
}
