import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The webhook secret baton generates on a first start without `WEBHOOK_SECRET`, kept in the data
 * directory (mode 0600) so that later starts, `baton connect` and `baton doctor` use the same one.
 * A newcomer gets signed webhooks without choosing a secret; an operator who sets
 * `WEBHOOK_SECRET` never sees this file.
 */
export const GENERATED_WEBHOOK_SECRET_FILE = 'webhook-secret';

export function generatedWebhookSecretPath(dataDir: string): string {
  return path.join(dataDir, GENERATED_WEBHOOK_SECRET_FILE);
}

/** The generated secret, if a start made one; a file that cannot be read or is empty counts as none. */
export function readGeneratedWebhookSecret(dataDir: string): string | undefined {
  try {
    const value = fs.readFileSync(generatedWebhookSecretPath(dataDir), 'utf8').trim();
    return value === '' ? undefined : value;
  } catch {
    return undefined;
  }
}

/**
 * The generated secret, made now (64 hex characters, in a new 0600 file) unless it exists.
 * `created` says whether this call made it: only then is it handed over to the operator.
 */
export function ensureGeneratedWebhookSecret(dataDir: string): { secret: string; file: string; created: boolean } {
  const file = generatedWebhookSecretPath(dataDir);
  const existing = readGeneratedWebhookSecret(dataDir);
  if (existing !== undefined) return { secret: existing, file, created: false };
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('hex');
  try {
    // `wx`: of two replicas starting at once on one data directory, one writes and the other reads.
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    const raced = (err as NodeJS.ErrnoException).code === 'EEXIST' ? readGeneratedWebhookSecret(dataDir) : undefined;
    if (raced === undefined) throw err;
    return { secret: raced, file, created: false };
  }
  return { secret, file, created: true };
}
