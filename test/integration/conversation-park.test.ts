import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryProvider, type WorkspaceSpec } from '../../src/workspaces/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'conversation-test-webhook-secret';

/**
 * The server's side of a conversation, with the workspace's calls made by the test: a run whose
 * agent asked waits without its workspace or slot, its question is posted, a reply from a write
 * user resumes it in a new workspace with the session to resume and the transcript kept, and a
 * question without a reply expires.
 */
describe.each(STORE_KINDS)('a conversation on $kind', ({ kind, create }) => {
  let t: TestStore;
  let gitea: FakeGitea;
  let app: TestApp | undefined;
  let provider: MemoryProvider;
  let issue: number;

  const start = async (env: Record<string, string> = {}) => {
    provider = createMemoryProvider();
    app = await startTestApp(t, {
      env: {
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: 'claude-dev-token',
        GITEA_REVIEW_TOKEN: 'claude-review-token',
        WEBHOOK_SECRET: SECRET,
        QUEUE_CONCURRENCY: '1',
        ...env,
      },
      deps: { provider },
    });
  };

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    gitea = await createFakeGitea();
    gitea.addUser('alice');
    gitea.addUser('rita');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    gitea.addCollaborator('acme', 'app', 'rita', 'read');
    for (const login of ['claude-dev', 'claude-review']) {
      gitea.addUser(login, { token: `${login}-token` });
      gitea.addCollaborator('acme', 'app', login, 'admin');
    }
    issue = gitea.addIssue('acme', 'app', { title: 'Which flag?', author: 'alice' }).number;
    gitea.addIssue('acme', 'app', { title: 'Another', author: 'alice' });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await gitea?.close();
    await t?.cleanup().catch(() => {});
  });

  const specOf = (runId: number, nth = 0) =>
    until(() => provider.created.filter((s) => s.runId === runId)[nth], `workspace ${nth + 1} of run ${runId}`);
  const call = (spec: WorkspaceSpec, path: string, init: RequestInit) =>
    fetch(`${app!.url}${new URL(spec.callbackUrl).pathname.replace(/\/complete$/, path)}`, {
      ...init,
      headers: { authorization: `Bearer ${spec.callbackToken}`, 'content-type': 'application/json', ...init.headers },
    });
  const status = async (runId: number) => (await app!.app.runs.get(runId))!.status;

  async function comment(author: string, body: string) {
    const id = gitea.addComment('acme', 'app', issue, { author, body }).id;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body, changed field by field
    const payload = fixtureJson('issue_comment-created.json') as Record<string, any>;
    payload.issue = { ...payload.issue, number: issue, state: 'open', labels: [], pull_request: null };
    payload.comment = { ...payload.comment, id, body, user: { ...payload.comment.user, login: author, username: author } };
    payload.repository = {
      ...payload.repository,
      name: 'app',
      full_name: 'acme/app',
      owner: { ...payload.repository.owner, login: 'acme' },
    };
    payload.sender = { ...payload.sender, login: author, username: author };
    const raw = toBody(payload);
    const res = await fetch(`${app!.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(raw, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
      body: raw,
    });
    const { id: delivery } = (await res.json()) as { id: number };
    return until(async () => {
      const r = await app!.app.store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', delivery).executeTakeFirst();
      return r?.status === 'processed' ? r : undefined;
    }, `delivery ${delivery}`);
  }

  async function ask(spec: WorkspaceSpec, text: string) {
    const transcript = '{"type":"user","sessionId":"5f0c1a2b-0000-4000-8000-000000000001"}\n{"type":"assistant"}\n';
    expect(
      (await call(spec, '/transcript', { method: 'PUT', body: transcript, headers: { 'content-type': 'application/x-ndjson' } })).status,
    ).toBe(200);
    const res = await call(spec, '/complete', {
      method: 'POST',
      body: JSON.stringify({
        status: 'succeeded',
        exitCode: 0,
        summary: 'asked',
        usage: { inputTokens: 100, outputTokens: 10, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        costUsd: 0.25,
        durationMs: 1000,
        question: { text, sessionId: '5f0c1a2b-0000-4000-8000-000000000001' },
      }),
    });
    expect(res.status).toBe(200);
    return transcript;
  }

  it('parks on a question, frees the slot, and resumes the same session on a write user’s reply', async () => {
    await start();
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    const first = await specOf(run.id);
    const transcript = await ask(first, 'Should the old --legacy flag keep working?');
    expect(await status(run.id)).toBe('waiting');
    const question = await until(() => gitea.comments('acme', 'app', issue).find((c) => c.body.includes('has a question')), 'the question');
    expect(question.body).toContain('> Should the old --legacy flag keep working?');
    // Its workspace goes, and its slot serves another issue meanwhile (concurrency 1).
    expect(provider.created).toHaveLength(1);
    const other = await app!.app.engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 2, payload: { account: 'dev' } });
    await specOf(other.run.id);

    // A read-only user's comment does not resume it; alice's reply does.
    expect((await comment('rita', 'just do it')).outcome).toBe('not_permitted');
    expect(await status(run.id)).toBe('waiting');
    expect((await comment('alice', 'Yes, keep it until 2.0.')).outcome).toBe('started');
    expect((await app!.app.runs.get(run.id))!.payload.resume).toEqual({
      sessionId: '5f0c1a2b-0000-4000-8000-000000000001',
      prompt: 'Yes, keep it until 2.0.',
      by: 'alice',
      // The first turn's tokens: the token cap counts the whole conversation.
      tokensBefore: 110,
      // The agent's time so far: the first turn's, from its start to its question.
      msBefore: expect.any(Number),
      // The second turn starts at the agent's second attempt; its retries count from there.
      attempt: 2,
    });
    // The other issue's run still holds the only slot: finish it, then the resumed turn starts.
    const otherSpec = await specOf(other.run.id);
    await call(otherSpec, '/complete', { method: 'POST', body: JSON.stringify({ status: 'succeeded', summary: 'done', durationMs: 1 }) });
    const second = await specOf(run.id, 1);
    expect(second.name).not.toBe(first.name);
    // The runner is told what to resume, with the reply as its prompt (BATON_RESUME_*).
    expect(second.resume).toEqual({ sessionId: '5f0c1a2b-0000-4000-8000-000000000001', reply: 'Yes, keep it until 2.0.', by: 'alice' });
    expect(await (await call(second, '/transcript', { method: 'GET' })).text()).toBe(transcript);
    await call(second, '/complete', {
      method: 'POST',
      body: JSON.stringify({
        status: 'succeeded',
        summary: 'Kept the flag until 2.0.',
        usage: { inputTokens: 50, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        costUsd: 0.5,
        durationMs: 1,
      }),
    });
    const done = await until(async () => ((await status(run.id)) === 'succeeded' ? app!.app.runs.get(run.id) : null), 'the answer');
    // The whole conversation counts.
    expect(done!.costUsd).toBeCloseTo(0.75);
    expect(done!.usage).toMatchObject({ inputTokens: 150, outputTokens: 15 });
    await until(
      () => gitea.comments('acme', 'app', issue).find((c) => c.body.includes('Kept the flag until 2.0.')),
      'the answer on the issue',
    );
  });

  it('ends a question nobody answers as expired, with a comment', async () => {
    await start({ RUN_REPLY_WAIT_HOURS: '0.001', SWEEP_MINUTES: '0.05' });
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    await ask(await specOf(run.id), 'Which database?');
    await until(async () => (await status(run.id)) === 'expired', 'the run to expire');
    await until(() => gitea.comments('acme', 'app', issue).find((c) => c.body.includes('got none in time')), 'the expiry comment');
  });

  it('asks several questions in one run: each parks it, each reply resumes the same session as a turn, the whole conversation counts', async () => {
    await start();
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    const questions = () => gitea.comments('acme', 'app', issue).filter((c) => c.body.includes('has a question'));
    await ask(await specOf(run.id), 'Which database?');
    await until(() => questions().length === 1, 'the first question');
    expect((await comment('alice', 'PostgreSQL.')).outcome).toBe('started');

    // The second turn asks again: the run waits again, with the new question open.
    const second = await specOf(run.id, 1);
    expect(second.resume).toMatchObject({ reply: 'PostgreSQL.', by: 'alice' });
    await ask(second, 'Which version of PostgreSQL?');
    expect(await status(run.id)).toBe('waiting');
    await until(() => questions().length === 2, 'the second question');
    expect(questions()[1]!.body).toContain('> Which version of PostgreSQL?');
    const waiting = (await app!.app.runs.conversation(run.id))!;
    expect(waiting).toMatchObject({ question: 'Which version of PostgreSQL?', reply: null, turns: 2, costUsd: 0.5 });
    expect(waiting.usage).toMatchObject({ inputTokens: 200, outputTokens: 20 });

    expect((await comment('alice', '16, please.')).outcome).toBe('started');
    // The third turn resumes the same session with the second reply; the token cap knows both turns before.
    expect((await app!.app.runs.get(run.id))!.payload.resume).toEqual({
      sessionId: '5f0c1a2b-0000-4000-8000-000000000001',
      prompt: '16, please.',
      by: 'alice',
      tokensBefore: 220,
      msBefore: expect.any(Number),
      attempt: 3,
    });
    const third = await specOf(run.id, 2);
    expect(third.resume).toEqual({ sessionId: '5f0c1a2b-0000-4000-8000-000000000001', reply: '16, please.', by: 'alice' });
    // The duration limit counts the agent's time of both turns before, not the waits between.
    const { msBefore } = (await app!.app.runs.get(run.id))!.payload.resume as { msBefore: number };
    const [firstSpec, secondSpec] = provider.created.filter((s) => s.runId === run.id);
    expect(msBefore).toBeGreaterThan(0);
    expect(secondSpec!.maxDurationMs).toBeLessThan(firstSpec!.maxDurationMs!);
    expect(third.maxDurationMs).toBe(firstSpec!.maxDurationMs! - msBefore);
    await call(third, '/complete', {
      method: 'POST',
      body: JSON.stringify({
        status: 'succeeded',
        summary: 'PostgreSQL 16 it is.',
        usage: { inputTokens: 50, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        costUsd: 0.5,
        durationMs: 1,
      }),
    });
    const done = await until(async () => ((await status(run.id)) === 'succeeded' ? app!.app.runs.get(run.id) : null), 'the answer');
    expect(done!.costUsd).toBeCloseTo(1.0);
    expect(done!.usage).toMatchObject({ inputTokens: 250, outputTokens: 25 });
    // Its time is the agent's of all three turns (the last reported 1 ms), not the waits.
    expect(done!.durationMs).toBe(msBefore + 1);
    expect((await app!.app.runs.conversation(run.id))!).toMatchObject({ turns: 3, reply: '16, please.', replyBy: 'alice' });
    // One run, three workspaces, one after another.
    expect(provider.created.filter((s) => s.runId === run.id)).toHaveLength(3);
  });

  it('gives a later turn the retries of its own: attempts count per turn, not per run', async () => {
    // Two attempts per turn; the third turn is the run's fourth agent attempt.
    await start({ AGENT_RUN_ATTEMPTS: '2' });
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    await ask(await specOf(run.id), 'Which database?');
    await comment('alice', 'PostgreSQL.');
    await ask(await specOf(run.id, 1), 'Which version?');
    await comment('alice', '16.');
    const third = await specOf(run.id, 2);
    const overloaded = { status: 'failed', error: 'agent_overloaded', summary: 'API Error: 529 Overloaded', durationMs: 1 };
    await call(third, '/complete', { method: 'POST', body: JSON.stringify(overloaded) });
    // Retried (its turn's first attempt failed), not failed for the run's attempts so far.
    const retried = (await app!.app.runs.get(run.id))!;
    expect(retried).toMatchObject({ status: 'queued', agentAttempt: 4 });
    const retrying = (await app!.app.runs.events(run.id)).findLast((e) => e.type === 'run:retrying');
    expect(retrying?.data).toMatchObject({ attempt: 1, attempts: 2 });
    // Its retry resumes the same session with the same reply.
    expect(retried.payload.resume).toMatchObject({ sessionId: '5f0c1a2b-0000-4000-8000-000000000001', prompt: '16.', attempt: 3 });
  });

  it('starts a retried conversation afresh, from the stage prompt, its earlier turns no longer counted', async () => {
    await start();
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    await ask(await specOf(run.id), 'Which database?');
    await comment('alice', 'PostgreSQL.');
    const resumed = await specOf(run.id, 1);
    expect(resumed.resume).toBeDefined();
    await call(resumed, '/complete', {
      method: 'POST',
      body: JSON.stringify({ status: 'failed', error: 'agent_error', summary: 'it broke', durationMs: 1 }),
    });
    await until(async () => (await status(run.id)) === 'failed', 'the resumed turn to fail');

    // Resuming again would find no session files: the last turn kept only its stream.
    await comment('alice', '@baton retry');
    const retried = await specOf(run.id, 2);
    expect(retried.resume).toBeUndefined();
    expect((await app!.app.runs.get(run.id))!.payload.resume).toBeUndefined();
    expect((await app!.app.runs.conversation(run.id))!).toMatchObject({ turns: 1, usage: null, costUsd: 0, question: null, reply: null });
  });

  it('cancels a waiting run with @baton cancel', async () => {
    await start();
    const { run } = await app!.app.engine.enqueue({
      stage: 'analyse',
      owner: 'acme',
      repo: 'app',
      number: issue,
      payload: { account: 'dev' },
    });
    await ask(await specOf(run.id), 'Which database?');
    expect(await status(run.id)).toBe('waiting');
    await comment('alice', '@baton cancel');
    expect(await status(run.id)).toBe('cancelled');
  });
});
