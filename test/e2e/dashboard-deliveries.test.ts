import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createInboxStore, type InboxStore, type NewDelivery } from '../../src/ingress/index.js';
import { ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, hasChromium, launchChromium, login, openPage } from '../helpers/browser.js';
import { newDelivery } from '../helpers/deliveries.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const delivery = (over: Partial<NewDelivery> = {}) =>
  newDelivery({
    deliveryId: 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
    headers: { 'x-gitea-event': 'issues', 'x-gitea-signature': 'c0ffee', 'x-gitea-delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473' },
    body: '{"action":"opened","number":7}',
    number: 7,
    ...over,
  });

describe.skipIf(!hasChromium('the deliveries dashboard tests'))('deliveries inspector in headless Chromium', { timeout: 90_000 }, () => {
  let browser: Browser;
  let t: TestStore;
  let server: TestApp;
  let page: Page;
  let inbox: InboxStore;
  /** What Chromium reports blocking under baton's Content-Security-Policy: the view must need nothing it forbids. */
  let violations: string[];

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    t = await createSqliteTestStore();
    // Not started: no inbox worker, so the deliveries keep the verdicts the test gives them.
    server = await startTestApp(t, { start: false });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
    inbox = createInboxStore(t.store);
    ({ page, violations } = await openPage(browser));
  });
  afterEach(async () => {
    expect(violations).toEqual([]);
    await page?.context().close();
    await server?.close();
    await t?.cleanup();
  });

  const row = (id: number) => page.locator(`#deliveries tr[data-delivery-id="${id}"]`);

  async function giveVerdict(runIds: number[] = []): Promise<void> {
    const claimed = await inbox.claimNext(60_000);
    await t.store.transaction((_trx, scope) =>
      inbox.markProcessed(scope, claimed!, { outcome: 'started', verdict: 'started: analyse queued', runIds }),
    );
  }

  it('lists deliveries with their verdicts, filters them, and opens a detail panel with secrets masked and run links', async () => {
    const { run } = await server.app.engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 7 });
    const started = await inbox.insert(delivery());
    await giveVerdict([run.id]);
    const waiting = await inbox.insert(
      delivery({ deliveryId: null, event: 'pull_request', eventType: 'pull_request_sync', repository: 'acme/web', number: 3, body: '{}' }),
    );

    await login(page, server.url);
    await page.click('nav.views a[href="#/deliveries"]');
    await eventually(() => row(started.id).locator('.verdict').textContent(), 'started: analyse queued');
    await eventually(() => row(waiting.id).locator('.verdict').textContent(), 'pending');
    expect(await row(waiting.id).locator('td[data-label="event"]').textContent()).toBe('pull_request (pull_request_sync)');
    expect(await page.locator('#deliveries tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-delivery-id')))).toEqual([
      String(waiting.id),
      String(started.id),
    ]);

    await page.fill('#deliveries-filter input[name="verdict"]', 'started');
    await page.click('#deliveries-filter button[type="submit"]');
    await eventually(() => page.locator('#deliveries tbody tr').count(), 1);
    expect(await row(started.id).count()).toBe(1);

    await row(started.id).locator('a[href^="#/deliveries/"]').click();
    await eventually(() => page.isVisible('#delivery-detail'), true);
    await eventually(() => page.textContent('#delivery-verdict'), 'started: analyse queued');
    const headers = await page.textContent('#delivery-headers');
    expect(headers).toContain('x-gitea-signature: ******');
    expect(headers).not.toContain('c0ffee');
    expect(await page.textContent('#delivery-body')).toBe('{"action":"opened","number":7}');
    // The run it started is one click away, in the dashboard's own run page.
    await page.click(`#delivery-runs a[href="#/runs/${run.id}"]`);
    await eventually(() => page.isVisible('#run-view'), true);
    await eventually(() => page.textContent('#run-title'), `Run #${run.id}: analyse acme/app#7`);
  });

  it('replays from the detail panel with an operate token, and shows a read token no Replay button', async () => {
    const original = await inbox.insert(delivery());
    await giveVerdict();
    const { token } = await server.app.tokens.create('viewer', 'read');
    await login(page, server.url, token);
    await page.goto(`${server.url}/#/deliveries/${original.id}`);
    await eventually(() => page.isVisible('#delivery-detail'), true);
    expect(await page.isVisible('#delivery-replay')).toBe(false);
    await page.context().clearCookies();

    await login(page, server.url);
    await page.goto(`${server.url}/#/deliveries/${original.id}`);
    await eventually(() => page.isVisible('#delivery-replay'), true);
    await page.click('#delivery-replay');
    // The panel moves to the replay, a new delivery, pending until the inbox processes it.
    await until(
      async () =>
        /^#\/deliveries\/\d+$/.test(await page.evaluate('location.hash')) &&
        (await page.evaluate('location.hash')) !== `#/deliveries/${original.id}`,
      'the replay to open',
      15_000,
      50,
    );
    const copyId = Number(((await page.evaluate('location.hash')) as string).split('/').at(-1));
    await eventually(() => page.textContent('#delivery-verdict'), 'pending');
    await eventually(async () => (await page.textContent('#delivery-fields'))?.includes(`replay of #${original.id}`), true);
    expect(await row(copyId).locator('td[data-label="source"]').textContent()).toBe('replay');

    await page.goto(`${server.url}/#/deliveries/${original.id}`);
    await eventually(async () => (await page.textContent('#delivery-history'))?.includes(`by token "admin" as delivery #${copyId}`), true);
  });
});
