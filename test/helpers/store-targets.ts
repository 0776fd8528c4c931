/**
 * The stores an integration suite runs against: a real SQLite file in a temp dir, and a real
 * PostgreSQL (`TEST_DATABASE_URL`, default postgres://postgres@127.0.0.1:5432/test) with each
 * store in its own schema. When PostgreSQL is unreachable the PostgreSQL suite is skipped with a
 * visible message, except under CI=true, where it must run (and fail).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/index.js';

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface StoreTarget {
  name: 'sqlite' | 'postgres';
  skip: boolean;
  /**
   * A fresh, migrated database. `connect()` opens another Store on the same database (a second
   * replica). `cleanup()` closes every store opened and removes the database.
   */
  open(): Promise<{ store: Store; connect(): Promise<Store>; cleanup(): Promise<void> }>;
}

export async function postgresReachable(url = PG_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export async function storeTargets(suite: string): Promise<StoreTarget[]> {
  const reachable = await postgresReachable();
  const skipPostgres = !reachable && process.env.CI !== 'true';
  if (skipPostgres) {
    console.warn(`[${suite}] PostgreSQL at ${PG_URL} is unreachable: SKIPPING the PostgreSQL suite (it runs when CI=true).`);
  }
  return [
    {
      name: 'sqlite',
      skip: false,
      async open() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-outbox-'));
        const url = `sqlite:${path.join(dir, 'baton.db')}`;
        const stores: Store[] = [];
        const connect = async () => {
          const store = createStore({ url });
          stores.push(store);
          return store;
        };
        const store = await connect();
        await store.migrate();
        return {
          store,
          connect,
          async cleanup() {
            for (const s of stores) await s.close();
            fs.rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    },
    {
      name: 'postgres',
      skip: skipPostgres,
      async open() {
        const schema = `t_${crypto.randomBytes(6).toString('hex')}`;
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        await admin.query(`CREATE SCHEMA ${schema}`);
        const stores: Store[] = [];
        const connect = async () => {
          const store = createStore({ url: PG_URL, schema, poolSize: 4 });
          stores.push(store);
          return store;
        };
        const store = await connect();
        await store.migrate();
        return {
          store,
          connect,
          async cleanup() {
            for (const s of stores) await s.close();
            await admin.query(`DROP SCHEMA ${schema} CASCADE`);
            await admin.end();
          },
        };
      },
    },
  ];
}
