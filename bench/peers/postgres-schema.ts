import pg from 'pg';

/** Creates or drops a schema on a short-lived connection, so no pool outlives the call. */
export async function withAdminClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export function createSchema(url: string, schema: string): Promise<void> {
  return withAdminClient(url, async (client) => {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.query(`CREATE SCHEMA ${schema}`);
  });
}

export function dropSchema(url: string, schema: string): Promise<void> {
  return withAdminClient(url, async (client) => {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });
}
