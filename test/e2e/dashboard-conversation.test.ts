import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { packTranscript, TRANSCRIPT_FORMAT, type TranscriptTurn } from '../../src/agent/conversation.js';
import { createMemoryProvider, type MemoryProvider, type WorkspaceSpec } from '../../src/workspaces/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, eventuallyContains, hasChromium, launchChromium, login, openPage } from '../helpers/browser.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * Where the screenshots a reviewer looks at go (committed; docs/dashboard.md shows them), written
 * only with BATON_SCREENSHOTS=1 (docs/testing.md): a test run never changes the checkout.
 */
const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs/screenshots');
const WRITE_SCREENSHOTS = process.env.BATON_SCREENSHOTS === '1';
const SESSION = '5f0c1a2b-0000-4000-8000-00000000000b';
const QUESTION = 'Should the old --legacy flag keep working?';

const line = (value: unknown) => JSON.stringify(value);
const assistant = (id: string, content: unknown[]) => line({ type: 'assistant', message: { id, content } });

/**
 * A run's conversation in the dashboard, in headless Chromium: the run page shows each turn (the
 * stage prompt folded, the assistant's messages, tool calls folded with their results, the
 * question, the person's reply, the cost of each turn), and the issue page the conversation
 * across its stages. The transcripts are uploaded through the workspace's callback route, as a
 * runner does.
 */
describe.skipIf(!hasChromium('the dashboard conversation tests'))('a run’s conversation in headless Chromium', { timeout: 90_000 }, () => {
  let browser: Browser;
  let t: TestStore;
  let server: TestApp;
  let provider: MemoryProvider;
  let page: Page;
  let violations: string[];

  beforeAll(async () => {
    browser = await launchChromium();
    if (WRITE_SCREENSHOTS) fs.mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    t = await createSqliteTestStore();
    provider = createMemoryProvider();
    server = await startTestApp(t, {
      env: { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'x', GITEA_REVIEW_TOKEN: 'y' },
      deps: { provider },
    });
    ({ page, violations } = await openPage(browser));
    await page.setViewportSize({ width: 1280, height: 900 });
  });
  afterEach(async () => {
    expect(violations).toEqual([]);
    await page?.context().close();
    await server?.close();
    await t?.cleanup();
  });

  const specOf = (runId: number) => until(() => provider.created.find((s) => s.runId === runId), `the workspace of run ${runId}`);
  const call = (spec: WorkspaceSpec, suffix: string, init: RequestInit) =>
    fetch(`${server.url}${new URL(spec.callbackUrl).pathname.replace(/\/complete$/, suffix)}`, {
      ...init,
      headers: { authorization: `Bearer ${spec.callbackToken}`, 'content-type': 'application/json', ...init.headers },
    });

  /** A run of `stage` on acme/app#7 whose runner uploads `turns` and ends it (`question`: it waits). */
  async function runWith(stage: string, turns: TranscriptTurn[], question: string | null) {
    const { run } = await server.app.engine.enqueue({ stage, owner: 'acme', repo: 'app', number: 7, payload: { title: 'Keep --legacy?' } });
    const spec = await specOf(run.id);
    const jsonl = packTranscript({
      header: { format: TRANSCRIPT_FORMAT, version: 1, agent: 'claude', cwd: '/workspace/app', sessionId: SESSION, branch: 'main' },
      files: [],
      turns,
    });
    expect(
      (await call(spec, '/transcript', { method: 'PUT', body: jsonl, headers: { 'content-type': 'application/x-ndjson' } })).status,
    ).toBe(200);
    const body = question
      ? { status: 'succeeded', summary: 'asked', durationMs: 1, question: { text: question, sessionId: SESSION } }
      : { status: 'succeeded', summary: 'done', costUsd: 0.05, durationMs: 1 };
    expect((await call(spec, '/complete', { method: 'POST', body: JSON.stringify(body) })).status).toBe(200);
    await until(
      async () => (await server.app.runs.get(run.id))!.status === (question ? 'waiting' : 'succeeded'),
      `run ${run.id} to end its turn`,
    );
    return run.id;
  }

  const analyseTurns: TranscriptTurn[] = [
    {
      turn: 1,
      prompt: 'Analyse issue #7 of acme/app.\n\nWrite the analysis as a comment.',
      by: 'baton',
      question: QUESTION,
      stream: [
        line({ type: 'system', subtype: 'init', session_id: SESSION, model: 'claude-sonnet' }),
        assistant('m1', [
          { type: 'text', text: 'Let me look at how the flag is parsed.' },
          { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'grep -rn legacy src/' } },
        ]),
        line({
          type: 'user',
          message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: 'src/cli.ts:12: --legacy', is_error: false }] },
        }),
        assistant('m2', [{ type: 'tool_use', id: 't2', name: 'Bash', input: { command: `baton ask "${QUESTION}"` } }]),
        line({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't2', content: 'asked', is_error: false }] } }),
        line({ type: 'result', subtype: 'success', is_error: false, result: 'I asked whether to keep the flag.', total_cost_usd: 0.0124 }),
      ],
      truncated: false,
      usage: { inputTokens: 1200, outputTokens: 300, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      costUsd: 0.0124,
      startedAt: Date.now() - 60_000,
      endedAt: Date.now() - 48_000,
    },
  ];

  it('shows each turn: the prompt folded, messages, tool calls folded with results, the question, the reply, the cost per turn', async () => {
    const replyTurn: TranscriptTurn = {
      turn: 2,
      prompt: 'Reply from @alice to your question:\n\nYes, keep it until 2.0.',
      by: 'alice',
      reply: 'Yes, keep it until 2.0.',
      question: null,
      stream: [
        assistant('m3', [{ type: 'text', text: 'Keeping --legacy until 2.0, with a deprecation warning.' }]),
        line({ type: 'result', subtype: 'success', is_error: false, result: 'Analysis posted.', total_cost_usd: 0.02 }),
      ],
      truncated: false,
      usage: { inputTokens: 800, outputTokens: 200, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      costUsd: 0.02,
      startedAt: Date.now() - 20_000,
      endedAt: Date.now() - 5_000,
    };
    const id = await runWith('analyse', [...analyseTurns, replyTurn], null);

    await login(page, server.url);
    await page.goto(`${server.url}/#/runs/${id}`);
    await page.waitForSelector('#run-conversation-turns[data-loaded="true"]');
    const turns = page.locator('#run-conversation-turns .turn');
    await eventually(() => turns.count(), 2);
    const first = turns.nth(0);
    // The stage prompt is there, folded.
    expect(await first.locator('details.prompt').getAttribute('open')).toBeNull();
    expect(await first.locator('details.prompt summary').textContent()).toBe('baton’s prompt');
    expect(await first.locator('.msg.assistant p').first().textContent()).toBe('Let me look at how the flag is parsed.');
    // Tool calls folded, the command in the summary; opened, the result.
    const grep = first.locator('details.tool').first();
    expect(await grep.locator('summary').textContent()).toBe('Bash grep -rn legacy src/');
    expect(await grep.locator('.tool-result').isVisible()).toBe(false);
    await grep.locator('summary').click();
    expect(await grep.locator('.tool-result').textContent()).toBe('src/cli.ts:12: --legacy');
    expect(await first.locator('.msg.question p').textContent()).toBe(QUESTION);
    expect(await first.locator('[data-field="turn-cost"]').textContent()).toBe('$0.0124 · 1,500 tokens · 12s');
    // The second turn begins with the person's reply.
    const second = turns.nth(1);
    expect(await second.locator('.msg.human b').textContent()).toBe('@alice replied');
    expect(await second.locator('.msg.human p').textContent()).toBe('Yes, keep it until 2.0.');
    expect(await second.locator('.msg.result p').textContent()).toBe('Analysis posted.');
    expect(await second.locator('[data-field="turn-cost"]').textContent()).toBe('$0.0200 · 1,000 tokens · 15s');
    await page.locator('#run-conversation').scrollIntoViewIfNeeded();
    await page.locator('#run-conversation').screenshot(WRITE_SCREENSHOTS ? { path: path.join(SCREENSHOTS, 'run-conversation.png') } : {});
  });

  it('shows a waiting run’s question, and the issue’s conversation across its stages', async () => {
    const analyse = await runWith('analyse', analyseTurns, QUESTION);
    await login(page, server.url);
    await page.goto(`${server.url}/#/runs/${analyse}`);
    await page.waitForSelector('#run-conversation-turns[data-loaded="true"]');
    await eventuallyContains(() => page.locator('#run-conversation-turns .waiting').textContent(), 'Waiting for a reply on the issue.');
    const actions = () => page.$$eval('#run-actions button', (buttons) => buttons.map((b) => b.getAttribute('data-action')));
    await eventually(actions, ['cancel']);

    // Another stage of the issue, after it: the issue page shows both, in order, live.
    await page.goto(`${server.url}/#/issues/acme/app/7`);
    await page.waitForSelector('#issue-conversation-turns[data-loaded="true"]');
    await eventually(() => page.locator('#issue-conversation-turns .conversation').count(), 1);
    const develop = await runWith(
      'develop',
      [
        {
          turn: 1,
          prompt: 'Develop issue #7.',
          by: 'baton',
          question: null,
          stream: [assistant('d1', [{ type: 'text', text: 'Implemented the deprecation warning.' }])],
          truncated: false,
          costUsd: 0.05,
        },
      ],
      null,
    );
    const runIds = () =>
      page.$$eval('#issue-conversation-turns .conversation', (nodes) => nodes.map((n) => Number(n.getAttribute('data-run-id'))));
    await eventually(runIds, [analyse, develop]);
    const headings = await page.locator('#issue-conversation-turns .conversation-run').allTextContents();
    expect(headings).toEqual([`#${analyse} analyse waiting`, `#${develop} develop succeeded`]);
    expect(await page.locator(`#issue-conversation-turns .conversation[data-run-id="${develop}"] .msg.assistant p`).textContent()).toBe(
      'Implemented the deprecation warning.',
    );

    // No reply in time: the run ends `expired`, which is final (Retry starts it again, Cancel is gone).
    await until(async () => (await server.app.engine.expireWaiting(0)).length > 0, 'the question to expire');
    await page.goto(`${server.url}/#/runs/${analyse}`);
    await page.waitForSelector('#run-view[data-loaded="true"]');
    await eventually(() => page.locator('#run-status').textContent(), 'expired');
    await eventually(actions, ['retry']);
    expect(await page.locator('#run-conversation-turns .waiting').count()).toBe(0);
  });
});
