import { Problems, show } from './problems.js';
import type { Env } from './load.js';
import type { ApiConfig, EventsConfig, EventWebhook } from './types.js';

/**
 * Names of outbound event webhooks (`events.webhooks[].events`). `run.progress` is opt-in: it
 * fires for every log batch.
 */
export const WEBHOOK_EVENTS = [
  'run.queued',
  'run.started',
  'run.progress',
  'run.retrying',
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'run.timed_out',
] as const;

/** `api:` in baton.yaml plus `BATON_BOOTSTRAP_TOKEN`. */
export function parseApiSection(problems: Problems, env: Env, raw: Record<string, unknown>): ApiConfig {
  const bootstrapToken = problems.string('BATON_BOOTSTRAP_TOKEN', env.BATON_BOOTSTRAP_TOKEN);
  if (bootstrapToken !== undefined && (bootstrapToken.length < 24 || /\s/.test(bootstrapToken))) {
    // The value itself is never echoed: it is a secret.
    problems.add(
      `BATON_BOOTSTRAP_TOKEN must be at least 24 characters without spaces (e.g. from "openssl rand -hex 32"), got ${bootstrapToken.length} characters`,
    );
  }
  for (const key of Object.keys(raw)) {
    if (!['publicQueue', 'publicMetrics'].includes(key))
      problems.add(`baton.yaml: unknown key "api.${key}" (known keys: publicQueue, publicMetrics)`);
  }
  return {
    publicQueue: problems.bool('api.publicQueue', raw.publicQueue, false),
    publicMetrics: problems.bool('api.publicMetrics', raw.publicMetrics, false),
    ...(bootstrapToken ? { bootstrapToken } : {}),
  };
}

/** `events.webhooks: [{ url, secret, events: [...] }]` in baton.yaml. */
export function parseEventsSection(problems: Problems, raw: Record<string, unknown>): EventsConfig {
  const list = raw.webhooks;
  if (list === undefined || list === null) return { webhooks: [] };
  if (!Array.isArray(list)) {
    problems.add(`events.webhooks must be a list of { url, secret, events }, got ${show(list)}`);
    return { webhooks: [] };
  }
  const webhooks: EventWebhook[] = [];
  list.forEach((item: unknown, i) => {
    const key = `events.webhooks[${i}]`;
    if (!item || typeof item !== 'object' || Array.isArray(item)) {
      problems.add(`${key} must be a mapping { url, secret, events }, got ${show(item)}`);
      return;
    }
    const entry = item as Record<string, unknown>;
    const url = problems.url(`${key}.url`, entry.url);
    problems.required(`${key}.url`, url, '(the endpoint that receives the events)');
    const secret = problems.string(`${key}.secret`, entry.secret);
    if (secret === undefined || secret.length < 16) {
      problems.add(`${key}.secret must be a string of at least 16 characters (the HMAC key the receiver verifies with)`);
    }
    const events = entry.events ?? WEBHOOK_EVENTS.filter((e) => e !== 'run.progress');
    if (!Array.isArray(events) || events.length === 0) {
      problems.add(`${key}.events must be a non-empty list of ${WEBHOOK_EVENTS.join(', ')}, got ${show(events)}`);
      return;
    }
    for (const name of events) {
      if (!(WEBHOOK_EVENTS as readonly unknown[]).includes(name)) {
        problems.add(`${key}.events has unknown event ${show(name)} (known: ${WEBHOOK_EVENTS.join(', ')})`);
      }
    }
    if (url && secret) webhooks.push({ url, secret, events: events as EventWebhook['events'] });
  });
  return { webhooks };
}
