import fs from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ADMIN_TOKEN } from './app.js';
import { until } from './until.js';

/** The system's Chromium (apt-get install chromium), driven by playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless in a container: no sandbox of Chromium's own (the tests may run as root), no GPU, and
 * none of the browser's own traffic (updates, sync, QUIC) beside what the page asks for.
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Whether Chromium is installed; when it is not, warns that `suite` (to be skipped) cannot run. */
export function hasChromium(suite: string): boolean {
  const found = fs.existsSync(CHROMIUM);
  if (!found) console.warn(`${CHROMIUM} is missing (apt-get install chromium): skipping ${suite}.`);
  return found;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/**
 * A page in a context of its own (no cookies from another test), and the list of what Chromium
 * reports blocking under the server's Content-Security-Policy: the dashboard must need nothing it
 * forbids, so a test expects the list empty at its end.
 */
export async function openPage(browser: Browser): Promise<{ page: Page; violations: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const violations: string[] = [];
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) violations.push(message.text());
  });
  return { page, violations };
}

/** Submits `token` on the login form at `url`; the next page may be the form again, with an error. */
export async function submitToken(page: Page, url: string, token = ADMIN_TOKEN): Promise<void> {
  await page.goto(url);
  await page.fill('#token', token);
  await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
}

/** Logs in with `token` and waits until the dashboard has set itself up (`body[data-ready]`). */
export async function login(page: Page, url: string, token = ADMIN_TOKEN): Promise<void> {
  await submitToken(page, url, token);
  await page.waitForSelector('body[data-ready="true"]');
}

/**
 * Waits until `read()` gives `expected` (compared as JSON, so arrays and objects compare by
 * value); a timeout says what it read last. The machine may be busy: give the browser time.
 */
export async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
  let last: T | undefined;
  try {
    await until(
      async () => JSON.stringify((last = await read())) === JSON.stringify(expected),
      `${read.toString()} to give ${JSON.stringify(expected)}`,
      15_000,
      50,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message} (last: ${JSON.stringify(last)})`, { cause: err });
  }
}

/** Waits until the text `read()` gives contains `part`. */
export async function eventuallyContains(read: () => Promise<string | null>, part: string): Promise<void> {
  await until(async () => ((await read()) ?? '').includes(part), `${read.toString()} to contain ${JSON.stringify(part)}`, 15_000, 50);
}
