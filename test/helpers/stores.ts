import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/index.js';

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let pgReachable: Promise<boolean> | undefined;

/**
 * Whether the local PostgreSQL answers. Under CI it must: a CI run without PostgreSQL fails
 * instead of quietly testing only SQLite.
 */
export function postgresAvailable(): Promise<boolean> {
  pgReachable ??= (async () => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch (err) {
      if (process.env.CI === 'true') throw new Error(`PostgreSQL at ${PG_URL} is required under CI: ${(err as Error).message}`);
      console.warn(`PostgreSQL at ${PG_URL} is not reachable (${(err as Error).message}): the PostgreSQL suites are skipped.`);
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return pgReachable;
}

export interface TestStore {
  store: Store;
  /** The URL another process can open (PostgreSQL tests add the schema via `schema`). */
  url: string;
  schema?: string;
  cleanup(): Promise<void>;
}

export async function createSqliteTestStore(): Promise<TestStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-sqlite-'));
  const url = `sqlite:${path.join(dir, 'baton.db')}`;
  const store = createStore({ url });
  return {
    store,
    url,
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let schemaCounter = 0;

/** A fresh schema per test, dropped afterwards, so suites never see each other's rows. */
export async function createPostgresTestStore(options: { poolSize?: number } = {}): Promise<TestStore> {
  const schema = `t_${process.pid}_${Date.now().toString(36)}_${schemaCounter++}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const store = createStore({ url: PG_URL, schema, poolSize: options.poolSize });
  return {
    store,
    url: PG_URL,
    schema,
    async cleanup() {
      await store.close();
      const drop = new pg.Client({ connectionString: PG_URL });
      await drop.connect();
      await drop.query(`DROP SCHEMA ${schema} CASCADE`);
      await drop.end();
    },
  };
}

/** Both engines, for `describe.each`: the same suite runs against SQLite and PostgreSQL. */
export const STORE_KINDS = [
  { kind: 'sqlite' as const, create: createSqliteTestStore, available: async () => true },
  { kind: 'postgres' as const, create: createPostgresTestStore, available: postgresAvailable },
];
