import { Hono, type Context } from 'hono';
import { errorMessage } from '../background/index.js';

export interface ReadinessCheck {
  /** Shown in the 503 answer when the check fails: `database`, `migrations`, `data directory`, `provider coder`. */
  name: string;
  /** Throws (with a reason a person can act on) when not ready. */
  check(): Promise<void>;
  /**
   * Whether taking webhooks and API calls depends on it (the database, the data directory), as
   * opposed to doing the work (the forge, the workspace provider). `/ready/ingress` asks only these.
   */
  ingress?: boolean;
}

/**
 * `/health` says the process is alive (for restarts); `/ready` says it can do its job: every
 * check passes, or 503 naming each failing one. `/ready/ingress` says it can take webhooks and API
 * calls (the checks marked `ingress`): what a load balancer in front of baton should ask, since
 * the forge delivers each webhook once and a replica that cannot run agents (a rejected provider
 * token, a bot without rights) still stores deliveries for later. Why a check fails (a database
 * error, a path, a provider's answer) is for operators: only a caller with a valid token (any
 * scope) gets `checks` with the reasons; anyone else gets the names of the failing checks.
 *
 * It answers within a second whatever its dependencies do: a load balancer whose probe times out
 * cannot tell a stalled database from a dead replica, and a probe that hangs keeps a replica that
 * cannot store in rotation. A check that has not answered within CHECK_BUDGET_MS fails with
 * "no answer within …"; the token lookup (it asks the database too) gets the same budget, and a
 * caller it could not check in time gets the names only.
 */
export function healthRoutes(checks: () => readonly ReadinessCheck[], isOperator: (c: Context) => Promise<boolean>): Hono {
  const app = new Hono();
  const answer = async (c: Context, asked: readonly ReadinessCheck[]) => {
    const operator = withTimeout(isOperator(c), CHECK_BUDGET_MS).catch(() => false);
    const results = await Promise.all(
      asked.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), CHECK_BUDGET_MS);
          return { name, ok: true as const };
        } catch (err) {
          return { name, ok: false as const, error: errorMessage(err) };
        }
      }),
    );
    const failing = results.filter((r) => !r.ok);
    const detailed = await operator;
    return c.json(
      {
        ready: failing.length === 0,
        ...(failing.length ? { failing: failing.map((f) => f.name) } : {}),
        ...(detailed ? { checks: results } : {}),
      },
      failing.length ? 503 : 200,
    );
  };
  app.get('/health', (c) => c.json({ ok: true }));
  app.get('/ready', (c) => answer(c, checks()));
  app.get('/ready/ingress', (c) =>
    answer(
      c,
      checks().filter((check) => check.ingress),
    ),
  );
  return app;
}

/** Each check's share of the one second a probe may wait (the rest is the answer's own time). */
export const CHECK_BUDGET_MS = 800;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}
