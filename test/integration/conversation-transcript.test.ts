import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packTranscript, TRANSCRIPT_FORMAT, type TranscriptTurn } from '../../src/agent/conversation.js';
import { logsCommand, type CommandIo } from '../../src/cli/index.js';
import { createMemoryProvider, type MemoryProvider, type WorkspaceSpec } from '../../src/workspaces/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { describeWithReference } from '../helpers/reference.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'conversation-transcript-webhook-secret';
const SESSION = '5f0c1a2b-0000-4000-8000-00000000000a';
/** What the CLI's own session file holds: it resumes the session, and is never shown. */
const SESSION_FILE_TEXT = 'the-cli-session-file-not-for-people';

/**
 * A run's conversation as people read it: `GET /api/runs/:id/conversation` and the issue's
 * across its stages, built from the transcript each turn's runner uploads (the workspace's calls
 * are made by the test, the first turn's stream is Claude Code's upstream sample), `baton logs
 * --transcript` printing it, and the retention removing it with its run.
 */
describeWithReference('claude-code/stream-json-sample-turns.json', 'a run’s conversation, kept and shown', (sampleFile) => {
  const sample = (JSON.parse(fs.readFileSync(sampleFile, 'utf8')) as unknown[]).map((m) => JSON.stringify(m));

  describe.each(STORE_KINDS)('on $kind', ({ kind, create }) => {
    let t: TestStore;
    let gitea: FakeGitea;
    let app: TestApp | undefined;
    let provider: MemoryProvider;
    let issue: number;

    beforeEach(async (ctx) => {
      if (!available[kind]) ctx.skip();
      t = await create();
      gitea = await createFakeGitea();
      gitea.addUser('alice');
      gitea.addRepo('acme', 'app');
      gitea.addCollaborator('acme', 'app', 'alice', 'write');
      for (const login of ['claude-dev', 'claude-review']) {
        gitea.addUser(login, { token: `${login}-token` });
        gitea.addCollaborator('acme', 'app', login, 'admin');
      }
      issue = gitea.addIssue('acme', 'app', { title: 'Which flag?', author: 'alice' }).number;
      provider = createMemoryProvider();
      app = await startTestApp(t, {
        env: {
          GITEA_URL: gitea.url,
          GITEA_DEV_TOKEN: 'claude-dev-token',
          GITEA_REVIEW_TOKEN: 'claude-review-token',
          WEBHOOK_SECRET: SECRET,
        },
        file: 'queue:\n  retentionDays: 0\n',
        deps: { provider },
      });
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
    const get = async (path: string, headers: Record<string, string> = bearer()) => {
      const res = await fetch(`${app!.url}${path}`, { headers });
      return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- an API answer
    };

    async function upload(spec: WorkspaceSpec, turns: TranscriptTurn[], withSession: boolean) {
      const jsonl = packTranscript({
        header: { format: TRANSCRIPT_FORMAT, version: 1, agent: 'claude', cwd: '/workspace/app', sessionId: SESSION, branch: 'main' },
        files: withSession ? [{ path: `.claude/projects/-workspace-app/${SESSION}.jsonl`, content: Buffer.from(SESSION_FILE_TEXT) }] : [],
        turns,
      });
      expect(
        (await call(spec, '/transcript', { method: 'PUT', body: jsonl, headers: { 'content-type': 'application/x-ndjson' } })).status,
      ).toBe(200);
    }

    async function reply(author: string, body: string) {
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
      await fetch(`${app!.url}/webhook/gitea`, {
        method: 'POST',
        headers: giteaHeaders(raw, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
        body: raw,
      });
    }

    const firstTurn: TranscriptTurn = {
      turn: 1,
      prompt: 'Analyse issue #1 of acme/app.',
      by: 'baton',
      question: 'Should the old --legacy flag keep working?',
      stream: [
        ...sample,
        JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'Asked.', total_cost_usd: 0.0124, num_turns: 4 }),
      ],
      truncated: false,
      usage: { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      costUsd: 0.0124,
      startedAt: 1_000,
      endedAt: 13_000,
    };

    it('shows each turn: the prompt, messages, tool calls with results, the question, the reply and the cost; the CLI prints it', async () => {
      const { run } = await app!.app.engine.enqueue({
        stage: 'analyse',
        owner: 'acme',
        repo: 'app',
        number: issue,
        payload: { account: 'dev' },
      });
      const first = await specOf(run.id);
      // Nothing kept yet: an empty conversation, not an error.
      const before = await get(`/api/runs/${run.id}/conversation`);
      expect(before.status).toBe(200);
      expect(before.body).toMatchObject({ runId: run.id, kept: false, turns: [], waiting: null, reply: null });

      await upload(first, [firstTurn], true);
      await call(first, '/complete', {
        method: 'POST',
        body: JSON.stringify({
          status: 'succeeded',
          summary: 'asked',
          costUsd: 0.0124,
          durationMs: 1,
          question: { text: firstTurn.question, sessionId: SESSION },
        }),
      });
      await until(async () => (await app!.app.runs.get(run.id))!.status === 'waiting', 'the run to wait');

      const waiting = await get(`/api/runs/${run.id}/conversation`);
      expect(waiting.body).toMatchObject({ kept: true, agent: 'claude', status: 'waiting', reply: null });
      expect(waiting.body.waiting).toMatchObject({ question: firstTurn.question, for: null });
      const [turn1] = waiting.body.turns;
      expect(turn1).toMatchObject({
        turn: 1,
        by: 'baton',
        prompt: 'Analyse issue #1 of acme/app.',
        reply: null,
        question: firstTurn.question,
      });
      expect(turn1).toMatchObject({ costUsd: 0.0124, tokens: 120, startedAt: 1_000, endedAt: 13_000 });
      // The sample's assistant text and its Read call, with the file's content folded into it.
      expect(turn1.entries[0]).toEqual({ kind: 'assistant', text: expect.stringContaining('Let me start by examining the file') });
      expect(turn1.entries).toContainEqual(
        expect.objectContaining({
          kind: 'tool',
          name: 'Read',
          input: '{"file_path":"/path/to/sample/file.py"}',
          result: expect.stringContaining('def example_function'),
        }),
      );
      expect(turn1.entries.at(-1)).toMatchObject({ kind: 'result', text: 'Asked.', costUsd: 0.0124 });
      // The CLI's session files resume the session; they are never part of what people read.
      expect(JSON.stringify(waiting.body)).not.toContain(SESSION_FILE_TEXT);

      // A write user's reply: shown at once, before the resumed turn ends.
      await reply('alice', 'Yes, keep it until 2.0.');
      const second = await specOf(run.id, 1);
      const replied = await get(`/api/runs/${run.id}/conversation`);
      expect(replied.body).toMatchObject({ waiting: null, reply: { text: 'Yes, keep it until 2.0.', by: 'alice' } });
      expect(replied.body.turns).toHaveLength(1);

      await upload(
        second,
        [
          firstTurn,
          {
            turn: 2,
            prompt: 'Reply from @alice to your question:\n\nYes, keep it until 2.0.',
            by: 'alice',
            reply: 'Yes, keep it until 2.0.',
            question: null,
            stream: [
              JSON.stringify({
                type: 'assistant',
                message: { id: 'm2', content: [{ type: 'text', text: 'Keeping --legacy until 2.0.' }] },
              }),
              JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'Kept the flag.', total_cost_usd: 0.02 }),
            ],
            truncated: false,
            // An older runner's turn without its own figures: the CLI's result says the cost.
          },
        ],
        false,
      );
      await call(second, '/complete', {
        method: 'POST',
        body: JSON.stringify({ status: 'succeeded', summary: 'Kept the flag.', costUsd: 0.02, durationMs: 1 }),
      });
      await until(async () => (await app!.app.runs.get(run.id))!.status === 'succeeded', 'the run to succeed');

      const done = await get(`/api/runs/${run.id}/conversation`);
      expect(done.body).toMatchObject({ status: 'succeeded', waiting: null, reply: null });
      expect(
        done.body.turns.map((t: { turn: number; by: string; reply: string | null; costUsd: number }) => [t.turn, t.by, t.reply, t.costUsd]),
      ).toEqual([
        [1, 'baton', null, 0.0124],
        [2, 'alice', 'Yes, keep it until 2.0.', 0.02],
      ]);
      expect(done.body.turns[1].entries[0]).toEqual({ kind: 'assistant', text: 'Keeping --legacy until 2.0.' });

      // The issue's conversation across its stages: a second stage's run after this one.
      const { run: develop } = await app!.app.engine.enqueue({
        stage: 'develop',
        owner: 'acme',
        repo: 'app',
        number: issue,
        payload: { account: 'dev' },
      });
      const dev = await specOf(develop.id);
      await upload(dev, [{ ...firstTurn, prompt: 'Develop issue #1.', question: null, stream: sample }], false);
      const across = await get(`/api/issues/acme/app/${issue}/conversation`);
      expect(across.status).toBe(200);
      expect(across.body.runs.map((r: { runId: number; stage: string; turns: unknown[] }) => [r.runId, r.stage, r.turns.length])).toEqual([
        [run.id, 'analyse', 2],
        [develop.id, 'develop', 1],
      ]);

      // Reading needs a token, like every API route; the workspace's transcript route is not it.
      expect((await get(`/api/runs/${run.id}/conversation`, {})).status).toBe(401);
      expect((await get(`/api/runs/${run.id + 1000}/conversation`)).status).toBe(404);
      expect((await get(`/api/issues/acme/app/99/conversation`)).status).toBe(404);

      // baton logs --transcript prints it.
      const out: string[] = [];
      const io: CommandIo = { env: { BATON_URL: app!.url, BATON_TOKEN: ADMIN_TOKEN }, out: (s) => out.push(s), err: (s) => out.push(s) };
      expect(await logsCommand([String(run.id), '--transcript'], io)).toBe(0);
      const printed = out.join('\n');
      expect(printed).toContain(`run #${run.id} analyse #${issue} · succeeded · 2 turn(s) · $0.0324`);
      expect(printed).toContain("── turn 1 · baton's prompt ──");
      expect(printed).toContain('  ▸ Read {"file_path":"/path/to/sample/file.py"}');
      expect(printed).toContain('    │ def example_function():');
      expect(printed).toContain('  > Should the old --legacy flag keep working?');
      expect(printed).toContain('(turn 1: $0.0124 · 120 tokens · 12s)');
      expect(printed).toContain('── turn 2 · reply from @alice ──\n  Yes, keep it until 2.0.');
      expect(printed).toContain('  Keeping --legacy until 2.0.');
      expect(printed).not.toContain(SESSION_FILE_TEXT);
    }, 60_000);

    it('removes a run’s transcript with the run once the retention has passed', async () => {
      const { run } = await app!.app.engine.enqueue({
        stage: 'analyse',
        owner: 'acme',
        repo: 'app',
        number: issue,
        payload: { account: 'dev' },
      });
      const spec = await specOf(run.id);
      await upload(spec, [{ ...firstTurn, question: null }], false);
      await call(spec, '/complete', { method: 'POST', body: JSON.stringify({ status: 'succeeded', summary: 'done', durationMs: 1 }) });
      await until(async () => (await app!.app.runs.get(run.id))!.status === 'succeeded', 'the run to succeed');
      expect(await app!.app.runs.transcript(run.id)).not.toBeNull();
      // retentionDays 0: the finished run is past it as soon as the clock moves on.
      await until(async () => (await app!.app.engine.prune()) > 0, 'the run to be pruned');
      expect(await app!.app.runs.transcript(run.id)).toBeNull();
      expect(await app!.app.runs.conversation(run.id)).toBeNull();
    }, 60_000);
  });
});
