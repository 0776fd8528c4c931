import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

/** One event of `@octokit/webhooks-examples`: every example body GitHub documents for it. */
interface CorpusEvent {
  name: string;
  actions: string[];
  examples: Record<string, unknown>[];
}

const require = createRequire(import.meta.url);

/**
 * The real payload corpus (`@octokit/webhooks-examples`, api.github.com): bodies as GitHub sent
 * them, without headers (tests add those as GitHub does, `githubHeaders`).
 */
export function githubCorpus(): CorpusEvent[] {
  return require('@octokit/webhooks-examples/api.github.com/index.json') as CorpusEvent[];
}

/** The examples of one event, optionally of one action; a deep copy, free to change. */
export function githubExamples(event: string, action?: string): Record<string, unknown>[] {
  const found = githubCorpus().find((e) => e.name === event);
  if (!found) throw new Error(`@octokit/webhooks-examples has no ${event} event`);
  return found.examples.filter((e) => action === undefined || e.action === action).map((e) => structuredClone(e));
}

/** The first example of an event and action. */
export function githubExample(event: string, action?: string): Record<string, unknown> {
  const [first] = githubExamples(event, action);
  if (!first) throw new Error(`@octokit/webhooks-examples has no ${event}.${action} example`);
  return first;
}

/**
 * The headers GitHub sends with a delivery (docs.github.com, "Webhook events and payloads",
 * delivery headers): the event, the delivery GUID (the same on a redelivery), the hook's id,
 * the HMAC-SHA256 of the raw body as `sha256=<hex>` when the hook has a secret.
 */
export function githubHeaders(
  body: Uint8Array | string,
  options: { event: string; secret?: string; delivery?: string; hookId?: number },
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/a1b2c3d',
    'x-github-event': options.event,
    'x-github-delivery': options.delivery ?? randomUUID(),
    'x-github-hook-id': String(options.hookId ?? 123456789),
    'x-github-hook-installation-target-type': 'repository',
    'x-github-hook-installation-target-id': '186853002',
  };
  if (options.secret !== undefined) {
    const hmac = createHmac('sha256', options.secret).update(body).digest('hex');
    headers['x-hub-signature-256'] = `sha256=${hmac}`;
    headers['x-hub-signature'] = `sha1=${createHmac('sha1', options.secret).update(body).digest('hex')}`;
  }
  return headers;
}
