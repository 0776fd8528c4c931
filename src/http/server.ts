import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import type { HttpLimits } from './config-section.js';

/**
 * How often Node looks for connections past their headers or request timeout. Its default, 30 s,
 * lets a slow client hold a connection that long past the timeout; a second costs next to nothing.
 */
const CONNECTIONS_CHECK_MS = 1_000;

/**
 * The Node HTTP server for the app, with the limits of `http:` in baton.yaml: a client that sends
 * its headers or its request too slowly is cut off, idle keep-alive connections close, and
 * connections past the cap are closed at once instead of piling up. (Node's own defaults are a
 * 300 s request timeout and no cap.) `baton serve` and the tests start the app through this.
 */
export function createHttpServer(app: Pick<Hono, 'fetch'>, options: { port: number; hostname: string; limits: HttpLimits }): Server {
  const { limits } = options;
  const server = serve({
    fetch: app.fetch,
    port: options.port,
    hostname: options.hostname,
    serverOptions: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
    },
  }) as Server;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  return server;
}
