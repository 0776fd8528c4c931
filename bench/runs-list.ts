/**
 * What the dashboard's pages cost with many runs in the store: the API calls the runs list
 * (`GET /api/runs` with each filter, the search, the keyset cursor; `GET /api/queue/stats` beside
 * it) and the issue view (`GET /api/issues/OWNER/REPO/N`) make, answered by baton's own app
 * (`createApp`, token check and JSON included) in this process, on a SQLite file and on PostgreSQL
 * (a schema of its own, dropped afterwards). The peer, in the same run: the same page read with
 * OFFSET instead of the cursor, the paging the cursor replaced.
 *
 *   npm run bench:runs-list [-- --runs=100000 --samples=200 --only=sqlite,postgres --pg-url=URL]
 *
 * Sequential requests, p50 and p99 in ms, on whatever else the machine does (the load average is
 * printed). Asserts nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Insertable } from 'kysely';
import pino from 'pino';
import { createApp, loadConfig } from '../src/server/index.js';
import { createStore, type Database, type Store } from '../src/store/index.js';
import { createMemoryProvider } from '../src/workspaces/index.js';
import { createSchema, dropSchema } from './peers/postgres-schema.js';

const STORES = ['sqlite', 'postgres'] as const;
type StoreKind = (typeof STORES)[number];

interface Options {
  runs: number;
  samples: number;
  /** Upper bound of one row's sampling; a slow call gets fewer samples (the report says how many). */
  rowSeconds: number;
  only: StoreKind[];
  pgUrl: string;
}

function parseArgs(argv: readonly string[]): Options {
  const values = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!match)
      throw new Error(`unknown argument "${arg}": expected --runs=N, --samples=N, --row-seconds=S, --only=sqlite,postgres or --pg-url=URL`);
    values.set(match[1]!, match[2]!);
  }
  const whole = (name: string, fallback: number) => {
    const raw = values.get(name);
    values.delete(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`--${name} must be a whole number >= 1, got "${raw}"`);
    return Number(raw);
  };
  const only = (values.get('only') ?? STORES.join(',')).split(',').map((s) => s.trim());
  values.delete('only');
  const unknownStore = only.find((s) => !(STORES as readonly string[]).includes(s));
  if (unknownStore !== undefined) throw new Error(`--only must list stores from ${STORES.join(', ')}, got "${unknownStore}"`);
  const pgUrl = values.get('pg-url') ?? process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  values.delete('pg-url');
  const options = {
    runs: whole('runs', 100_000),
    samples: whole('samples', 200),
    rowSeconds: whole('row-seconds', 20),
    only: only as StoreKind[],
    pgUrl,
  };
  for (const name of values.keys()) throw new Error(`unknown option --${name}`);
  return options;
}

/** Deterministic, so both stores hold the same runs. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const REPOSITORIES = 40;
const ISSUES_PER_REPOSITORY = 2_500;
/** Pull requests are numbered apart from issues, as a forge numbers both in one sequence. */
const PULL_OFFSET = 5_000;
const WORDS = ['parser', 'login', 'export', 'cache', 'retry', 'dashboard', 'config', 'timeout', 'upload', 'search', 'billing', 'token'];
const VERBS = ['Fix', 'Add', 'Speed up', 'Remove', 'Document', 'Test'];
const ERRORS = [
  'Not logged in · Please run /login',
  'API Error: 400 prompt is too long: 212000 tokens > 200000 maximum',
  'npm test failed: 3 failing',
  'git push rejected: non-fast-forward',
];
/** The newest runs are still going, as on a server at work. */
const LIVE_RUNS = 20;
const NOW = Date.now();
/** Runs over the last 14 days, oldest first (ids follow creation), inside the 30-day retention. */
const SPAN_MS = 14 * 86_400_000;

function seedRow(id: number, total: number, next: () => number): Insertable<Database['runs']> {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const createdAt = Math.round(NOW - SPAN_MS + (SPAN_MS * id) / total);
  const repo = `app-${Math.floor(next() * REPOSITORIES)}`;
  const r = next();
  const stage = r < 0.25 ? 'analyse' : r < 0.55 ? 'develop' : r < 0.85 ? 'review-code' : 'rework';
  const issue = 1 + Math.floor(next() * ISSUES_PER_REPOSITORY);
  const onPull = stage === 'review-code' || stage === 'rework';
  const number = onPull ? PULL_OFFSET + issue : issue;
  const title = `${pick(VERBS)} the ${pick(WORDS)} ${pick(WORDS)} (#${issue})`;
  const payload = onPull ? { title, headRef: `baton/issue-${issue}`, forge: 'gitea' } : { title, forge: 'gitea' };
  const s = next();
  const live = id > total - LIVE_RUNS;
  const status = live
    ? id % 2
      ? 'queued'
      : 'running'
    : s < 0.85
      ? 'succeeded'
      : s < 0.93
        ? 'failed'
        : s < 0.96
          ? 'dead'
          : s < 0.98
            ? 'cancelled'
            : 'timed_out';
  const lastError =
    status === 'failed'
      ? 'agent_error'
      : status === 'dead'
        ? 'coder: template "baton" has no active version'
        : status === 'cancelled'
          ? `superseded by #${number}`
          : status === 'timed_out'
            ? 'run limit of 120 min reached'
            : null;
  const ended = !live;
  const startedAt = status === 'queued' || status === 'dead' ? null : createdAt + 2_000;
  const duration = 60_000 + Math.floor(next() * 900_000);
  const input = 5_000 + Math.floor(next() * 200_000);
  const output = Math.floor(input / 8);
  return {
    key: `gitea:acme/${repo}#${number}:${stage}:${id}`,
    stage,
    owner: 'acme',
    repo,
    number,
    status,
    payload: JSON.stringify(payload),
    attempts: 1,
    max_attempts: 3,
    run_at: createdAt,
    lease_token: null,
    lease_expires_at: null,
    workspace_name: startedAt === null ? null : `baton-${id}`,
    workspace_id: null,
    callback_token_hash: null,
    followup: 0,
    followup_payload: null,
    last_error: lastError,
    exit_code: ended && startedAt !== null ? (status === 'succeeded' ? 0 : 1) : null,
    summary: status === 'succeeded' ? `Opened PR #${PULL_OFFSET + issue}` : status === 'failed' ? pick(ERRORS) : null,
    usage: ended && startedAt !== null ? JSON.stringify({ inputTokens: input, outputTokens: output }) : null,
    cost_usd: ended && startedAt !== null ? Math.round(input * 3 + output * 15) / 1e6 : null,
    cost_source: ended && startedAt !== null ? 'reported' : null,
    duration_ms: ended && startedAt !== null ? duration : null,
    created_at: createdAt,
    updated_at: createdAt,
    claimed_at: status === 'queued' ? null : createdAt + 1_000,
    started_at: startedAt,
    finished_at: ended ? createdAt + 2_000 + duration : null,
    token_cap: null,
    max_duration_ms: status === 'queued' ? null : 7_200_000,
    held_reason: null,
  };
}

export async function seed(store: Store, total: number): Promise<number> {
  const began = performance.now();
  const next = random(26);
  const batch = 500;
  for (let first = 1; first <= total; first += batch) {
    const rows = [];
    for (let id = first; id < Math.min(first + batch, total + 1); id++) rows.push(seedRow(id, total, next));
    // Into an empty table, in order: the row made for id N gets id N.
    await store.db.insertInto('runs').values(rows).execute();
  }
  const { max } = await store.db
    .selectFrom('runs')
    .select(({ fn }) => fn.max('id').as('max'))
    .executeTakeFirstOrThrow();
  if (Number(max) !== total) throw new Error(`seeded runs have ids up to ${max}, not ${total}`);
  // Planner statistics as autovacuum (PostgreSQL) or `PRAGMA optimize` (SQLite) keep them on a
  // server that has been running; right after a bulk load neither has run yet.
  await sql.raw(store.dialect === 'postgres' ? 'ANALYZE runs' : 'ANALYZE').execute(store.db);
  return (performance.now() - began) / 1000;
}

interface Row {
  name: string;
  /** What it reads, for the report. */
  detail: string;
  /** Sets the store up for this row (once, before its samples). */
  before?: () => Promise<void>;
  call: () => Promise<unknown>;
}

interface Result {
  name: string;
  detail: string;
  samples: number;
  p50: number;
  p99: number;
  rows: number | null;
}

async function measure(row: Row, options: Options): Promise<Result> {
  const rowsOf = (body: unknown) =>
    Array.isArray(body)
      ? body.length
      : body && typeof body === 'object' && 'runs' in body && Array.isArray(body.runs)
        ? body.runs.length
        : null;
  let rows: number | null = null;
  for (let i = 0; i < 5; i++) rows = rowsOf(await row.call()); // warm caches and statements
  const samples: number[] = [];
  const deadline = performance.now() + options.rowSeconds * 1000;
  while (samples.length < options.samples && (samples.length < 20 || performance.now() < deadline)) {
    const began = performance.now();
    await row.call();
    samples.push(performance.now() - began);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)]!;
  return { name: row.name, detail: row.detail, samples: samples.length, p50: at(0.5), p99: at(0.99), rows };
}

async function benchStore(kind: StoreKind, options: Options): Promise<{ results: Result[]; seedSeconds: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-runs-list-'));
  const schema = `bench_runs_list_${process.pid}`;
  if (kind === 'postgres') await createSchema(options.pgUrl, schema);
  const store =
    kind === 'sqlite'
      ? createStore({ url: `sqlite:${path.join(dir, 'baton.db')}` })
      : createStore({ url: options.pgUrl, schema, poolSize: 10 });
  try {
    await store.migrate();
    const seedSeconds = await seed(store, options.runs);
    const { config } = loadConfig({ BATON_DATA_DIR: dir, LOG_LEVEL: 'silent', DATABASE_URL: 'sqlite:unused.db' }, dir);
    // The app is not started: no dispatcher claims the queued runs, no sweeper prunes. Its HTTP
    // routes answer all the same, behind the same token check.
    const app = createApp(config, { logger: pino({ level: 'silent' }), store, provider: createMemoryProvider() });
    const { token } = await app.tokens.create('bench', 'read');
    const headers = { authorization: `Bearer ${token}` };
    const api = async (url: string) => {
      const response = await app.hono.request(url, { headers });
      if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
      return response.json();
    };
    const n = options.runs;
    const deep = Math.floor(n / 2);
    const last = n - 50;
    const page = (offset: number) => store.db.selectFrom('runs').selectAll().orderBy('id', 'desc').limit(51).offset(offset).execute();
    const keyset = (depth: number) =>
      store.db
        .selectFrom('runs')
        .selectAll()
        .where('id', '<', n - depth + 1)
        .orderBy('id', 'desc')
        .limit(51)
        .execute();
    // An issue with runs of its own and of its pull request: the one of the newest develop run.
    const issueOf = await store.db
      .selectFrom('runs')
      .select(['repo', 'number'])
      .where('stage', '=', 'develop')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    const dayAgo = NOW - 86_400_000;
    const weekAgo = NOW - 7 * 86_400_000;
    const rows: Row[] = [
      { name: 'runs list, first page', detail: '/api/runs?limit=50', call: () => api('/api/runs?limit=50') },
      {
        name: `runs list, page at ${deep.toLocaleString('en-US')} (cursor)`,
        detail: `cursor=${n - deep + 1}`,
        call: () => api(`/api/runs?limit=50&cursor=${n - deep + 1}`),
      },
      {
        name: 'runs list, last page (cursor)',
        detail: `cursor=${n - last + 1}`,
        call: () => api(`/api/runs?limit=50&cursor=${n - last + 1}`),
      },
      {
        name: 'runs list, failing',
        detail: 'status=failed,dead,timed_out',
        call: () => api('/api/runs?limit=50&status=failed,dead,timed_out'),
      },
      {
        name: 'runs list, live',
        detail: `status=queued,provisioning,running (${LIVE_RUNS} runs)`,
        call: () => api('/api/runs?limit=50&status=queued,provisioning,running'),
      },
      { name: 'runs list, one stage', detail: 'stage=rework', call: () => api('/api/runs?limit=50&stage=rework') },
      { name: 'runs list, one repository', detail: 'repo=acme/app-7', call: () => api('/api/runs?limit=50&repo=acme/app-7') },
      {
        name: 'runs list, repository + failing',
        detail: 'repo=acme/app-7&status=failed,dead,timed_out',
        call: () => api('/api/runs?limit=50&repo=acme/app-7&status=failed,dead,timed_out'),
      },
      { name: 'runs list, last 24 h', detail: 'since=24h ago', call: () => api(`/api/runs?limit=50&since=${dayAgo}`) },
      { name: 'runs list, older than a week', detail: 'until=7 days ago', call: () => api(`/api/runs?limit=50&until=${weekAgo}`) },
      {
        name: 'runs list, one stage, last 24 h, page 2',
        detail: 'stage=rework&since=24h ago&cursor',
        call: async () => {
          const first = (await api(`/api/runs?limit=50&stage=rework&since=${dayAgo}`)) as { nextCursor: string | null };
          return api(`/api/runs?limit=50&stage=rework&since=${dayAgo}${first.nextCursor ? `&cursor=${first.nextCursor}` : ''}`);
        },
      },
      { name: 'runs list, search (common word)', detail: 'q=parser', call: () => api('/api/runs?limit=50&q=parser') },
      { name: 'runs list, search (no match)', detail: 'q=zebra: every run read', call: () => api('/api/runs?limit=50&q=zebra') },
      {
        name: 'runs list, search an issue number',
        detail: `q=#${issueOf.number} (all repositories)`,
        call: () => api(`/api/runs?limit=50&q=%23${issueOf.number}`),
      },
      { name: 'queue stats (beside the list)', detail: '/api/queue/stats', call: () => api('/api/queue/stats') },
      {
        name: 'issue view',
        detail: `/api/issues/acme/${issueOf.repo}/${issueOf.number}`,
        call: () => api(`/api/issues/acme/${issueOf.repo}/${issueOf.number}`),
      },
      { name: 'query: keyset page at depth 0', detail: 'id < cursor ORDER BY id DESC LIMIT 51', call: () => keyset(0) },
      { name: 'peer: OFFSET page at depth 0', detail: 'ORDER BY id DESC LIMIT 51 OFFSET 0', call: () => page(0) },
      { name: `query: keyset page at depth ${deep.toLocaleString('en-US')}`, detail: 'the cursor', call: () => keyset(deep) },
      { name: `peer: OFFSET page at depth ${deep.toLocaleString('en-US')}`, detail: `OFFSET ${deep}`, call: () => page(deep) },
      { name: `query: keyset page at depth ${last.toLocaleString('en-US')}`, detail: 'the cursor', call: () => keyset(last) },
      { name: `peer: OFFSET page at depth ${last.toLocaleString('en-US')}`, detail: `OFFSET ${last}`, call: () => page(last) },
    ];
    // Last, as it changes the store: the counts as they were before migration 0121's index.
    rows.push({
      name: 'peer: queue stats without the counts index',
      detail: 'runs_stage_status dropped',
      before: async () => {
        await sql`DROP INDEX runs_stage_status`.execute(store.db);
        await sql.raw(store.dialect === 'postgres' ? 'ANALYZE runs' : 'ANALYZE').execute(store.db);
      },
      call: () => api('/api/queue/stats'),
    });
    const results: Result[] = [];
    for (const row of rows) {
      await row.before?.();
      const result = await measure(row, options);
      results.push(result);
      console.error(`  ${kind}: ${result.name}: p50 ${fmt(result.p50)} ms, p99 ${fmt(result.p99)} ms (${result.samples} samples)`);
    }
    return { results, seedSeconds };
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
    if (kind === 'postgres') await dropSchema(options.pgUrl, schema);
  }
}

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const loadStart = os.loadavg()[0]!;
  const began = performance.now();
  const byStore = new Map<StoreKind, { results: Result[]; seedSeconds: number }>();
  for (const kind of options.only) {
    console.error(`${kind}: seeding ${options.runs.toLocaleString('en-US')} runs…`);
    byStore.set(kind, await benchStore(kind, options));
  }
  const kinds = [...byStore.keys()];
  const first = byStore.get(kinds[0]!)!.results;
  const header = ['call', 'reads', ...kinds.flatMap((k) => [`${k} p50`, `${k} p99`, 'n'])];
  const table = first.map((r, i) => [
    r.name,
    r.detail,
    ...kinds.flatMap((k) => {
      const x = byStore.get(k)!.results[i]!;
      return [fmt(x.p50), fmt(x.p99), String(x.samples)];
    }),
  ]);
  const out = [
    '',
    `machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim()}), Node ${process.version}, ${os.platform()} ${os.release()}`,
    `runs in the store: ${options.runs.toLocaleString('en-US')}; ${kinds.map((k) => `${k} seeded in ${byStore.get(k)!.seedSeconds.toFixed(1)} s`).join(', ')}`,
    `load average (1 min): ${loadStart.toFixed(2)} at start, ${os.loadavg()[0]!.toFixed(2)} at end; total ${((performance.now() - began) / 1000).toFixed(0)} s`,
    '',
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...table.map((cells) => `| ${cells.join(' | ')} |`),
    '',
    'ms per call, sequential; API rows are app.hono.request() with a read token (routing, token check, query, JSON); query and peer rows are the SQL alone.',
  ];
  console.log(out.join('\n'));
}

// Imported (to seed a store for EXPLAIN, say), it only exports.
if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
