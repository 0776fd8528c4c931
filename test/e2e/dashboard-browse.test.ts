import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, eventuallyContains, hasChromium, launchChromium, login, openPage } from '../helpers/browser.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

/**
 * Where the screenshots a reviewer looks at go (committed; docs/dashboard.md shows them). They are
 * written only with BATON_SCREENSHOTS=1 (docs/testing.md): a test run never changes the checkout.
 */
const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs/screenshots');
const WRITE_SCREENSHOTS = process.env.BATON_SCREENSHOTS === '1';

describe.skipIf(!hasChromium('the dashboard browsing tests'))('browsing runs in headless Chromium', { timeout: 90_000 }, () => {
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
      env: {
        GITEA_URL: 'https://git.example.com',
        GITEA_DEV_TOKEN: 'x',
        GITEA_REVIEW_TOKEN: 'y',
        GITHUB_URL: 'https://ghe.example.com',
        GITHUB_DEV_TOKEN: 'x',
        GITHUB_REVIEW_TOKEN: 'y',
        GITHUB_WEBHOOK_SECRET: 'dashboard-browse-github-secret',
      },
      // Failed provisioning attempts are retried at once: a dead run needs no waiting.
      file: 'queue:\n  backoffBaseSeconds: 0\n  maxAttempts: 3\n',
      deps: { provider },
    });
    await server.app.engine.pause();
    ({ page, violations } = await openPage(browser));
    await page.setViewportSize({ width: 1280, height: 760 });
  });
  afterEach(async () => {
    expect(violations).toEqual([]);
    await page?.context().close();
    await server?.close();
    await t?.cleanup();
  });

  /** The page as a reviewer sees it: taken on every run (it must render), kept only with BATON_SCREENSHOTS=1. */
  const shot = (name: string) => page.screenshot(WRITE_SCREENSHOTS ? { path: path.join(SCREENSHOTS, `${name}.png`) } : {});
  const rowIds = () => page.$$eval('#runs tbody tr', (rows) => rows.map((row) => Number(row.getAttribute('data-run-id'))));
  /** Sets the filter form's fields and submits it. */
  async function filter(fields: { q?: string; status?: string; stage?: string; repo?: string; since?: string }) {
    await page.fill('#runs-filter [name=q]', fields.q ?? '');
    await page.selectOption('#runs-filter [name=status]', fields.status ?? '');
    await page.fill('#runs-filter [name=stage]', fields.stage ?? '');
    await page.fill('#runs-filter [name=repo]', fields.repo ?? '');
    await page.selectOption('#runs-filter [name=since]', fields.since ?? '');
    await page.click('#runs-filter button[type=submit]');
  }

  /** Queues a run and takes it through the memory provider to running, then to the outcome given. */
  async function finished(
    request: { stage?: string; repo?: string; number: number; title?: string },
    outcome: { status: 'succeeded' | 'failed'; error?: string; summary?: string },
  ) {
    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({
      stage: request.stage ?? 'develop',
      owner: 'acme',
      repo: request.repo ?? 'app',
      number: request.number,
      payload: request.title ? { title: request.title } : {},
    });
    await engine.resume();
    await eventually(async () => (await runs.get(run.id))?.status, 'running');
    await engine.pause();
    await engine.complete(run.id, { ...outcome, usage: { inputTokens: 1200, outputTokens: 300 }, costUsd: 0.031 });
    return run.id;
  }

  it('filters by status, stage, repository and time, searches titles, errors and issue numbers, and shows failures in words', async () => {
    const { engine } = server.app;
    const login1 = await finished(
      { number: 11, title: 'Login page rejects valid passwords' },
      { status: 'failed', error: 'agent_error', summary: 'Not logged in · Please run /login' },
    );
    const ok = await finished(
      { number: 12, stage: 'review-code', title: 'Add CSV export' },
      { status: 'succeeded', summary: 'Opened PR #40' },
    );
    const other = await finished({ number: 3, repo: 'web', title: 'Dark mode' }, { status: 'succeeded' });
    const queued = (await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 14, payload: { title: 'Slow search' } }))
      .run.id;
    // A run from last week, for the time filter.
    const old = (await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'web', number: 2, payload: { title: 'Old one' } })).run.id;
    await engine.cancel(old, 'superseded by #3');
    await t.store.db
      .updateTable('runs')
      .set({ created_at: Date.now() - 7 * 86_400_000 })
      .where('id', '=', old)
      .execute();

    await login(page, server.url);
    await eventually(
      rowIds,
      [old, queued, other, ok, login1].sort((a, b) => b - a),
    );
    // Words first, the kind after them; a time with its zone.
    const failedRow = page.locator(`#runs tr[data-run-id="${login1}"]`);
    expect(await failedRow.locator('.reason-text').textContent()).toBe('Not logged in · Please run /login');
    expect(await failedRow.locator('.reason-code').textContent()).toBe('agent_error');
    expect(await failedRow.locator('td[data-label="created"] time').textContent()).toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC([+-]\d{2}:\d{2})?$/,
    );
    expect(await failedRow.locator('.title').textContent()).toBe('Login page rejects valid passwords');

    await filter({ status: 'failing' });
    await eventually(rowIds, [login1]);
    expect(await page.evaluate('location.hash')).toBe('#/?status=failing');
    await filter({ stage: 'analyse' });
    await eventually(rowIds, [old, queued]);
    await filter({ repo: 'acme/web' });
    await eventually(rowIds, [old, other]);
    await filter({ repo: 'acme/web', since: '24h' });
    await eventually(rowIds, [other]);
    await filter({ q: 'login' });
    await eventually(rowIds, [login1]);
    await filter({ q: 'superseded' });
    await eventually(rowIds, [old]);
    await filter({ q: '#12' });
    await eventually(rowIds, [ok]);
    await filter({ q: 'no such words' });
    await eventually(() => page.isVisible('#no-match'), true);
    expect(await page.isVisible('#empty')).toBe(false);

    // A filtered address is a link: opened anew, it shows the same list.
    await page.goto(`${server.url}/#/?status=failing&q=passwords`);
    await page.waitForSelector('body[data-ready="true"]');
    await eventually(rowIds, [login1]);
    expect(await page.inputValue('#runs-filter [name=q]')).toBe('passwords');
    await filter({ q: 'e', status: '' });
    await eventually(
      rowIds,
      [old, queued, other, ok, login1].sort((a, b) => b - a),
    );
    await shot('runs-list');

    // A failure people fix in their setup says where to read how.
    await page.evaluate(`location.hash = '#/runs/${login1}'`);
    await eventually(() => page.textContent('#run-error'), 'Not logged in · Please run /login');
    expect(await page.textContent('#run-error-help')).toBe('How to fix it: docs/troubleshooting.md#not-logged-in');
  });

  it('pages through more runs than a page holds, newest first, without gaps or repeats while runs arrive', async () => {
    const { engine } = server.app;
    const ids: number[] = [];
    for (let n = 1; n <= 120; n++) ids.push((await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n })).run.id);
    const newestFirst = [...ids].reverse();
    await login(page, server.url);
    await eventually(rowIds, newestFirst.slice(0, 50));
    // One arrives while the reader is on page 1: it goes on top, and page 2 starts where page 1 ended.
    const late = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 500 })).run.id;
    await eventually(async () => (await rowIds())[0], late);
    await page.click('#more');
    await eventually(rowIds, [late, ...newestFirst.slice(0, 100)]);
    await page.click('#more');
    await eventually(rowIds, [late, ...newestFirst]);
    expect(await page.isVisible('#more')).toBe(false);

    // A filter pages the same way.
    await filter({ q: '#7' });
    await eventually(rowIds, [ids[6]]);
    await filter({ status: 'queued' });
    await eventually(async () => (await rowIds()).length, 50);
    await page.click('#more');
    await eventually(async () => (await rowIds()).length, 100);
    await page.setViewportSize({ width: 1280, height: 520 });
    await shot('runs-pages');
  });

  it('shows a running run with the prompt it got and its tokens and cost counting up, then its one error', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue({
      stage: 'develop',
      owner: 'acme',
      repo: 'app',
      number: 7,
      payload: { title: 'Parser drops trailing commas', arguments: '7 focus on the parser' },
    });
    await login(page, server.url);
    await page.click(`#runs tr[data-run-id="${run.id}"] a[href="#/runs/${run.id}"]`);
    await eventually(() => page.textContent('[data-field="arguments"]'), '7 focus on the parser');
    expect(await page.textContent('[data-field="prompt"]')).toContain('read in the workspace');
    expect(await page.isVisible('#log-empty')).toBe(true);

    await engine.resume();
    await eventually(() => page.textContent('#run-status'), 'running');
    await engine.appendEvent(run.id, 'run:prompt', {
      text: 'Implement issue #7 of acme/app: 7 focus on the parser.\n\nRun the tests before you push.',
      arguments: '7 focus on the parser',
      source: 'repository',
      file: '.claude/commands/develop.md',
      model: 'claude-sonnet-4-5',
    });
    await eventually(() => page.textContent('[data-field="from"]'), '.claude/commands/develop.md');
    expect(await page.textContent('[data-field="model"]')).toBe('claude-sonnet-4-5');
    expect(await page.textContent('#run-prompt-text pre')).toContain('Run the tests before you push.');

    // Live figures: each progress report moves them, no reload.
    await page.evaluate('window.marker = 1');
    await engine.appendEvent(run.id, 'run:progress', {
      lines: ['[assistant] reading src/parser.ts'],
      usage: { inputTokens: 900, outputTokens: 100 },
      costUsd: 0.0042,
    });
    await eventually(() => page.textContent('#run-tokens'), (1000).toLocaleString('en-US'));
    await eventually(() => page.textContent('#run-cost'), '$0.0042');
    expect(await page.textContent('[data-field="tokens"]')).toContain('so far');
    await engine.appendEvent(run.id, 'run:progress', {
      lines: ['[tool] Bash npm test'],
      usage: { inputTokens: 4000, outputTokens: 600 },
      costUsd: 0.0191,
    });
    await eventually(() => page.textContent('#run-tokens'), (4600).toLocaleString('en-US'));
    await eventually(() => page.textContent('#run-cost'), '$0.0191');
    await eventuallyContains(() => page.textContent('#log'), '[tool] Bash npm test');
    await shot('run-live');

    await engine.complete(run.id, {
      status: 'failed',
      error: 'agent_error',
      summary: 'API Error: 400 prompt is too long: 212000 tokens > 200000 maximum',
      usage: { inputTokens: 5000, outputTokens: 700 },
      costUsd: 0.0213,
    });
    await eventually(() => page.textContent('#run-status'), 'failed');
    expect(await page.textContent('#run-error')).toBe('API Error: 400 prompt is too long: 212000 tokens > 200000 maximum');
    expect(await page.textContent('#run-error-code')).toBe('agent_error');
    // A prompt too long is not the setup's fault: no troubleshooting pointer.
    expect(await page.locator('#run-error-help').count()).toBe(0);
    await eventually(() => page.textContent('#run-tokens'), (5700).toLocaleString('en-US'));
    expect(await page.textContent('[data-field="tokens"]')).not.toContain('so far');
    // The error once on the page: not again as the summary, nor in the timeline.
    const text = await page.innerText('#run-view');
    expect(text.split('prompt is too long').length - 1).toBe(1);
    expect(await page.evaluate('window.marker')).toBe(1);
  });

  it('counts a running run’s elapsed time up on its page, and stops counting when it ends', async () => {
    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 8 });
    await engine.resume();
    await eventually(async () => (await runs.get(run.id))?.status, 'running');
    await engine.pause();
    // The page's Date and timers are Playwright's clock: it runs as a real one, and the test can
    // move it a minute on at once, firing the timers due meanwhile.
    await page.clock.install();
    await login(page, server.url);
    await page.evaluate(`location.hash = '#/runs/${run.id}'`);
    await eventually(() => page.textContent('#run-status'), 'running');
    expect(await page.textContent('#run-elapsed')).toMatch(/^\d+s$/);
    await page.clock.fastForward(65_000);
    await eventually(async () => /^1m \d+s$/.test((await page.textContent('#run-elapsed')) ?? ''), true);

    await engine.complete(run.id, { status: 'succeeded', summary: 'done' });
    await eventually(() => page.textContent('#run-status'), 'succeeded');
    const ended = (await runs.get(run.id))!;
    const figure = await page.textContent('#run-elapsed');
    // What it took, from the run's own times, not the page's clock.
    expect(figure).toMatch(/^\d+s$/);
    expect(Number(figure!.slice(0, -1))).toBe(Math.round((ended.finishedAt! - ended.startedAt!) / 1000));
    await page.clock.fastForward(65_000);
    expect(await page.textContent('#run-elapsed')).toBe(figure);
  });

  it('shows a dead run’s error once, says why its log is empty, and names a missing run or issue without empty sections', async () => {
    const { engine, runs } = server.app;
    provider.failNextCreates(3, new Error('coder: template "baton" has no active version'));
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 9 });
    await engine.resume();
    await eventually(async () => (await runs.get(run.id))?.status, 'dead');
    await engine.pause();

    await login(page, server.url);
    await page.evaluate(`location.hash = '#/runs/${run.id}'`);
    await eventually(() => page.textContent('#run-status'), 'dead');
    const error = (await page.textContent('#run-error'))!;
    expect(error).toContain('has no active version');
    await eventually(() => page.locator('#timeline li').count(), 7);
    const text = await page.innerText('#run-view');
    expect(text.split('has no active version').length - 1).toBe(1);
    expect(await page.textContent('#timeline')).toContain('(the error above)');
    expect(await page.isVisible('#log')).toBe(false);
    expect(await page.textContent('#log-empty')).toBe('No log: the run never reached a workspace that could send one.');
    expect(await page.textContent('[data-field="prompt"]')).toContain('not reported');
    await shot('run-dead');

    await page.evaluate(`location.hash = '#/runs/999999'`);
    await eventually(() => page.isVisible('#run-missing'), true);
    expect(await page.textContent('#run-missing')).toContain('There is no run #999999');
    expect(await page.isVisible('#run-found')).toBe(false);
    expect(await page.isVisible('#notice')).toBe(false);
    await shot('run-not-found');

    await page.evaluate(`location.hash = '#/issues/acme/app/404'`);
    await eventually(() => page.isVisible('#issue-missing'), true);
    expect(await page.textContent('#issue-title')).toBe('acme/app#404');
    expect(await page.textContent('#issue-missing')).toContain('no run of acme/app#404');
    expect(await page.isVisible('#issue-found')).toBe(false);
    // A run of it arrives: the view fills in.
    await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 404 });
    await eventually(() => page.isVisible('#issue-found'), true);
    expect(await page.isVisible('#issue-missing')).toBe(false);
    expect(await page.textContent('#issue-title')).toBe('acme/app#404 ↗');

    // A repository declared in baton.yaml has no forge link: its title is the name alone (it
    // once read `demo/hello#7null`).
    await engine.enqueue({ stage: 'analyse', owner: 'demo', repo: 'hello', number: 7, payload: { declared: true } });
    await page.evaluate(`location.hash = '#/issues/demo/hello/7'`);
    await eventually(() => page.isVisible('#issue-found'), true);
    await eventually(() => page.textContent('#issue-title'), 'demo/hello#7');
    expect(await page.locator('#issue-title a').count()).toBe(0);

    // The same name on GitHub is another repository: its own page, its link on GitHub.
    // As the pipeline queues it: the forge in the key and in the payload.
    const onGitHub = (
      await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 404, forge: 'github', payload: { forge: 'github' } })
    ).run;
    await page.evaluate(`location.hash = '#/runs'`);
    const link = page.locator(`#runs tr[data-run-id="${onGitHub.id}"] a.issue-link`);
    await eventually(() => link.getAttribute('href'), '#/issues/acme/app/404?forge=github');
    await link.click();
    await eventually(() => page.textContent('#issue-title'), 'github:acme/app#404 ↗');
    expect(await page.getAttribute('#issue-title a', 'href')).toBe('https://ghe.example.com/acme/app/issues/404');
    const itsRun = `#issue-view a[href="#/runs/${onGitHub.id}"]`;
    await eventually(() => page.locator(itsRun).count(), 1);
    await page.evaluate(`location.hash = '#/issues/acme/app/404'`);
    await eventually(() => page.textContent('#issue-title'), 'acme/app#404 ↗');
    await eventually(() => page.locator('#issue-view a[href^="#/runs/"]').count(), 1);
    expect(await page.locator(itsRun).count()).toBe(0);
  });
});
