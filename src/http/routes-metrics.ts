import { Hono, type MiddlewareHandler } from 'hono';
import type { MetricsRegistry } from '../metrics/index.js';

/** `GET /metrics` in the Prometheus text format; `guard` is the token check unless metrics are public. */
export function metricsRoutes(registry: MetricsRegistry, guard?: MiddlewareHandler): Hono {
  const app = new Hono();
  if (guard) app.use('/metrics', guard);
  app.get('/metrics', async (c) => c.body(await registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }));
  return app;
}
