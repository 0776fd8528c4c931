/**
 * `npm run bench:queue`: baton's run engine on SQLite and PostgreSQL next to graphile-worker,
 * pg-boss and BullMQ, doing the same no-op work. Printed, not asserted (bench/README.md).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseBenchArgs, USAGE, type BenchOptions, type PeerName } from './options.js';
import { measurePeer, type PeerResult } from './phases.js';
import { withAdminClient } from './peers/postgres-schema.js';
import type { PeerEnvironment, QueuePeer } from './peers/types.js';
import { renderReport, type Machine } from './report.js';

async function createPeer(name: PeerName, options: BenchOptions, env: PeerEnvironment): Promise<QueuePeer> {
  // Peers load only when selected, so `--only=baton-sqlite` needs neither Redis nor PostgreSQL.
  const withConcurrency = { ...env, concurrency: options.concurrency };
  switch (name) {
    case 'baton-sqlite':
      return (await import('./peers/baton.js')).createBatonPeer({ name, kind: 'sqlite', synchronous: 'NORMAL' }, withConcurrency);
    case 'baton-sqlite-full':
      return (await import('./peers/baton.js')).createBatonPeer({ name, kind: 'sqlite', synchronous: 'FULL' }, withConcurrency);
    case 'baton-postgres':
      return (await import('./peers/baton.js')).createBatonPeer({ name, kind: 'postgres', replicas: 1 }, withConcurrency);
    case 'baton-postgres-2r':
      return (await import('./peers/baton.js')).createBatonPeer({ name, kind: 'postgres', replicas: 2 }, withConcurrency);
    case 'baton-postgres-comments':
      return (await import('./peers/baton.js')).createBatonPeer({ name, kind: 'postgres', replicas: 1, comments: true }, withConcurrency);
    case 'graphile-worker':
      return (await import('./peers/graphile-worker.js')).createGraphileWorkerPeer(env);
    case 'pg-boss':
      return (await import('./peers/pg-boss.js')).createPgBossPeer({ ...env, batchSize: options.pgbossBatch });
    case 'bullmq':
      return (await import('./peers/bullmq.js')).createBullmqPeer(env);
  }
}

async function describeMachine(options: BenchOptions): Promise<Machine> {
  const machine: Machine = {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    loadStart: os.loadavg()[0]!,
  };
  if (options.only.some((n) => n !== 'baton-sqlite' && n !== 'baton-sqlite-full' && n !== 'bullmq')) {
    machine.postgres = await withAdminClient(
      options.pgUrl,
      async (c) => (await c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v,
    ).catch(() => 'unreachable');
  }
  return machine;
}

async function main(): Promise<void> {
  const parsed = parseBenchArgs(process.argv.slice(2), process.env);
  if ('errors' in parsed) {
    console.error(`${parsed.errors.join('\n')}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (parsed.help) {
    console.log(USAGE);
    return;
  }
  const options = parsed;
  const startedAt = performance.now();
  const env: PeerEnvironment = {
    pgUrl: options.pgUrl,
    redisUrl: options.redisUrl,
    // Lower-case letters and digits only: it ends up in schema names and Redis keys.
    runId: `${process.pid.toString(36)}${Date.now().toString(36)}`,
  };
  const machine = await describeMachine(options);
  const settings =
    `${options.jobs.toLocaleString('en-US')} jobs, ${options.producers} enqueuers, worker concurrency ${options.concurrency}, ` +
    `latency stream ${options.rate} jobs/s for ${options.seconds} s, phases bounded at ${options.phaseTimeoutSeconds} s`;
  const log = (line: string) => console.error(line);
  log(`queue bench — ${settings}`);

  const results: PeerResult[] = [];
  for (const name of options.only) {
    const peer = await createPeer(name, options, env);
    log(`${peer.name} (${peer.store})`);
    results.push(await measurePeer(peer, options, log));
  }
  machine.loadEnd = os.loadavg()[0];
  machine.redis = results.find((r) => r.peer.name === 'bullmq')?.peer.version;
  console.log(renderReport(results, machine, settings, (performance.now() - startedAt) / 1000));
  if (results.some((r) => r.failed)) process.exitCode = 1;

  // Every pool and connection is closed by now; if the process lingers, say what holds it.
  setTimeout(() => {
    console.error(`bench: still running 10 s after the report; open: ${process.getActiveResourcesInfo().join(', ')}`);
    process.exit(1);
  }, 10_000).unref();
}

await main();
