import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForgeAccounts, ForgeClient } from '../../src/forge/index.js';
import { createOutbox, createStatusCommentHook, parseCommentTemplates, type OutboxEntry } from '../../src/outbox/index.js';
import type { Run, RunEvent, RunEventType } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';

const TOKEN = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

function makeRun(overrides: Partial<Run> = {}): Run {
  return {
    id: 12,
    key: 'develop:acme/app#42',
    stage: 'develop',
    owner: 'acme',
    repo: 'app',
    number: 42,
    status: 'queued',
    payload: {},
    attempts: 0,
    maxAttempts: 3,
    runAt: 0,
    workspaceName: null,
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
    ...overrides,
  };
}

let eventId = 0;
function makeEvent(type: RunEventType, data: Record<string, unknown> | null = null, fromStatus: RunEvent['fromStatus'] = null): RunEvent {
  return { id: ++eventId, runId: 12, type, fromStatus, toStatus: null, data, createdAt: 0 };
}

describe('status comment hook', () => {
  let dir: string;
  let store: Store;
  // The hook only checks which accounts exist; delivery is tested in test/integration/outbox.test.ts.
  const accounts: ForgeAccounts = { dev: {} as ForgeClient, review: {} as ForgeClient };

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-hook-'));
    store = createStore({ url: `sqlite:${path.join(dir, 'baton.db')}` });
    await store.migrate();
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const entries = async (): Promise<OutboxEntry[]> => (await createOutbox({ store, handlers: {} }).list()).sort((a, b) => a.id - b.id);
  const fire = (hook: ReturnType<typeof createStatusCommentHook>, run: Run, event: RunEvent) =>
    store.transaction((_trx, scope) => hook(scope, { run, event }));

  it('queues a comment for queued and started, and a final one with summary, duration, tokens and cost (computed: it says so)', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts });
    await fire(hook, makeRun(), makeEvent('run:queued'));
    await fire(hook, makeRun({ status: 'running', workspaceName: 'baton-12' }), makeEvent('run:started'));
    await fire(hook, makeRun({ status: 'running' }), makeEvent('run:progress'));
    await fire(
      hook,
      makeRun({
        status: 'succeeded',
        summary: 'Added the endpoint and tests.',
        durationMs: 252_000,
        costUsd: 0.4216,
        costSource: 'computed',
        usage: { inputTokens: 1200, outputTokens: 340, cacheReadInputTokens: 40_000, cacheCreationInputTokens: 0 },
      }),
      makeEvent('run:succeeded'),
    );

    const list = await entries();
    expect(list.map((e) => (e.payload as { body: string }).body)).toEqual([
      '⏳ **develop** is queued (run 12).',
      '🚀 **develop** started in workspace `baton-12` (run 12).',
      '✅ **develop** finished in 4m 12s · tokens 1,200 in + 40,000 cached / 340 out · cost $0.42 (computed from tokens) · run 12\n\nAdded the endpoint and tests.',
    ]);
    for (const entry of list) {
      expect(entry).toMatchObject({ kind: 'comment', orderingKey: 'comment:acme/app#42', runId: 12, status: 'pending' });
      expect(entry.payload).toMatchObject({ account: 'dev', owner: 'acme', repo: 'app', number: 42 });
    }
  });

  it.each([
    [
      'run:failed',
      makeRun({ status: 'failed', lastError: 'no_result', durationMs: 61_000 }),
      '❌ **develop** failed after 1m 1s · run 12\n\nThe agent stopped without reporting a result (it may have crashed). The details are in baton under run 12.',
    ],
    [
      'run:failed',
      makeRun({
        status: 'failed',
        lastError: 'clone_failed',
        summary: 'git clone https://git.internal/acme/app failed',
        durationMs: 1_000,
      }),
      '❌ **develop** failed after 1s · run 12\n\nThe repository could not be cloned. The details are in baton under run 12.',
    ],
    [
      'run:timed_out',
      makeRun({ status: 'timed_out', lastError: 'no callback for 120 minutes' }),
      '⌛ **develop** timed out after n/a · run 12\n\nNo result arrived in time. The details are in baton under run 12.',
    ],
    [
      'run:cancelled',
      makeRun({ status: 'cancelled', lastError: 'cancelled by operator (token "admin")' }),
      '🛑 **develop** was cancelled · run 12',
    ],
    [
      'run:dead',
      makeRun({ status: 'dead', attempts: 3, lastError: 'Coder: template 5f1c not found at /opt/coder' }),
      '💀 **develop** could not start after 3 attempts · run 12\n\nThe workspace could not be started. The details are in baton under run 12.',
    ],
  ])('always posts a final comment for %s, saying why in general terms only', async (type, run, expected) => {
    await fire(createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts }), run, makeEvent(type as RunEventType));
    const [entry] = await entries();
    expect((entry!.payload as { body: string }).body).toBe(expected);
  });

  it('says a workspace could not be set up, not what the provider answered', async () => {
    const run = makeRun({ status: 'failed', lastError: 'coder 400: parameter "gitea_token" invalid at https://coder.internal' });
    await fire(
      createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts }),
      run,
      makeEvent('run:failed', null, 'provisioning'),
    );
    const [entry] = await entries();
    expect((entry!.payload as { body: string }).body).toContain('The workspace could not be set up.');
    expect((entry!.payload as { body: string }).body).not.toContain('coder');
  });

  it('has a sentence for every reason a runner reports', async () => {
    const { FAILURE_KIND } = await import('../../src/runner-contract/index.js');
    const { RUNNER_FAILURE_SENTENCES } = await import('../../src/outbox/public-reasons.js');
    expect(Object.keys(RUNNER_FAILURE_SENTENCES).sort()).toEqual(Object.values(FAILURE_KIND).sort());
  });

  it('says so again when an operator re-queues a finished run, but not for provisioning retries', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts });
    await fire(hook, makeRun(), makeEvent('run:retrying', null, 'provisioning'));
    await fire(hook, makeRun(), makeEvent('run:requeued', { reason: 'lease expired' }, 'provisioning'));
    await fire(hook, makeRun(), makeEvent('run:requeued', { reason: 'retry requested' }, 'failed'));
    expect((await entries()).map((e) => (e.payload as { body: string }).body)).toEqual(['⏳ **develop** is queued (run 12).']);
  });

  it('posts as the run’s bot account, falling back to dev for an unknown one', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts });
    await fire(hook, makeRun({ payload: { account: 'review' } }), makeEvent('run:queued'));
    await fire(hook, makeRun({ payload: { account: 'release-bot' } }), makeEvent('run:queued'));
    expect((await entries()).map((e) => (e.payload as { account: string }).account)).toEqual(['review', 'dev']);
  });

  it('comments on nothing for a run without an issue number, or without any forge account', async () => {
    await fire(
      createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts }),
      makeRun({ number: null, stage: 'maintenance' }),
      makeEvent('run:succeeded'),
    );
    await fire(
      createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts: {} }),
      makeRun(),
      makeEvent('run:succeeded'),
    );
    expect(await entries()).toEqual([]);
  });

  it('writes inside the transition’s transaction: a rolled back transition leaves no comment', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts });
    await expect(
      store.transaction(async (_trx, scope) => {
        await hook(scope, { run: makeRun(), event: makeEvent('run:queued') });
        throw new Error('transition failed');
      }),
    ).rejects.toThrow('transition failed');
    expect(await entries()).toEqual([]);
  });

  it('uses templates from baton.yaml and skips a switched-off one', async () => {
    const { templates } = parseCommentTemplates({ queued: '', succeeded: '{{stage}} for #{{number}} took {{duration}} ({{tokens}})' });
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts, templates });
    await fire(hook, makeRun(), makeEvent('run:queued'));
    await fire(hook, makeRun({ durationMs: 3_700_000, usage: { inputTokens: 12000, outputTokens: 3400 } }), makeEvent('run:succeeded'));
    expect((await entries()).map((e) => (e.payload as { body: string }).body)).toEqual([
      'develop for #42 took 1h 1m (12,000 in / 3,400 out)',
    ]);
  });

  it('never puts a secret into a comment', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts, secrets: [TOKEN, undefined] });
    const summary = `pushed with https://claude-dev:${TOKEN}@gitea.example.com/acme/app.git\nAuthorization: token ${'f'.repeat(40)}`;
    await fire(hook, makeRun({ status: 'succeeded', summary }), makeEvent('run:succeeded'));
    const body = ((await entries())[0]!.payload as { body: string }).body;
    expect(body).not.toContain(TOKEN);
    expect(body).not.toContain('f'.repeat(40));
    expect(body).toContain('https://claude-dev:********@gitea.example.com');
  });

  it('drops delivery markers copied into a summary', async () => {
    await fire(
      createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts }),
      makeRun({ summary: 'see <!-- baton:outbox:3 --> above' }),
      makeEvent('run:succeeded'),
    );
    expect(((await entries())[0]!.payload as { body: string }).body).not.toContain('baton:outbox');
  });

  it('queues one comment per event even if the hook runs twice for it', async () => {
    const hook = createStatusCommentHook({ outbox: createOutbox({ store, handlers: {} }), accounts });
    const event = makeEvent('run:started');
    await fire(hook, makeRun(), event);
    await fire(hook, makeRun(), event);
    expect(await entries()).toHaveLength(1);
  });
});
