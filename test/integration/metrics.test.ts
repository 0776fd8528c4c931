import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signBody } from '../../src/ingress/signature.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const SECRET = 'metrics-webhook-secret';

describe.each(STORE_KINDS)('GET /metrics on $kind', ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    server = await startTestApp(t, { env: { WEBHOOK_SECRET: SECRET } });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  const scrape = async () => {
    const response = await fetch(`${server.url}/metrics`, { headers: bearer() });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const families = parsePrometheusTextFormat(text);
    const family = (name: string) => families.find((f) => f.name === name);
    const value = (name: string, labels: Record<string, string> = {}) => {
      const sample = family(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
      return sample?.value === undefined ? undefined : Number(sample.value);
    };
    return { text, families, family, value };
  };

  it('needs a token unless api.publicMetrics is set', async () => {
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
  });

  it('counts incoming forge webhook deliveries by result', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/webhook/gitea`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-gitea-signature': signBody(body, SECRET), ...headers },
      });
    expect((await post('{"not":"an event"}', { 'x-gitea-event': 'star', 'x-gitea-delivery': 'd-1' })).status).toBe(202);
    expect((await post('{broken', { 'x-gitea-event': 'issues', 'x-gitea-delivery': 'd-2' })).status).toBe(400);
    expect((await post('{}', { 'x-gitea-event': 'issues', 'x-gitea-delivery': 'd-3', 'x-gitea-signature': '' })).status).toBe(401);
    const m = await scrape();
    expect(m.value('baton_webhook_received_total', { result: 'accepted' })).toBe(1);
    expect(m.value('baton_webhook_received_total', { result: 'rejected' })).toBe(1);
    expect(m.value('baton_webhook_received_total', { result: 'unauthorized' })).toBe(1);
  });

  it('reports runs by stage and status, queue depth, live workspaces, histograms, usage and module counters', async () => {
    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    // The dispatcher provisions it on the in-memory provider.
    await until(async () => (await runs.get(run.id))?.status === 'running', `run ${run.id} to be running`);

    let m = await scrape();
    expect(m.value('baton_live_workspaces')).toBe(1);
    expect(m.value('baton_runs', { stage: 'develop', status: 'running' })).toBe(1);

    await engine.complete(run.id, { status: 'succeeded', usage: { inputTokens: 1000, outputTokens: 200 }, costUsd: 0.42 });
    await engine.pause();
    await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 8 });
    await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 9 });
    server.app.metrics.counter('baton_example_total', 'A counter another module adds.').inc({ kind: 'x' }, 3);

    m = await scrape();
    expect(m.value('baton_runs', { stage: 'develop', status: 'succeeded' })).toBe(1);
    expect(m.value('baton_runs', { stage: 'analyse', status: 'queued' })).toBe(2);
    expect(m.value('baton_runs', { stage: 'develop', status: 'running' })).toBeUndefined();
    expect(m.value('baton_queue_depth')).toBe(2);
    expect(m.value('baton_live_workspaces')).toBe(0);
    expect(m.value('baton_queue_paused')).toBe(1);
    expect(m.value('baton_tokens_today')).toBe(1200);
    expect(m.value('baton_cost_usd_today')).toBe(0.42);
    expect(m.value('baton_run_tokens_total', { stage: 'develop' })).toBe(1200);
    expect(m.value('baton_webhook_deliveries_total', { result: 'delivered' })).toBe(0);
    expect(m.value('baton_example_total', { kind: 'x' })).toBe(3);

    // The parser folds a histogram's label sets into one (enough here: one set each); the raw
    // text carries the labels, which Prometheus itself keeps apart.
    const duration = m.family('baton_run_duration_seconds')!;
    expect(duration.type).toBe('HISTOGRAM');
    expect(Number(duration.metrics[0]!.buckets!['+Inf'])).toBe(1);
    expect(Number(duration.metrics[0]!.buckets!['0.05'])).toBeLessThanOrEqual(1);
    const latency = m.family('baton_dispatch_latency_seconds')!;
    expect(latency.type).toBe('HISTOGRAM');
    expect(Number(latency.metrics[0]!.buckets!['+Inf'])).toBe(1);
    expect(m.text).toContain('baton_run_duration_seconds_count{stage="develop",status="succeeded"} 1');
    expect(m.text).toContain('baton_dispatch_latency_seconds_count{stage="develop"} 1');
  });
});
