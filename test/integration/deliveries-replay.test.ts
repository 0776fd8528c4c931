import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { giteaHeaders, readFixture } from '../helpers/gitea-webhook.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const SECRET = 'replay-secret';
const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

interface View {
  id: number;
  source: string;
  status: string;
  outcome: string;
  verdict: string | null;
  replayOf: number | null;
  runs: Array<{ id: number; url: string }>;
}

describe.each(STORE_KINDS)('replaying a delivery on $kind', ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    // Started: the inbox worker processes what the webhook stores. The dispatcher is paused
    // below, so runs stay queued where the test can count them.
    server = await startTestApp(t, { env: { WEBHOOK_SECRET: SECRET } });
    await server.app.engine.pause();
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  const deliver = async (body: Buffer, delivery: string): Promise<number> => {
    const response = await fetch(`${server.url}/webhook/gitea`, {
      method: 'POST',
      body,
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { id: number }).id;
  };
  const show = async (id: number): Promise<View> =>
    ((await (await fetch(`${server.url}/api/deliveries/${id}`, { headers: bearer() })).json()) as { delivery: View }).delivery;
  const verdictOf = async (id: number): Promise<View> => {
    await until(async () => (await show(id)).status === 'processed', `delivery ${id} to get its verdict`);
    return show(id);
  };
  const runsOf = async () => (await server.app.runs.list({ owner: 'acme', repo: 'app' })).map((r) => r.id);

  it('creates exactly one more run, although the duplicate check refuses a redelivery of the same body', async () => {
    const body = readFixture('issues-opened.json');
    const original = await verdictOf(await deliver(body, 'delivery-1'));
    expect(original.outcome).toBe('started');
    expect(original.runs).toHaveLength(1);
    const [first] = original.runs;
    // The first run is over, so a new one for the same issue would not merge into it.
    await server.app.engine.cancel(first!.id, 'test');
    expect(await runsOf()).toEqual([first!.id]);

    // Gitea's "Redeliver": the same body under a new id. The duplicate check refuses it.
    const redelivered = await verdictOf(await deliver(body, 'delivery-2'));
    expect(redelivered.outcome).toBe('duplicate');
    expect(await runsOf()).toEqual([first!.id]);

    // An operator's replay goes past it on purpose: one more run, and only one.
    const response = await fetch(`${server.url}/api/deliveries/${original.id}/replay`, { method: 'POST', headers: bearer(ADMIN_TOKEN) });
    expect(response.status).toBe(202);
    const { delivery: copy } = (await response.json()) as { delivery: View };
    const replayed = await verdictOf(copy.id);
    expect(replayed).toMatchObject({ source: 'replay', replayOf: original.id, outcome: 'started' });
    expect(replayed.runs).toHaveLength(1);
    const second = replayed.runs[0]!.id;
    expect(second).not.toBe(first!.id);
    expect((await runsOf()).sort((a, b) => a - b)).toEqual([first!.id, second]);
    // The original keeps its own verdict and run.
    expect(await show(original.id)).toMatchObject({ outcome: 'started', runs: [{ id: first!.id }] });
  });
});
