import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createForgeAccounts } from '../../src/forge/index.js';
import {
  createCommentHandler,
  createOutbox,
  enqueueOutbox,
  prepareOutboxInsert,
  createStatusCommentHook,
  type Outbox,
  type OutboxOptions,
} from '../../src/outbox/index.js';
import { createRunEngine, RUN_EVENT, type Run } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { createPostgresTestStore, STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('outbox on $kind', ({ kind, create }) => {
  let t: TestStore;
  let gitea: FakeGitea;
  let accounts: ReturnType<typeof createForgeAccounts>;
  const outboxes: Outbox[] = [];
  const extraStores: Store[] = [];

  /** Another handle on the same database, as a second replica would have. */
  const connect = () => {
    const store = createStore({ url: t.url, schema: t.schema });
    extraStores.push(store);
    return store;
  };

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    gitea = await createFakeGitea();
    const dev = gitea.addUser('claude-dev').token;
    const review = gitea.addUser('claude-review').token;
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    for (const bot of ['claude-dev', 'claude-review']) gitea.addCollaborator('acme', 'app', bot, 'write');
    for (let i = 0; i < 5; i++) gitea.addIssue('acme', 'app', { title: `issue ${i + 1}`, author: 'alice' });
    accounts = createForgeAccounts(
      {
        gitea: { url: gitea.url },
        bots: { dev: { username: 'claude-dev', token: dev }, review: { username: 'claude-review', token: review } },
      },
      { timeoutMs: 2_000 },
    );
  });

  afterEach(async () => {
    await Promise.all(outboxes.splice(0).map((o) => o.stop()));
    await gitea?.close();
    for (const store of extraStores.splice(0)) await store.close();
    await t?.cleanup();
  });

  const outboxOn = (store: Store, options: Partial<OutboxOptions> = {}) => {
    const outbox = createOutbox({
      store,
      handlers: { comment: createCommentHandler({ accounts }) },
      backoffBaseMs: 10,
      backoffMaxMs: 50,
      // Long: these tests pass only if wake-ups and due times drive the worker, not the poll.
      pollMs: 60_000,
      ...options,
    });
    outboxes.push(outbox);
    return outbox;
  };
  const comment = (number: number, body: string, extra: { orderingKey?: string; account?: string } = {}) => ({
    kind: 'comment',
    payload: { account: extra.account ?? 'dev', owner: 'acme', repo: 'app', number, body },
    orderingKey: extra.orderingKey ?? `comment:acme/app#${number}`,
  });
  const bodies = (number: number) => gitea.comments('acme', 'app', number).map((c) => c.body.replace(/\n\n<!-- baton:outbox:\d+ -->$/, ''));
  const statusOf = async (outbox: Outbox, id: number) => (await outbox.get(id))?.status;

  it('delivers a comment after Gitea answers 500 twice', async () => {
    const outbox = outboxOn(t.store);
    await outbox.start();
    gitea.failNext(2, { method: 'POST', status: 500 });
    const id = (await outbox.add(comment(1, 'hello')))!;

    await until(async () => (await statusOf(outbox, id)) === 'delivered', `entry ${id} to be delivered`);
    const entry = (await outbox.get(id))!;
    expect(entry.attempts).toBe(3);
    expect(entry.lastError).toBeNull();
    expect(entry.result).toMatchObject({ commentId: expect.any(Number), url: expect.stringContaining('/acme/app/issues/1#issuecomment-') });
    expect(gitea.comments('acme', 'app', 1)).toMatchObject([{ author: 'claude-dev' }]);
    expect(bodies(1)).toEqual(['hello']);
  });

  it('posts as the bot the entry names', async () => {
    const outbox = outboxOn(t.store);
    await outbox.add(comment(2, 'from review', { account: 'review' }));
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(gitea.comments('acme', 'app', 2)).toMatchObject([{ author: 'claude-review' }]);
  });

  it('keeps entries of one ordering key in order, even when the first needs retries', async () => {
    const outbox = outboxOn(t.store, { concurrency: 4 });
    // The first POST fails twice; without ordering, the later comments would overtake it.
    gitea.failNext(2, { method: 'POST' });
    for (let i = 1; i <= 5; i++) await outbox.add(comment(1, `step ${i}`));
    await outbox.add(comment(2, 'other issue'));
    await outbox.start();

    await until(() => bodies(1).length >= 5, 'five comments on issue 1');
    expect(bodies(1)).toEqual(['step 1', 'step 2', 'step 3', 'step 4', 'step 5']);
    await until(() => bodies(2).length > 0, 'the comment on issue 2');
    expect(bodies(2)).toEqual(['other issue']);
  });

  it('does not repost a comment whose answer was lost; the retry finds it by its marker', async () => {
    const outbox = createOutbox({
      store: t.store,
      handlers: {
        comment: createCommentHandler({
          accounts: createForgeAccounts(
            {
              gitea: { url: gitea.url },
              bots: { dev: { username: 'claude-dev', token: gitea.addToken('claude-dev') }, review: { username: 'r' } },
            },
            { timeoutMs: 100 },
          ),
        }),
      },
      backoffBaseMs: 600,
      random: () => 1,
      pollMs: 60_000,
    });
    outboxes.push(outbox);
    // Gitea creates the comment, but only after the client has given up waiting.
    gitea.delayNext(1, 300, { method: 'POST' });
    const id = (await outbox.add(comment(3, 'exactly once')))!;
    await outbox.start();
    await until(async () => (await statusOf(outbox, id)) === 'delivered', `entry ${id} to be delivered`);
    expect(bodies(3)).toEqual(['exactly once']);
    expect((await outbox.get(id))?.result).toMatchObject({ recovered: true });
  });

  it('loses nothing across stop and start: stop drains deliveries in flight', async () => {
    const first = outboxOn(t.store, { concurrency: 2 });
    await first.start();
    gitea.delayNext(2, 200, { method: 'POST' });
    await first.add(comment(1, 'in flight 1'));
    await first.add(comment(2, 'in flight 2'));
    await until(() => gitea.requests.filter((r) => r.method === 'POST').length >= 2, 'both deliveries to reach Gitea');
    expect(gitea.requests.filter((r) => r.method === 'POST')).toHaveLength(2);

    const stopping = first.stop();
    expect(first.stop()).toBe(stopping);
    await stopping;
    // Drained: both deliveries finished and were recorded before stop resolved.
    expect(bodies(1)).toEqual(['in flight 1']);
    expect(bodies(2)).toEqual(['in flight 2']);
    expect(await first.list({ status: 'pending' })).toEqual([]);

    // Added while stopped: nothing goes out until a worker runs again, and then that worker
    // delivers it (a loop the stopped one had left running would have claimed it first).
    const whileStopped = (await first.add(comment(4, 'while stopped')))!;
    expect(await first.list({ status: 'pending' })).toMatchObject([{ id: whileStopped }]);
    const bySecond: number[] = [];
    const deliverComment = createCommentHandler({ accounts });
    const second = outboxOn(connect(), {
      handlers: {
        comment: (entry) => {
          bySecond.push(entry.id);
          return deliverComment(entry);
        },
      },
    });
    const started = second.start();
    expect(second.start()).toBe(started);
    await until(() => bodies(4).length > 0, 'the comment added while stopped');
    expect(bodies(4)).toEqual(['while stopped']);
    expect(bySecond).toEqual([whileStopped]);

    // The first one can be started again too.
    await first.start();
    await first.add(comment(5, 'after restart'));
    await until(() => bodies(5).length > 0, 'the comment added after the restart');
    expect(bodies(5)).toEqual(['after restart']);
  });

  it('never delivers twice when two workers share the table', async () => {
    // PostgreSQL: two pools, as two replicas would have. SQLite has one writer per file and
    // baton runs one process on it; two handles in one process would stall each other in
    // better-sqlite3's synchronous busy wait, so both workers share the process's store.
    const second = kind === 'postgres' ? connect() : t.store;
    const a = outboxOn(t.store, { concurrency: 3, pollMs: 20 });
    const b = outboxOn(second, { concurrency: 3, pollMs: 20 });
    const total = 30;
    for (let i = 0; i < total; i++) {
      const number = (i % 5) + 1;
      // Half share a key per issue (ordered), half have no ordering at all.
      await a.add(comment(number, `c${i}`, i % 2 === 0 ? {} : { orderingKey: undefined }));
    }
    await Promise.all([a.start(), b.start()]);

    await until(async () => (await a.list({ status: 'delivered' })).length >= total, `${total} deliveries`);
    expect(await a.list({ status: 'delivered' })).toHaveLength(total);
    const all = [1, 2, 3, 4, 5].flatMap((n) => gitea.comments('acme', 'app', n));
    expect(all).toHaveLength(total);
    const markers = all.map((c) => /<!-- baton:outbox:(\d+) -->/.exec(c.body)?.[1]);
    expect(new Set(markers).size).toBe(total);
    // Ordered entries of each issue arrived in order.
    for (let n = 1; n <= 5; n++) {
      const ordered = bodies(n).filter((body) => Number(body.slice(1)) % 2 === 0);
      expect(ordered).toEqual([...ordered].sort((x, y) => Number(x.slice(1)) - Number(y.slice(1))));
    }
  });

  it('gives each entry to exactly one of several workers racing for the same rows', async () => {
    const handled: number[] = [];
    const handler = async (entry: { id: number }) => {
      handled.push(entry.id);
      // Give the other workers their turn while this delivery is in flight.
      await new Promise((resolve) => setImmediate(resolve));
    };
    const stores = kind === 'postgres' ? [t.store, connect(), connect()] : [t.store, t.store, t.store];
    const workers = stores.map((store) => outboxOn(store, { handlers: { test: handler }, concurrency: 10 }));
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 30; i++) await workers[0]!.add({ kind: 'test', payload: { round, i } });
      await Promise.all(workers.map((w) => w.deliverDue()));
    }
    expect(handled).toHaveLength(150);
    expect(new Set(handled).size).toBe(150);
  });

  it('posts the status comments a run’s transitions queued, in order, as the run’s bot', async () => {
    const outbox = outboxOn(t.store);
    await outbox.start();
    // Given the outbox, the hook's entries are found right after the transition commits,
    // with no explicit wake() and a 60 s poll.
    const hook = createStatusCommentHook({ accounts, outbox });
    const run: Run = {
      id: 7,
      key: 'review-code:acme/app#3',
      stage: 'review-code',
      owner: 'acme',
      repo: 'app',
      number: 3,
      status: 'queued',
      payload: { account: 'review' },
      attempts: 0,
      maxAttempts: 3,
      runAt: 0,
      workspaceName: 'baton-7',
      workspaceId: null,
      followup: false,
      lastError: null,
      exitCode: null,
      summary: null,
      usage: null,
      costUsd: null,
      durationMs: null,
      createdAt: 0,
      updatedAt: 0,
      claimedAt: null,
      startedAt: null,
      finishedAt: null,
      limits: { tokenCap: null, maxDurationMs: null },
      heldReason: null,
      agentAttempt: 1,
    };
    gitea.failNext(1, { method: 'POST' });
    const events = [RUN_EVENT.queued, RUN_EVENT.started, RUN_EVENT.succeeded];
    for (const [i, type] of events.entries()) {
      const current =
        type === 'run:succeeded' ? { ...run, status: 'succeeded' as const, summary: 'LGTM', durationMs: 90_000, costUsd: 1.5 } : run;
      await t.store.transaction((_trx, scope) =>
        hook(scope, { run: current, event: { id: i + 1, runId: 7, type, fromStatus: null, toStatus: null, data: null, createdAt: 0 } }),
      );
    }
    await until(() => bodies(3).length >= 3, 'three status comments');
    expect(gitea.comments('acme', 'app', 3).map((c) => c.author)).toEqual(['claude-review', 'claude-review', 'claude-review']);
    expect(bodies(3)).toEqual([
      '⏳ **review-code** is queued (run 7).',
      '🚀 **review-code** started in workspace `baton-7` (run 7).',
      '✅ **review-code** finished in 1m 30s · tokens n/a · cost $1.50 · run 7\n\nLGTM',
    ]);
  });

  it('is woken by the commit of an entry written in a transaction; a rolled back one has no effect', async () => {
    const outbox = outboxOn(t.store);
    await outbox.start();
    await expect(
      t.store.transaction(async (_trx, scope) => {
        await outbox.enqueue(scope, comment(5, 'rolled back'));
        throw new Error('the transition failed');
      }),
    ).rejects.toThrow('the transition failed');
    // With a 60 s poll, only the commit's wake-up can deliver this in time.
    await t.store.transaction((_trx, scope) => outbox.enqueue(scope, comment(4, 'after commit')));
    await until(() => bodies(4).length > 0, 'the comment committed with the transaction');
    expect(bodies(4)).toEqual(['after commit']);
    expect(bodies(5)).toEqual([]);
    expect((await outbox.list()).map((e) => (e.payload as { body: string }).body)).toEqual(['after commit']);
  });

  it('wired to the real run engine: every run gets its status comments, in order, from its bot', async () => {
    const outbox = outboxOn(t.store);
    // No explicit wake-up anywhere: the hook's entries wake the outbox when each transition commits.
    const hooks = [createStatusCommentHook({ accounts, outbox, secrets: [gitea.addToken('claude-dev', 'not-a-real-secret-123')] })];
    const engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue, concurrency: 2 }, hooks });
    await outbox.start();

    const ok = await engine.enqueue({ stage: 'review-code', owner: 'acme', repo: 'app', number: 1, payload: { account: 'review' } });
    const bad = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 });
    const maintenance = await engine.enqueue({ stage: 'maintenance', owner: 'acme', repo: 'app' });
    const claims = await engine.claim(2);
    for (const claim of claims) {
      await engine.recordWorkspace(claim.run.id, claim.leaseToken, { workspaceName: `ws-${claim.run.id}`, callbackTokenHash: 'h' });
      await engine.markRunning(claim.run.id, claim.leaseToken, { workspaceId: `id-${claim.run.id}` });
    }
    // Gitea is down while the runs end: the engine does not notice, the outbox retries.
    gitea.failNext(3, { method: 'POST', status: 502 });
    await engine.complete(ok.run.id, { status: 'succeeded', summary: 'Looks good.', durationMs: 125_000, costUsd: 0.5 });
    await engine.complete(bad.run.id, { status: 'failed', error: 'npm test failed; token not-a-real-secret-123 rejected' });
    await engine.cancel(maintenance.run.id, 'not needed');

    await until(() => bodies(1).length >= 3 && bodies(2).length >= 3, 'three status comments on each issue');
    expect(bodies(1)).toEqual([
      `⏳ **review-code** is queued (run ${ok.run.id}).`,
      `🚀 **review-code** started in workspace \`ws-${ok.run.id}\` (run ${ok.run.id}).`,
      `✅ **review-code** finished in 2m 5s · tokens n/a · cost $0.50 · run ${ok.run.id}\n\nLooks good.`,
    ]);
    expect(gitea.comments('acme', 'app', 1).map((c) => c.author)).toEqual(['claude-review', 'claude-review', 'claude-review']);
    expect(gitea.comments('acme', 'app', 2).map((c) => c.author)).toEqual(['claude-dev', 'claude-dev', 'claude-dev']);
    // Why, in general terms only: the error text (which here even repeats a token) stays in baton.
    expect(bodies(2)[2]).toMatch(
      /^❌ \*\*develop\*\* failed after .* · run \d+\n\nThe run ended without reporting a result\. The details are in baton under run \d+\.$/,
    );
    expect(JSON.stringify(gitea.comments('acme', 'app', 2))).not.toContain('npm test failed');
    // The maintenance run has no issue: nothing was queued for it.
    expect(await outbox.list({ runId: maintenance.run.id })).toEqual([]);
  });

  it('marks a permanent failure (archived repository) failed at once, kept for inspection and retryable', async () => {
    const outbox = outboxOn(t.store);
    gitea.setArchived('acme', 'app', true);
    const id = (await outbox.add(comment(1, 'archived')))!;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, retried: 0, failed: 1 });
    const failed = (await outbox.get(id))!;
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 });
    expect(failed.lastError).toContain('423');

    // A later entry of the same issue is not held back by a failed one.
    gitea.setArchived('acme', 'app', false);
    await outbox.add(comment(1, 'next'));
    await outbox.deliverDue();
    expect(bodies(1)).toEqual(['next']);

    expect(await outbox.retry(id)).toBe(true);
    expect(await outbox.retry(id)).toBe(false);
    await outbox.deliverDue();
    expect((await outbox.get(id))?.status).toBe('delivered');
  });

  it('gives up after maxAttempts retryable failures and keeps the last error', async () => {
    const outbox = outboxOn(t.store, { maxAttempts: 3 });
    gitea.failNext(100, { method: 'POST', status: 503, body: { message: 'maintenance window' } });
    const id = (await outbox.add(comment(1, 'doomed')))!;
    await outbox.start();
    await until(async () => (await statusOf(outbox, id)) === 'failed', `entry ${id} to fail`);
    const entry = (await outbox.get(id))!;
    expect(entry.attempts).toBe(3);
    expect(entry.lastError).toContain('maintenance window');
    expect(bodies(1)).toEqual([]);
  });

  it('fails an entry for a bot account that is not configured, naming it', async () => {
    const outbox = outboxOn(t.store);
    const id = (await outbox.add(comment(1, 'x', { account: 'release' })))!;
    await outbox.deliverDue();
    expect((await outbox.get(id))?.lastError).toContain('"release"');
  });

  it('ignores a second entry with the same dedup key', async () => {
    const outbox = outboxOn(t.store);
    expect(await outbox.add({ ...comment(1, 'once'), dedupKey: 'k1' })).toEqual(expect.any(Number));
    expect(await outbox.add({ ...comment(1, 'once'), dedupKey: 'k1' })).toBeNull();
    await outbox.deliverDue();
    expect(bodies(1)).toEqual(['once']);
  });

  it('keeps working through a Gitea outage without blocking the caller', async () => {
    const outbox = outboxOn(t.store);
    await outbox.start();
    gitea.dropNext(3, { method: 'POST' });
    const id = (await outbox.add(comment(2, 'survives')))!;
    await until(async () => (await statusOf(outbox, id)) === 'delivered', `entry ${id} to be delivered`);
    expect(bodies(2)).toEqual(['survives']);
  });

  it('counts entries per status and prunes old delivered ones, keeping failed ones', async () => {
    let clock = 1_000_000;
    const outbox = outboxOn(t.store, { now: () => clock });
    await outbox.add(comment(1, 'old'));
    await outbox.deliverDue();
    gitea.setArchived('acme', 'app', true);
    await outbox.add(comment(2, 'failed'));
    await outbox.deliverDue();
    await outbox.add({ kind: 'webhook', payload: {} });
    expect(await outbox.counts()).toEqual({ pending: 1, delivered: 1, failed: 1 });

    clock += 10_000;
    expect(await outbox.prune(20_000)).toBe(0);
    expect(await outbox.prune(5_000)).toBe(1);
    expect(await outbox.counts()).toEqual({ pending: 1, delivered: 0, failed: 1 });
  });

  it('leaves entries of kinds it has no handler for to another worker', async () => {
    const outbox = outboxOn(t.store);
    const id = (await outbox.add({ kind: 'webhook', payload: { url: 'http://x' }, orderingKey: 'run:1' }))!;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, retried: 0, failed: 0 });
    expect((await outbox.get(id))?.status).toBe('pending');
  });
});

describe.skipIf(!available.postgres)('outbox replicas on postgres', () => {
  it('wakes on the NOTIFY of another replica’s commit instead of waiting for its poll', async () => {
    const t = await createPostgresTestStore();
    const gitea = await createFakeGitea();
    const other = createStore({ url: t.url, schema: t.schema });
    try {
      await t.store.migrate();
      const { token } = gitea.addUser('claude-dev');
      gitea.addRepo('acme', 'app');
      gitea.addIssue('acme', 'app', { title: 'x', author: 'claude-dev' });
      const accounts = createForgeAccounts({
        gitea: { url: gitea.url },
        bots: { dev: { username: 'claude-dev', token }, review: { username: 'r' } },
      });
      const outbox = createOutbox({
        store: other,
        handlers: { comment: createCommentHandler({ accounts }) },
        pollMs: 60_000,
        wakeChannel: 'outbox_test',
      });
      await outbox.start();
      try {
        // Another replica commits a transition with its comment and its one NOTIFY.
        await t.store.transaction(async (trx) => {
          await enqueueOutbox(trx, prepareOutboxInsert(t.store), {
            kind: 'comment',
            payload: { account: 'dev', owner: 'acme', repo: 'app', number: 1, body: 'hi' },
          });
          await t.store.notify(trx, 'outbox_test', 'wake');
        });
        await until(() => gitea.comments('acme', 'app', 1).length > 0, 'the comment the NOTIFY woke the outbox for');
        expect(gitea.comments('acme', 'app', 1)).toHaveLength(1);
      } finally {
        await outbox.stop();
      }
    } finally {
      await other.close();
      await gitea.close();
      await t.cleanup();
    }
  });
});
