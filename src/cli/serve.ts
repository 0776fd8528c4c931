import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { describeConfig, type LoadedConfig } from '../config/index.js';
import { createApp } from '../http/index.js';
import { createLogger } from '../log/index.js';

/**
 * `baton serve`: listens at once (so /health answers while the database is still coming up),
 * then starts the app. SIGTERM/SIGINT: stop accepting, stop claiming, finish in-flight
 * transitions, close the store, exit 0.
 */
export async function runServe(loaded: LoadedConfig): Promise<number> {
  const { config } = loaded;
  const logger = createLogger({ level: config.logLevel });
  for (const notice of loaded.notices) logger.info(notice);
  for (const warning of loaded.warnings) logger.warn(warning);
  logger.info({ config: describeConfig(loaded) }, 'configuration');
  const app = createApp(config, { logger });

  const server = serve({ fetch: app.hono.fetch, port: config.port, hostname: config.host });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${err.code ?? err.message}`);
  });
  const address = server.address() as AddressInfo;
  logger.info({ port: address.port, host: config.host }, 'listening');

  const startup = app.start().catch((err: unknown) => logger.error({ err }, 'start failed'));

  return new Promise<number>((resolve) => {
    let shuttingDown = false;
    const shutdown = (signal: string) => {
      if (shuttingDown) return;
      shuttingDown = true;
      logger.info({ signal }, 'shutting down');
      const closed = new Promise<void>((done) => server.close(() => done()));
      // Idle keep-alive connections would hold close() open; in-flight requests still finish.
      (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      Promise.all([closed, startup.then(() => app.stop())])
        .then(() => {
          logger.info('stopped');
          resolve(0);
        })
        .catch((err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        });
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}
