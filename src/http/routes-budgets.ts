import { Hono } from 'hono';
import { parseScope } from '../budgets/index.js';
import type { BudgetService } from '../runs/index.js';
import type { AuthEnv } from './auth.js';
import { HttpError } from '../web-kit/index.js';

const BODY_KEYS = ['scope', 'tokens', 'costUsd'] as const;

/**
 * The daily budgets: `GET /api/budgets` (read scope) shows today's limits, what is used and left
 * and the runs held; `PUT` or `POST /api/budgets` (admin scope) sets today's limits of one
 * configured scope, `{ "scope": "global", "tokens": 3000000, "costUsd": 80 }`, and held runs the
 * new limit lets through start at once. The limit holds until the day ends in the budgets' zone;
 * then baton.yaml's applies again.
 */
export function budgetRoutes(budgets: BudgetService, now: () => number): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.get('/api/budgets', async (c) => c.json(await budgets.overview(now())));
  const set = async (c: { req: { json(): Promise<unknown> }; json(body: unknown): Response }) => {
    const { scope, limits } = parseBody(await readJson(c.req));
    const result = await budgets.setToday(scope, limits, now());
    if (!result) {
      const known = budgets.scopes();
      throw new HttpError(
        404,
        'not_found',
        `no budget is configured for scope "${scope.slice(0, 120)}" (configured: ${known.length ? known.join(', ') : 'none; see budgets: in baton.yaml'})`,
      );
    }
    return c.json(result);
  };
  app.put('/api/budgets', set);
  app.post('/api/budgets', set);
  return app;
}

async function readJson(req: { json(): Promise<unknown> }): Promise<unknown> {
  try {
    return await req.json();
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `invalid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
}

function parseBody(body: unknown): { scope: string; limits: { tokens?: number; costUsd?: number } } {
  const example = 'body must be a JSON object such as {"scope":"global","tokens":3000000,"costUsd":80}';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_body', example);
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!(BODY_KEYS as readonly string[]).includes(key)) {
      throw new HttpError(400, 'invalid_body', `unknown field "${key.slice(0, 40)}" (known: ${BODY_KEYS.join(', ')})`);
    }
  }
  const { scope, tokens, costUsd } = fields;
  if (typeof scope !== 'string' || !parseScope(scope)) {
    throw new HttpError(400, 'invalid_body', 'scope is required: "global", "repository:OWNER/REPO" or "stage:NAME"');
  }
  if (tokens === undefined && costUsd === undefined) throw new HttpError(400, 'invalid_body', `tokens or costUsd is required; ${example}`);
  if (tokens !== undefined && !(typeof tokens === 'number' && Number.isSafeInteger(tokens) && tokens > 0)) {
    throw new HttpError(400, 'invalid_body', `tokens must be a whole number > 0, got ${JSON.stringify(tokens)?.slice(0, 40)}`);
  }
  if (costUsd !== undefined && !(typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd > 0)) {
    throw new HttpError(400, 'invalid_body', `costUsd must be a number > 0, got ${JSON.stringify(costUsd)?.slice(0, 40)}`);
  }
  return { scope, limits: { ...(tokens !== undefined ? { tokens } : {}), ...(costUsd !== undefined ? { costUsd } : {}) } };
}
