import { createHash, createHmac, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const OWN_FIXTURES_DIR = path.join(REPO_ROOT, 'test/fixtures/gitea');

/** The secret of the signature test vectors in reference/gitea/WEBHOOKS.md §2. */
export const VECTOR_SECRET = 'IsWishesWereHorsesWedAllBeEatingSteak!';

export function readFixture(name: string): Buffer {
  return fs.readFileSync(path.join(OWN_FIXTURES_DIR, name));
}

/** A fixture as an object to modify, re-serialised the way Gitea does (2-space indent). */
export function fixtureJson(name: string): Record<string, unknown> {
  return JSON.parse(readFixture(name).toString('utf8')) as Record<string, unknown>;
}

export function toBody(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value, null, 2));
}

export interface GiteaHeaderOptions {
  /** X-Gitea-Event (coarse). */
  event: string;
  /** X-Gitea-Event-Type (fine); omit for the pre-1.19 / header-less forms. */
  eventType?: string;
  secret?: string;
  delivery?: string;
  /** Also send Forgejo's X-Forgejo-* headers, as Forgejo does. */
  forgejo?: boolean;
}

/**
 * Exactly the headers Gitea's `addDefaultHeaders` sets (WEBHOOKS.md §2): the same values under the
 * Gitea, Gogs and GitHub names, HMAC-SHA256 hex (and the `sha256=` / `sha1=` forms), empty
 * signatures when the webhook has no secret.
 */
export function giteaHeaders(body: Uint8Array, options: GiteaHeaderOptions): Record<string, string> {
  const delivery = options.delivery ?? randomUUID();
  const sha256 = options.secret ? createHmac('sha256', options.secret).update(body).digest('hex') : '';
  const sha1 = options.secret ? createHmac('sha1', options.secret).update(body).digest('hex') : '';
  const eventType = options.eventType ?? options.event;
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Gitea-Delivery': delivery,
    'X-Gitea-Event': options.event,
    'X-Gitea-Event-Type': eventType,
    'X-Gitea-Signature': sha256,
    'X-Gogs-Delivery': delivery,
    'X-Gogs-Event': options.event,
    'X-Gogs-Event-Type': eventType,
    'X-Gogs-Signature': sha256,
    'X-Hub-Signature': `sha1=${sha1}`,
    'X-Hub-Signature-256': `sha256=${sha256}`,
    'X-GitHub-Delivery': delivery,
    'X-GitHub-Event': options.event,
    'X-GitHub-Event-Type': eventType,
  };
  if (options.eventType === undefined) {
    for (const name of ['X-Gitea-Event-Type', 'X-Gogs-Event-Type', 'X-GitHub-Event-Type']) delete headers[name];
  }
  if (options.forgejo) {
    headers['X-Forgejo-Delivery'] = delivery;
    headers['X-Forgejo-Event'] = options.event;
    if (options.eventType !== undefined) headers['X-Forgejo-Event-Type'] = eventType;
    headers['X-Forgejo-Signature'] = sha256;
  }
  return headers;
}

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}
