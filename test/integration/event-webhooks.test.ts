import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError, RetryLaterError } from '../../src/background/index.js';
import { DEFAULTS } from '../../src/runs/index.js';
import { type EventWebhook } from '../../src/event-webhooks/index.js';
import {
  createWebhookDelivery,
  createWebhookHook,
  DELIVERY_HEADER,
  EVENT_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  verifyWebhook,
  type WebhookBody,
  type WebhookEntryPayload,
} from '../../src/event-webhooks/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createRunEngine, type RunService } from '../../src/runs/index.js';
import { bearer, startTestApp } from '../helpers/app.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

interface Received {
  event: string;
  delivery: string;
  body: WebhookBody;
  raw: string;
  signature: string;
  timestamp: string;
  verified: boolean;
}

/** A webhook receiver that verifies every delivery with its own copy of the secret, like a user's would. */
async function startReceiver(secret: string, answer: () => number = () => 200) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const signature = String(req.headers[SIGNATURE_HEADER.toLowerCase()] ?? '');
      const timestamp = String(req.headers[TIMESTAMP_HEADER.toLowerCase()] ?? '');
      const verified = verifyWebhook(secret, { signature, timestamp }, raw).ok;
      received.push({
        event: String(req.headers[EVENT_HEADER.toLowerCase()]),
        delivery: String(req.headers[DELIVERY_HEADER.toLowerCase()]),
        body: JSON.parse(raw) as WebhookBody,
        raw,
        signature,
        timestamp,
        verified,
      });
      const status = verified ? answer() : 401;
      res.writeHead(status, status === 429 ? { 'retry-after': '7' } : {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/baton`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(STORE_KINDS)('outbound event webhooks on $kind', ({ kind, create }) => {
  let t: TestStore;
  let engine: RunService;
  let entries: Array<{
    kind: string;
    payload: WebhookEntryPayload;
    orderingKey?: string | null;
    dedupKey?: string | null;
    runId?: number | null;
  }>;
  let receiverA: Awaited<ReturnType<typeof startReceiver>>;
  let receiverB: Awaited<ReturnType<typeof startReceiver>>;
  let webhooks: EventWebhook[];

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    receiverA = await startReceiver('secret-of-endpoint-a');
    receiverB = await startReceiver('secret-of-endpoint-b');
    webhooks = [
      {
        url: receiverA.url,
        secret: 'secret-of-endpoint-a',
        events: ['run.queued', 'run.started', 'run.progress', 'run.succeeded', 'run.cancelled'],
      },
      { url: receiverB.url, secret: 'secret-of-endpoint-b', events: ['run.succeeded', 'run.failed'] },
    ];
    entries = [];
    // Stands in for outbox.enqueue: the hook runs inside the engine's transaction.
    const hook = createWebhookHook({ webhooks, enqueue: async (_trx, entry) => void entries.push(entry as (typeof entries)[number]) });
    engine = createRunEngine({ store: t.store, queue: DEFAULTS.queue, hooks: [hook] });
  });
  afterEach(async () => {
    await receiverA?.close();
    await receiverB?.close();
    await t?.cleanup();
  });

  const runThrough = async () => {
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'baton-1', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w-1' });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['working'] });
    await engine.complete(run.id, {
      status: 'succeeded',
      summary: 'opened PR #12',
      usage: { inputTokens: 10, outputTokens: 5 },
      costUsd: 0.01,
    });
    return run;
  };

  it('queues one entry per subscribed endpoint, ordered per run and endpoint, deduplicated per event', async () => {
    const run = await runThrough();
    const forA = entries.filter((e) => e.payload.url === receiverA.url);
    const forB = entries.filter((e) => e.payload.url === receiverB.url);
    expect(forA.map((e) => e.payload.event)).toEqual(['run.queued', 'run.started', 'run.progress', 'run.succeeded']);
    expect(forB.map((e) => e.payload.event)).toEqual(['run.succeeded']);
    expect(new Set(forA.map((e) => e.orderingKey)).size).toBe(1);
    expect(forA[0]!.orderingKey).not.toBe(forB[0]!.orderingKey);
    expect(forA[0]!.orderingKey).toContain(`run:${run.id}`);
    expect(new Set(entries.map((e) => e.dedupKey)).size).toBe(entries.length);
    expect(entries.every((e) => e.kind === 'webhook' && e.runId === run.id)).toBe(true);
    // The secret stays in the configuration, never in the database.
    expect(JSON.stringify(entries)).not.toContain('secret-of-endpoint');
  });

  it('announces a run held by a spent budget as run.held, and its release as run.queued', async () => {
    let clock = Date.UTC(2026, 11, 1, 12, 0);
    const hook = createWebhookHook({
      webhooks: [{ url: receiverA.url, secret: 'secret-of-endpoint-a', events: ['run.queued', 'run.held'] }],
      enqueue: async (_trx, entry) => void entries.push(entry as (typeof entries)[number]),
    });
    const budgeted = createRunEngine({
      store: t.store,
      queue: DEFAULTS.queue,
      hooks: [hook],
      now: () => clock,
      budgets: { timezone: 'UTC', global: { tokens: 100 }, repositories: {}, stages: {} },
    });
    entries = [];
    const { run: spender } = await budgeted.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    const [claim] = await budgeted.claim();
    await budgeted.recordWorkspace(spender.id, claim!.leaseToken, { workspaceName: 'baton-1', callbackTokenHash: 'x' });
    await budgeted.markRunning(spender.id, claim!.leaseToken, { workspaceId: 'w-1' });
    await budgeted.complete(spender.id, { status: 'succeeded', usage: { inputTokens: 100, outputTokens: 50 } });
    const { run: waiting } = await budgeted.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 });
    expect(await budgeted.claim()).toEqual([]);
    clock = Date.UTC(2026, 11, 2, 0, 0);
    expect((await budgeted.claim()).map((c) => c.run.id)).toEqual([waiting.id]);

    const ofWaiting = entries.filter((e) => e.runId === waiting.id).map((e) => JSON.parse(e.payload.body) as WebhookBody);
    expect(ofWaiting.map((b) => [b.event, b.run.status])).toEqual([
      ['run.queued', 'queued'],
      ['run.held', 'held'],
      ['run.queued', 'queued'],
    ]);
    expect(ofWaiting[1]!.data).toMatchObject({ scope: 'global' });
  });

  it('delivers signed bodies that the receivers verify, in order, with stable delivery ids', async () => {
    const run = await runThrough();
    const registry = createMetricsRegistry();
    const deliveries = registry.counter('baton_webhook_deliveries_total', 'Outbound event webhook deliveries by result.');
    const deliver = createWebhookDelivery({ webhooks, deliveries });
    for (const entry of entries) expect(await deliver({ payload: entry.payload, attempts: 1 })).toEqual({ status: 200 });

    expect(receiverA.received.map((r) => r.event)).toEqual(['run.queued', 'run.started', 'run.progress', 'run.succeeded']);
    expect(receiverA.received.every((r) => r.verified)).toBe(true);
    expect(receiverB.received.map((r) => [r.event, r.verified])).toEqual([['run.succeeded', true]]);
    const succeeded = receiverA.received.at(-1)!.body;
    expect(succeeded).toMatchObject({
      event: 'run.succeeded',
      run: {
        id: run.id,
        key: 'develop:acme/app#7',
        status: 'succeeded',
        summary: 'opened PR #12',
        costUsd: 0.01,
        workspaceName: 'baton-1',
      },
    });
    expect(receiverA.received[2]!.body.data).toEqual({ lines: ['working'] });

    // A second attempt of the same entry: same delivery id and body, fresh signature.
    await deliver({ payload: entries[0]!.payload, attempts: 2 });
    const [first, again] = [receiverA.received[0]!, receiverA.received.at(-1)!];
    expect(again.delivery).toBe(first.delivery);
    expect(again.raw).toBe(first.raw);
    expect(again.verified).toBe(true);

    // A captured delivery replayed later is refused by the timestamp check.
    expect(
      verifyWebhook('secret-of-endpoint-a', { signature: first.signature, timestamp: first.timestamp }, first.raw, {
        nowMs: Date.now() + 10 * 60_000,
      }),
    ).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(await registry.render()).toContain('baton_webhook_deliveries_total{result="delivered"} 6');
  });
});

describe('event webhook delivery answers', () => {
  let statuses: number[];
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let deliver: ReturnType<typeof createWebhookDelivery>;
  const payload = (url: string): WebhookEntryPayload => ({ url, event: 'run.failed', deliveryId: '1-abc', body: '{"id":"evt_1"}' });

  beforeEach(async () => {
    statuses = [];
    receiver = await startReceiver('the-endpoint-secret!', () => statuses.shift() ?? 200);
    deliver = createWebhookDelivery({
      webhooks: [{ url: receiver.url, secret: 'the-endpoint-secret!', events: ['run.failed'] }],
      timeoutMs: 2_000,
    });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('retries 5xx and 408, waits for Retry-After on 429, and gives up on other 4xx', async () => {
    statuses.push(503, 408, 429, 400);
    const e503 = await deliver({ payload: payload(receiver.url), attempts: 1 }).catch((e: unknown) => e);
    expect(e503).toBeInstanceOf(Error);
    expect(e503).not.toBeInstanceOf(PermanentError);
    expect((e503 as Error).message).toMatch(/answered 503/);
    const e408 = await deliver({ payload: payload(receiver.url), attempts: 2 }).catch((e: unknown) => e);
    expect(e408).not.toBeInstanceOf(PermanentError);
    const e429 = await deliver({ payload: payload(receiver.url), attempts: 3 }).catch((e: unknown) => e);
    expect(e429).toBeInstanceOf(RetryLaterError);
    expect((e429 as RetryLaterError).delayMs).toBe(7_000);
    const e400 = await deliver({ payload: payload(receiver.url), attempts: 4 }).catch((e: unknown) => e);
    expect(e400).toBeInstanceOf(PermanentError);
    expect(await deliver({ payload: payload(receiver.url), attempts: 5 })).toEqual({ status: 200 });
  });

  it('fails permanently for an endpoint no longer configured, and retries an unreachable one', async () => {
    await expect(deliver({ payload: payload('http://127.0.0.1:1/gone'), attempts: 1 })).rejects.toBeInstanceOf(PermanentError);
    const unreachable = createWebhookDelivery({
      webhooks: [{ url: 'http://127.0.0.1:1/x', secret: 'the-endpoint-secret!', events: ['run.failed'] }],
    });
    const err = await unreachable({ payload: payload('http://127.0.0.1:1/x'), attempts: 1 }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/POST to 127\.0\.0\.1:1 failed/);
  });
});

describe.each(STORE_KINDS)('event webhooks through the app and its outbox on $kind', { timeout: 60_000 }, ({ kind, create }) => {
  it('delivers every subscribed event of a run, signed and in order, retrying a failing receiver', async (ctx) => {
    if (!available[kind]) ctx.skip();
    const t = await create();
    // The receiver fails its first two answers: the outbox must retry, without reordering.
    const answers = [503, 500];
    const receiver = await startReceiver('app-level-secret-0123', () => answers.shift() ?? 204);
    // baton.yaml names a file that holds the secret; it never holds the secret itself.
    const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-hook-secret-'));
    const secretFile = path.join(secretDir, 'hook-secret');
    fs.writeFileSync(secretFile, 'app-level-secret-0123\n', { mode: 0o600 });
    const server = await startTestApp(t, {
      file: `events:\n  webhooks:\n    - url: ${receiver.url}\n      secretFile: ${secretFile}\n      events: [run.queued, run.started, run.progress, run.succeeded]\n`,
      deps: { outbox: { backoffBaseMs: 20, backoffMaxMs: 100, pollMs: 50 } },
    });
    try {
      const { engine, runs } = server.app;
      const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
      await until(async () => (await runs.get(run.id))?.status === 'running', `run ${run.id} to be running`);
      await engine.appendEvent(run.id, 'run:progress', { lines: ['step 1'] });
      await engine.complete(run.id, { status: 'succeeded', summary: 'done' });

      const wanted = ['run.queued', 'run.started', 'run.progress', 'run.succeeded'];
      const accepted = () => receiver.received.filter((r, i) => i >= 2);
      await until(() => accepted().length >= wanted.length, 'every subscribed event to be accepted');
      expect(receiver.received.every((r) => r.verified)).toBe(true);
      // The first event was refused twice, then accepted; everything after it in order.
      expect(receiver.received.map((r) => r.event)).toEqual(['run.queued', 'run.queued', ...wanted]);
      expect(new Set(receiver.received.slice(0, 3).map((r) => r.delivery)).size).toBe(1);
      expect(accepted().at(-1)!.body.run).toMatchObject({ id: run.id, status: 'succeeded', summary: 'done' });

      const metrics = await (await fetch(`${server.url}/metrics`, { headers: bearer() })).text();
      expect(metrics).toContain('baton_webhook_deliveries_total{result="delivered"} 4');
      expect(metrics).toContain('baton_webhook_deliveries_total{result="retried"} 2');
      expect(metrics).toMatch(/baton_outbox_backlog 0/);
    } finally {
      await server.close();
      fs.rmSync(secretDir, { recursive: true, force: true });
      await receiver.close();
      await t.cleanup();
    }
  });
});
