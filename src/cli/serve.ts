import type { AddressInfo } from 'node:net';
import { describeConfig, type LoadedConfig } from '../server/index.js';
import { createHttpServer } from '../http/index.js';
import { createLogger, type Logger } from '../log/index.js';
import { createApp, StartupError } from '../server/index.js';

/** After a clean stop, how long anything still open (a connect to an unreachable database) may hold the exit. */
const EXIT_GRACE_MS = 1_000;

/**
 * `baton serve`: listens at once (so /health answers while the database is still coming up),
 * then starts the app. SIGTERM/SIGINT, at any point (start-up retries included): stop accepting,
 * stop claiming, finish in-flight transitions, close the store, exit 0; a second signal exits at
 * once. A start-up that cannot succeed (the database refuses baton) exits 1 with one line saying why.
 */
export async function runServe(loaded: LoadedConfig): Promise<number> {
  const { config } = loaded;
  const logger = createLogger({ level: config.logLevel });
  for (const notice of loaded.notices) logger.info(notice);
  for (const warning of loaded.warnings) logger.warn(warning);
  logger.info({ config: describeConfig(loaded) }, 'configuration');
  const app = createApp(config, { logger });

  const server = createHttpServer(app.hono, { port: config.port, hostname: config.host, limits: config.http });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  }).catch(async (err: NodeJS.ErrnoException) => {
    await app.stop();
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${err.code ?? err.message}`);
  });
  const address = server.address() as AddressInfo;
  logger.info({ port: address.port, host: config.host }, 'listening');

  const code = await new Promise<number>((resolve) => {
    let shuttingDown = false;
    const shutdown = (exitCode: number) => {
      if (shuttingDown) return;
      shuttingDown = true;
      const closed = new Promise<void>((done) => server.close(() => done()));
      // Idle keep-alive connections would hold close() open; in-flight requests still finish.
      (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      Promise.all([closed, app.stop()])
        .then(() => {
          logger.info('stopped');
          resolve(exitCode);
        })
        .catch((err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        });
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (shuttingDown) {
        logger.warn({ signal }, 'second signal: exiting without waiting for the shutdown to finish');
        process.exit(1);
      }
      logger.info({ signal }, 'shutting down');
      shutdown(0);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);

    app.start().catch((err: unknown) => {
      reportStartFailure(logger, err);
      shutdown(1);
    });
  });
  // Everything is stopped; a socket still connecting to an unreachable database must not keep
  // the process alive until its own timeout.
  setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  return code;
}

function reportStartFailure(logger: Logger, err: unknown): void {
  // A StartupError is a person's to fix and says how in one line; anything else is a bug.
  if (err instanceof StartupError) logger.fatal({ code: err.code }, `cannot start: ${err.message}`);
  else logger.fatal({ err }, 'cannot start');
}
