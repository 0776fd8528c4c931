import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createServeWorld, type ServeWorld } from '../helpers/serve-world.js';
import { until } from '../helpers/until.js';

/**
 * The concurrency limit counts runs, and a run's slot is free at its callback while its runner is
 * still on its way out: live runner processes may exceed the limit by the ones handing their slot
 * over (one per slot), never more. Sampled from /proc while a queue of quick runs drains.
 */
const LIMIT = 2;
const RUNS = 8;

let world: ServeWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

/**
 * The runners of this test's server: node processes whose workspace (a mount of their sandbox)
 * lies in its data directory. (Their CALLBACK_URL is baton.internal, the same for every server.)
 */
function liveRunners(dataDir: string): number {
  const marker = ` ${path.join(dataDir, 'workspaces')}/`;
  let count = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv[0]?.endsWith('node') || !argv.some((a) => a.endsWith('agent-cli.ts'))) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/^\S+ \(.*\) [ZX]/.test(stat)) continue;
      if (fs.readFileSync(`/proc/${entry}/mountinfo`, 'utf8').includes(marker)) count += 1;
    } catch {
      // Exited meanwhile.
    }
  }
  return count;
}

describe('concurrency slots', () => {
  it(`keep live runners within the limit plus one handing over per slot (limit ${LIMIT}, ${RUNS} runs)`, async () => {
    world = await createServeWorld({
      name: 'slots',
      agent: ['/bin/sh', '-c', `echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done"}'`],
      env: { QUEUE_CONCURRENCY: String(LIMIT) },
    });
    await world.start();
    const { engine, runs: queries } = world;

    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, liveRunners(world!.fixture.dataDir))), 10);
    try {
      const ids: number[] = [];
      for (let n = 1; n <= RUNS; n++) ids.push((await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n })).run.id);
      await until(
        async () => {
          const runs = await Promise.all(ids.map((id) => queries.get(id)));
          return runs.every((r) => r?.status === 'succeeded');
        },
        `all ${RUNS} runs to succeed`,
        180_000,
      );
      await until(() => liveRunners(world!.fixture.dataDir) === 0, 'every runner to be gone');
    } finally {
      clearInterval(sampler);
    }
    console.log(`[slots] limit ${LIMIT}: at most ${most} live runners while ${RUNS} runs drained`);
    // The sampler saw the runs at work (it can fail to, only if it never ran while a runner lived).
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2 * LIMIT);
  }, 240_000);
});
