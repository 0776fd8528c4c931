export const PEER_NAMES = [
  'baton-sqlite',
  'baton-sqlite-full',
  'baton-postgres',
  'baton-postgres-2r',
  'baton-postgres-comments',
  'graphile-worker',
  'pg-boss',
  'bullmq',
] as const;
export type PeerName = (typeof PEER_NAMES)[number];

export interface BenchOptions {
  only: PeerName[];
  /** Jobs for the enqueue and the claim→complete phases. @default 20000 */
  jobs: number;
  /** Jobs in flight per worker (baton: queue.concurrency). @default 10 */
  concurrency: number;
  /** Concurrent enqueue callers in the enqueue phase. @default 10 */
  producers: number;
  /** Jobs per second of the latency stream. @default 200 */
  rate: number;
  /** Length of the latency stream. @default 10 */
  seconds: number;
  /** Upper bound of each throughput phase; what finished by then is what is reported. @default 20 */
  phaseTimeoutSeconds: number;
  /** How long the latency phase waits for stragglers after the stream ends. @default 5 */
  drainSeconds: number;
  /** Jobs per pg-boss fetch (pg-boss 10 has no per-job concurrency). @default 20 */
  pgbossBatch: number;
  pgUrl: string;
  redisUrl: string;
  help: boolean;
}

export const USAGE = `usage: npm run bench:queue -- [options]

  --only=a,b,...        peers to run (default: all): ${PEER_NAMES.join(', ')}
  --jobs=N              jobs for the enqueue and claim→complete phases (20000)
  --concurrency=N       jobs in flight per worker; baton's queue.concurrency (10)
  --producers=N         concurrent enqueue callers (10)
  --rate=N              jobs/s of the latency stream (200)
  --seconds=N           length of the latency stream (10)
  --phase-timeout=S     upper bound of each throughput phase in seconds (20)
  --drain=S             wait for late claims after the stream (5)
  --pgboss-batch=N      pg-boss batchSize per work() loop (20)
  --pg-url=URL          PostgreSQL (postgres://postgres@127.0.0.1:5432/test)
  --redis-url=URL       Redis (redis://127.0.0.1:6379)`;

/** Parses `--key=value` arguments; returns every problem at once, each naming the argument. */
export function parseBenchArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): BenchOptions | { errors: string[] } {
  const errors: string[] = [];
  const values = new Map<string, string>();
  let help = false;
  for (const arg of argv) {
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!match) {
      errors.push(`unknown argument "${arg}": expected --name=value (see --help)`);
      continue;
    }
    values.set(match[1]!, match[2]!);
  }

  const number = (name: string, fallback: number, min: number): number => {
    const raw = values.get(name);
    values.delete(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min) {
      errors.push(`--${name} must be a number >= ${min}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const whole = (name: string, fallback: number, min: number): number => {
    const raw = values.get(name);
    const value = number(name, fallback, min);
    if (raw !== undefined && !Number.isInteger(value)) errors.push(`--${name} must be a whole number >= ${min}, got "${raw}"`);
    return Math.floor(value);
  };
  const text = (name: string, fallback: string): string => {
    const raw = values.get(name);
    values.delete(name);
    return raw ?? fallback;
  };

  let only: PeerName[] = [...PEER_NAMES];
  const onlyRaw = values.get('only');
  values.delete('only');
  if (onlyRaw !== undefined) {
    const names = onlyRaw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = names.filter((n) => !(PEER_NAMES as readonly string[]).includes(n));
    if (unknown.length > 0 || names.length === 0) {
      errors.push(`--only must list peers from ${PEER_NAMES.join(', ')}, got "${onlyRaw}"`);
    } else {
      only = PEER_NAMES.filter((n) => names.includes(n));
    }
  }

  const options: BenchOptions = {
    only,
    jobs: whole('jobs', 20_000, 1),
    concurrency: whole('concurrency', 10, 1),
    producers: whole('producers', 10, 1),
    rate: number('rate', 200, 1),
    seconds: number('seconds', 10, 0.1),
    phaseTimeoutSeconds: number('phase-timeout', 20, 1),
    drainSeconds: number('drain', 5, 0),
    pgbossBatch: whole('pgboss-batch', 20, 1),
    pgUrl: text('pg-url', env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'),
    redisUrl: text('redis-url', env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'),
    help,
  };
  for (const name of values.keys()) errors.push(`unknown option --${name} (see --help)`);
  return errors.length > 0 ? { errors } : options;
}
