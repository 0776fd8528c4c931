import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, eventuallyContains, hasChromium, launchChromium, login, openPage, submitToken } from '../helpers/browser.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/** Counts distinct colours and non-white pixels of a PNG by drawing it on a canvas in the browser. */
async function pixelStats(page: Page, png: Buffer): Promise<{ colours: number; inked: number; total: number }> {
  const probe = await page.context().newPage();
  try {
    // A string, so this Node-side file needs no DOM types.
    return await probe.evaluate(`(async () => {
      const img = new Image();
      img.src = ${JSON.stringify(`data:image/png;base64,${png.toString('base64')}`)};
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const { data } = ctx.getImageData(0, 0, img.width, img.height);
      const colours = new Set();
      let inked = 0;
      for (let i = 0; i < data.length; i += 4) {
        const r = data[i], g = data[i + 1], b = data[i + 2];
        colours.add((r << 16) | (g << 8) | b);
        if (r < 200 || g < 200 || b < 200) inked++;
      }
      return { colours: colours.size, inked, total: data.length / 4 };
    })()`);
  } finally {
    await probe.close();
  }
}

describe.skipIf(!hasChromium('the dashboard browser tests'))('dashboard in headless Chromium', { timeout: 60_000 }, () => {
  let browser: Browser;
  let t: TestStore;
  let server: TestApp;
  let page: Page;
  /** What Chromium reports blocking under the Content-Security-Policy: the dashboard must need nothing it forbids. */
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
    await server.app.engine.pause();
    ({ page, violations } = await openPage(browser));
  });
  afterEach(async () => {
    expect(violations).toEqual([]);
    await page?.context().close();
    await server?.close();
    await t?.cleanup();
  });

  const row = (id: number) => page.locator(`#runs tr[data-run-id="${id}"]`);

  it('refuses a wrong token and keeps a valid one in an HttpOnly, SameSite=Strict cookie', async () => {
    await submitToken(page, server.url, 'baton_wrong');
    await eventuallyContains(() => page.textContent('.error'), 'not valid');
    expect(await page.context().cookies()).toEqual([]);

    await login(page, server.url);
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'baton_session', httpOnly: true, sameSite: 'Strict' });
    // The page's own script cannot read the cookie, and the cookie is a session id, not the token.
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(cookie!.value).not.toContain(ADMIN_TOKEN);
    expect((await fetch(`${server.url}/api/runs`, { headers: { authorization: `Bearer ${cookie!.value}` } })).status).toBe(401);
    const withCookie = { headers: { cookie: `baton_session=${cookie!.value}` } };
    expect((await fetch(`${server.url}/api/me`, withCookie)).status).toBe(200);

    // Logging out ends the session on the server: a copy of the cookie is worth nothing after it.
    await Promise.all([page.waitForLoadState('load'), page.click('form[action="/logout"] button')]);
    await page.waitForSelector('#token');
    expect((await fetch(`${server.url}/api/me`, withCookie)).status).toBe(401);
  });

  it('works under a Content-Security-Policy that runs no inline script', async () => {
    await login(page, server.url);
    expect(await page.textContent('#whoami')).toBe('admin · admin');
    // An injected inline script does not run: the policy is in force, and the page needs no more.
    await page.evaluate(`(() => {
      const script = document.createElement('script');
      script.textContent = 'window.injected = true';
      document.body.append(script);
    })()`);
    await until(() => violations.length > 0, 'a CSP violation report', 15_000, 50);
    expect(await page.evaluate('window.injected')).toBeUndefined();
    // That report was the point of this test; any other still fails it.
    violations.splice(0);
  });

  it('shows a read-only token no buttons it could not use', async () => {
    const { token } = await server.app.tokens.create('viewer', 'read');
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    await login(page, server.url, token);
    await eventually(() => page.textContent('#whoami'), 'viewer · read');
    await eventually(() => row(run.id).locator('.status').textContent(), 'queued');
    expect(await row(run.id).locator('button[data-action="cancel"]').count()).toBe(1);
    expect(await row(run.id).locator('button[data-action="cancel"]').isVisible()).toBe(false);
    expect(await page.isVisible('#resume')).toBe(false);
  });

  it('shows a run go from queued to succeeded live, and cancels another, without reloading', async () => {
    const { engine, runs } = server.app;
    await login(page, server.url);
    await eventually(() => page.isVisible('#resume'), true);
    // A marker that a reload would wipe.
    await page.evaluate('window.marker = 42');
    await eventually(() => page.locator('#live.on').count(), 1);

    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    await eventually(() => row(run.id).locator('.status').textContent(), 'queued');
    expect(await row(run.id).locator('a[href^="https://git.example.com"]').getAttribute('href')).toBe(
      'https://git.example.com/acme/app/issues/7',
    );

    await page.click('#resume');
    await eventually(() => row(run.id).locator('.status').textContent(), 'running');
    const workspaceName = (await runs.get(run.id))!.workspaceName;
    expect(workspaceName).toMatch(/^bt-develop-acme-app-7-r\d+$/);
    await eventually(() => row(run.id).locator('td[data-label="workspace"]').textContent(), workspaceName);
    await engine.complete(run.id, { status: 'succeeded', usage: { inputTokens: 1500, outputTokens: 500 }, costUsd: 0.25 });
    await eventually(() => row(run.id).locator('.status').textContent(), 'succeeded');
    expect(await row(run.id).locator('td[data-label="tokens"]').textContent()).toBe((2000).toLocaleString('en-US'));
    expect(await row(run.id).locator('td[data-label="cost"]').textContent()).toBe('$0.2500');

    await page.click('#pause');
    await eventually(() => page.isVisible('#resume'), true);
    const other = await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 8 });
    await eventually(() => row(other.run.id).locator('.status').textContent(), 'queued');
    await row(other.run.id).locator('button[data-action="cancel"]').click();
    await eventually(() => row(other.run.id).locator('.status').textContent(), 'cancelled');
    expect((await runs.get(other.run.id))?.status).toBe('cancelled');
    await eventually(() => row(other.run.id).locator('button[data-action="retry"]').count(), 1);

    expect(await page.evaluate('window.marker')).toBe(42);
  });

  it('shows a run page with its timeline and a live log', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['cloning acme/app'] });
    await login(page, server.url);
    await row(run.id).locator('a[href^="#/runs/"]').click();
    await eventuallyContains(() => page.textContent('#log'), 'cloning acme/app');
    await eventually(() => page.locator('#timeline li').count(), 1);
    await eventually(() => page.locator('#live.on').count(), 1);

    await engine.appendEvent(run.id, 'run:progress', { lines: ['running agent', 'opened PR #12'] });
    await eventuallyContains(() => page.textContent('#log'), 'opened PR #12');
    await engine.cancel(run.id, 'no longer needed');
    await eventually(() => page.textContent('#run-status'), 'cancelled');
    // The reason is shown once, above; the timeline entry points at it.
    await eventually(() => page.textContent('#run-error'), 'no longer needed');
    await eventuallyContains(() => page.textContent('#timeline'), 'run:cancelled → cancelled (the error above)');
  });

  it('says what to do next with no runs, then shows failures with their reason and count, dated timelines and a favicon, under a strict CSP', async () => {
    // The Content-Security-Policy the dashboard must live with: nothing inline, nothing from elsewhere.
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    // Only documents carry the policy; the event stream must pass untouched (a fetched copy never ends),
    // and so must the login form's POST (a re-sent copy loses the Origin the server checks).
    await page.route(`${server.url}/**`, async (route) => {
      if (route.request().resourceType() !== 'document' || route.request().method() !== 'GET') return route.continue();
      const response = await route.fetch();
      await route.fulfill({
        response,
        headers: {
          ...response.headers(),
          'content-security-policy':
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
        },
      });
    });
    await login(page, server.url);
    await eventually(() => page.isVisible('#empty'), true);
    expect(await page.textContent('#empty')).toContain('baton run analyse --repo OWNER/REPO');
    expect(await page.textContent('#empty')).toContain('baton connect OWNER/REPO');
    expect(await page.isVisible('#runs')).toBe(false);
    const icon = await page.getAttribute('link[rel="icon"]', 'href');
    const favicon = await fetch(new URL(icon!, server.url));
    expect(favicon.status).toBe(200);
    expect(favicon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await favicon.text()).toMatch(/^<svg /);

    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 9 });
    await eventually(() => page.isVisible('#empty'), false);
    await eventually(() => row(run.id).isVisible(), true);
    await engine.resume();
    await eventually(async () => (await runs.get(run.id))?.status, 'running');
    await engine.complete(run.id, {
      status: 'failed',
      error: 'the agent exited with code 3: npm test failed in packages/api\nmore detail',
    });
    await eventually(() => row(run.id).locator('.status').textContent(), 'failed');
    const reason = row(run.id).locator('.reason');
    expect(await reason.textContent()).toBe('the agent exited with code 3: npm test failed in packages/api');
    expect(await reason.getAttribute('title')).toContain('more detail');
    await eventually(() => page.textContent('[data-stat="failed"]'), '1');

    await row(run.id).locator('a[href^="#/runs/"]').click();
    await until(async () => (await page.locator('#timeline li').count()) >= 3, 'at least 3 timeline entries', 15_000, 50);
    for (const time of await page.locator('#timeline time').all()) {
      // Shown with its time zone, and the moment it names is the one in datetime.
      const shown = (await time.textContent())!;
      const [, day, clock, offset] = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC([+-]\d{2}:\d{2})?$/.exec(shown) ?? [];
      expect(day, shown).toBeDefined();
      const at = Date.parse((await time.getAttribute('datetime'))!);
      expect(Math.abs(Date.parse(`${day}T${clock}${offset ?? 'Z'}`) - at)).toBeLessThan(1000);
    }
    expect(violations).toEqual([]);
    await page.unrouteAll({ behavior: 'wait' });
  });

  it('renders on a laptop and fits a phone screen', async () => {
    const { engine } = server.app;
    for (let n = 1; n <= 3; n++) await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n });
    await page.setViewportSize({ width: 1280, height: 800 });
    await login(page, server.url);
    await eventually(() => page.locator('#runs tbody tr').count(), 3);
    const laptop = await pixelStats(page, await page.screenshot());
    expect(laptop.colours).toBeGreaterThan(20);
    expect(laptop.inked / laptop.total).toBeGreaterThan(0.01);
    expect(await page.isVisible('#runs thead')).toBe(true);

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.isVisible('#runs thead')).toBe(false);
    expect(await page.isVisible('#runs tbody tr >> nth=0')).toBe(true);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    const phone = await pixelStats(page, await page.screenshot());
    expect(phone.colours).toBeGreaterThan(20);
  });
});
