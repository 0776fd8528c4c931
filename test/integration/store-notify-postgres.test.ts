import { afterEach, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createPostgresTestStore, PG_URL, postgresAvailable, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

// A NOTIFY channel is database-wide: two batons sharing one PostgreSQL database in schemas of their
// own must not wake each other, while the replicas of one baton (one schema) still hear each other.

const opened: Array<TestStore | Store> = [];
afterEach(async () => {
  for (const s of opened.splice(0).reverse()) await ('cleanup' in s ? s.cleanup() : s.close());
});

describe.runIf(await postgresAvailable())('PostgreSQL notifications', () => {
  it('reach the stores of the same schema only', async () => {
    const ours = await createPostgresTestStore();
    const theirs = await createPostgresTestStore();
    opened.push(ours, theirs);
    const replica = createStore({ url: PG_URL, schema: ours.schema });
    opened.push(replica);

    const heardByReplica: string[] = [];
    const heardByTheirs: string[] = [];
    await replica.listen('baton', (payload) => payload !== null && heardByReplica.push(payload));
    await theirs.store.listen('baton', (payload) => payload !== null && heardByTheirs.push(payload));

    await ours.store.transaction((trx) => ours.store.notify(trx, 'baton', 'ours'));
    await until(() => heardByReplica.includes('ours'), 'the replica in the same schema to hear it');
    // Notifications reach a listener in commit order: had the other schema's store heard ours, it
    // would have heard it before its own, sent after.
    await theirs.store.transaction((trx) => theirs.store.notify(trx, 'baton', 'theirs'));
    await until(() => heardByTheirs.length > 0, 'the other schema to hear its own');
    expect(heardByTheirs).toEqual(['theirs']);
    expect(heardByReplica).toEqual(['ours']);
  });
});
