import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunOutcome, TaskRequest } from '../../src/runs/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, hasChromium, launchChromium, login, openPage } from '../helpers/browser.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const browserTests = hasChromium('the issue view and usage chart tests');

/**
 * The issue view and the usage charts in a real browser, under the server's own
 * Content-Security-Policy (any violation Chromium reports fails the test): what a person sees,
 * read from the page (bars, their labels and values, the steps in order).
 */
describe.skipIf(!browserTests)('dashboard issue view and usage charts in headless Chromium', { timeout: 90_000 }, () => {
  let browser: Browser;
  let t: TestStore;
  let server: TestApp;
  let page: Page;
  let violations: string[];

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t, { env: { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'x', GITEA_REVIEW_TOKEN: 'y' } });
    ({ page, violations } = await openPage(browser));
  });
  afterEach(async () => {
    expect(violations).toEqual([]);
    await page?.context().close();
    await server?.close();
    await t?.cleanup();
  });

  /** A run through the real server: queued, started by its dispatcher (memory workspaces), then ended as told. */
  async function runThrough(task: Partial<TaskRequest> & Pick<TaskRequest, 'stage'>, outcome: RunOutcome): Promise<number> {
    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({ owner: 'acme', repo: 'app', number: 7, ...task });
    await until(async () => (await runs.get(run.id))?.status === 'running', `run ${run.id} running`, 15_000, 20);
    await engine.complete(run.id, outcome);
    return run.id;
  }
  const used = (input: number, output: number, costUsd: number, status: RunOutcome['status'] = 'succeeded'): RunOutcome => ({
    status,
    usage: { inputTokens: input, outputTokens: output },
    costUsd,
  });
  const pr12 = { number: 12, payload: { isPull: true, headRef: 'feature/issue-7-retry', title: 'Retry (#7)' } };

  it('follows an issue from the runs list through its stages in order, with waits, totals and live updates', async () => {
    const analyse = await runThrough({ stage: 'analyse' }, used(1000, 200, 0.12));
    await runThrough({ stage: 'develop' }, { ...used(3000, 500, 0.5, 'failed'), error: 'tests failed' });
    await runThrough({ stage: 'review-code', ...pr12 }, used(400, 100, 0.08));
    await login(page, server.url);

    await page.locator(`#runs tr[data-run-id="${analyse}"] a.issue-link`).click();
    await eventually(() => page.evaluate('location.hash'), '#/issues/acme/app/7');
    const steps = page.locator('#issue-timeline g.step');
    await eventually(
      () => steps.evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-stage'), g.getAttribute('data-status')])),
      [
        ['analyse', 'succeeded'],
        ['develop', 'failed'],
        ['review-code', 'succeeded'],
      ],
    );
    // One wait between each two steps, each bar drawn with a width.
    expect(await page.locator('#issue-timeline text.wait').count()).toBe(2);
    for (const width of await page.locator('#issue-timeline rect.ran').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('width')))))
      expect(width).toBeGreaterThan(0);
    expect(await page.textContent('#issue-title')).toContain('acme/app#7');
    expect(await page.getAttribute('#issue-prs a', 'href')).toBe('https://git.example.com/acme/app/pulls/12');
    expect(await page.textContent('[data-total="tokens"]')).toBe((1200 + 3500 + 500).toLocaleString('en-US'));
    expect(await page.textContent('[data-total="cost"]')).toBe('$0.7000');
    expect(await page.textContent('[data-total="runs"]')).toBe('3');
    expect(await page.locator('#issue-runs tbody tr td[data-label="on"]').allTextContents()).toEqual(['#7', '#7', 'PR #12']);

    // A new run of the linked pull request appears without a reload.
    await page.evaluate('window.marker = 1');
    await server.app.engine.pause();
    await server.app.engine.enqueue({ stage: 'test', owner: 'acme', repo: 'app', ...pr12 });
    await eventually(
      () => steps.evaluateAll((gs) => gs.map((g) => g.getAttribute('data-stage'))),
      ['analyse', 'develop', 'review-code', 'test'],
    );
    expect(await page.evaluate('window.marker')).toBe(1);
  });

  it('charts tokens and cost per day and per stage, and shows no budgets while the server has none', async () => {
    await runThrough({ stage: 'analyse' }, used(1000, 200, 0.12));
    await runThrough({ stage: 'develop' }, used(3000, 500, 0.5));
    await runThrough({ stage: 'develop', number: 8 }, used(2000, 300, 0.25));
    await login(page, server.url);
    await page.click('a[href="#/usage"]');

    const bars = (chart: string) =>
      page
        .locator(`#${chart} rect.bar`)
        .evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-label'), Number(r.getAttribute('data-value'))]));
    const today = new Date().toISOString().slice(5, 10);
    await until(async () => (await bars('chart-tokens-day')).length === 30, 'thirty days of bars', 15_000, 50);
    const days = await bars('chart-tokens-day');
    // Every day of the default range is a bar, oldest first; only today has usage.
    expect(days[29]).toEqual([today, 7000]);
    expect(days.slice(0, 29).every(([, value]) => value === 0)).toBe(true);
    expect((await bars('chart-cost-day'))[29]).toEqual([today, 0.87]);
    expect(await bars('chart-tokens-stage')).toEqual([
      ['develop', 5800],
      ['analyse', 1200],
    ]);
    expect(await bars('chart-cost-stage')).toEqual([
      ['develop', 0.75],
      ['analyse', 0.12],
    ]);
    // The tallest bar is the chart's full height; the axis says what that is.
    const heights = await page.locator('#chart-tokens-stage rect.bar').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    expect(heights[0]).toBeGreaterThan(heights[1]! * 4);
    expect(await page.locator('#chart-tokens-stage text.tick').allTextContents()).toEqual(['0', (5800).toLocaleString('en-US')]);
    expect(await page.locator('#chart-tokens-stage text.label').allTextContents()).toEqual(['develop', 'analyse']);
    expect(await page.textContent('#usage-totals')).toContain('3 runs');
    // No budgets API on this server: nothing is shown for budgets, and nothing failed.
    expect(await page.isVisible('#budgets')).toBe(false);
    expect(await page.isVisible('#notice')).toBe(false);

    // A narrower range redraws with one bar per day.
    const day = new Date().toISOString().slice(0, 10);
    await page.fill('#usage-from', day);
    await page.fill('#usage-to', day);
    await page.click('#usage-range button[type=submit]');
    await eventually(() => bars('chart-tokens-day'), [[today, 7000]]);
  });

  it('shows each budget with what is left today, as GET /api/budgets describes it', async () => {
    // The shape the budgets API answers with (notes/budgets-api.md), served in its place.
    await page.route(`${server.url}/api/budgets`, (route) =>
      route.fulfill({
        json: {
          timezone: 'UTC',
          day: '2026-12-01',
          resetsAt: Date.UTC(2026, 11, 2),
          held: 2,
          budgets: [
            {
              scope: 'global',
              kind: 'global',
              name: null,
              tokens: { limit: 2_000_000, used: 123_456, remaining: 1_876_544 },
              costUsd: { limit: 50, used: 4.21, remaining: 45.79 },
              raised: false,
              exhausted: false,
              held: 0,
            },
            {
              scope: 'stage:develop',
              kind: 'stage',
              name: 'develop',
              tokens: null,
              costUsd: { limit: 5, used: 5.5, remaining: 0 },
              raised: false,
              exhausted: true,
              held: 2,
            },
          ],
        },
      }),
    );
    await login(page, server.url);
    await page.click('a[href="#/usage"]');
    await eventually(() => page.isVisible('#budgets'), true);
    const global = page.locator('#budgets tr[data-scope="global"]');
    expect(await global.locator('td[data-label="tokens"]').textContent()).toBe(
      `${(123_456).toLocaleString('en-US')} of ${(2_000_000).toLocaleString('en-US')} used, ${(1_876_544).toLocaleString('en-US')} left`,
    );
    expect(await global.locator('td[data-label="cost"]').textContent()).toBe('$4.21 of $50.00 used, $45.79 left');
    const develop = page.locator('#budgets tr[data-scope="stage:develop"]');
    expect(await develop.getAttribute('class')).toBe('exhausted');
    expect(await develop.locator('td[data-label="tokens"]').textContent()).toBe('–');
    expect(await develop.locator('td[data-label="held"]').textContent()).toBe('spent · 2 held');
    // The meters: a share of the limit, full when spent.
    expect(Number(await global.locator('td[data-label="tokens"] rect.meter-fill').getAttribute('width'))).toBeCloseTo(6.17, 1);
    expect(await develop.locator('td[data-label="cost"] rect.meter-fill').getAttribute('width')).toBe('100.00');
    await page.unrouteAll({ behavior: 'wait' });
  });
});
