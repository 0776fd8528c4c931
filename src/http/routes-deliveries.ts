import { Hono } from 'hono';
import { parseRepositoryName } from '../repositories/index.js';
import { DELIVERY_SOURCES, InspectorError, type InspectorFilter, type DeliveryInspector, type InspectorSource } from '../ingress/index.js';
import type { AuthEnv } from './auth.js';
import { HttpError } from '../web-kit/index.js';

const KNOWN_QUERY = ['repo', 'event', 'verdict', 'source', 'cursor', 'limit'];
const MAX_LIMIT = 200;

/**
 * The deliveries inspector under /api (auth is applied by the app before these run: reading needs
 * `read`, replaying, a POST, needs `operate`). Documented in docs/api.md, "Deliveries inspector";
 * keep the two in step.
 */
export function deliveriesRoutes(inspector: DeliveryInspector): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();

  app.get('/api/deliveries', async (c) => c.json(await refused(() => inspector.list(parseFilter(c.req.query())))));

  // Before `:id`, which would take "health" for an id.
  app.get('/api/deliveries/health', (c) => c.json(inspector.health()));

  app.get('/api/deliveries/:id', async (c) => {
    const id = deliveryId(c.req.param('id'));
    const delivery = await inspector.get(id);
    if (!delivery) throw new HttpError(404, 'not_found', `delivery ${id} does not exist (or was pruned after the retention period)`);
    return c.json({ delivery });
  });

  app.post('/api/deliveries/:id/replay', async (c) => {
    const id = deliveryId(c.req.param('id'));
    // Who replayed goes into the delivery's history (API, dashboard, CLI), never to the forge.
    const delivery = await refused(() => inspector.replay(id, { tokenName: c.get('apiToken').name }));
    return c.json({ delivery, replayOf: id }, 202);
  });

  return app;
}

/** The inspector's refusals as HTTP errors: an unknown delivery 404, a forged cursor 400, a replay too early 409. */
async function refused<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof InspectorError)) throw err;
    const status = err.code === 'not_found' ? 404 : err.code === 'bad_cursor' ? 400 : 409;
    throw new HttpError(status, err.code, err.message, { cause: err });
  }
}

function deliveryId(raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1)
    throw new HttpError(400, 'bad_request', `delivery id must be a positive whole number, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}

function parseFilter(query: Record<string, string>): InspectorFilter {
  for (const key of Object.keys(query)) {
    if (!KNOWN_QUERY.includes(key))
      throw new HttpError(400, 'bad_request', `unknown query parameter "${key.slice(0, 40)}" (known: ${KNOWN_QUERY.join(', ')})`);
  }
  const filter: InspectorFilter = { limit: 50 };
  if (query.repo) {
    const name = parseRepositoryName(query.repo);
    if (!name) throw new HttpError(400, 'bad_request', `repo must look like owner/repo, got "${query.repo.slice(0, 80)}"`);
    filter.repository = `${name.owner}/${name.repo}`.toLowerCase();
  }
  if (query.event) filter.event = bounded('event', query.event);
  if (query.verdict) filter.verdict = bounded('verdict', query.verdict);
  if (query.source) {
    if (!(DELIVERY_SOURCES as readonly string[]).includes(query.source))
      throw new HttpError(400, 'bad_request', `source must be one of ${DELIVERY_SOURCES.join(', ')}, got "${query.source.slice(0, 40)}"`);
    filter.source = query.source as InspectorSource;
  }
  if (query.cursor !== undefined) filter.cursor = query.cursor;
  if (query.limit !== undefined) {
    if (!/^\d{1,4}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_LIMIT)
      throw new HttpError(400, 'bad_request', `limit must be a whole number from 1 to ${MAX_LIMIT}, got "${query.limit.slice(0, 40)}"`);
    filter.limit = Number(query.limit);
  }
  return filter;
}

/** Filter words are short; a long one is a mistake, named rather than searched for. */
function bounded(name: string, value: string): string {
  if (value.length > 100 || !/^[\w .:-]+$/.test(value))
    throw new HttpError(400, 'bad_request', `${name} must be a short word such as "issues" or "started", got "${value.slice(0, 40)}"`);
  return value;
}
