import pino, { type Logger } from 'pino';
import { maskUrlCredentialsInJson } from '../config-schema/index.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export type { Logger } from 'pino';

/**
 * Structured JSON logs (pino); human-readable when stdout is a terminal. Fields whose names say
 * they hold a secret are censored wherever they appear, and the password of any URL on any line
 * (an error's message or stack, a field) is masked, as a second line of defence: code must not
 * log secrets in the first place.
 */
export function createLogger(options: { level: LogLevel; pretty?: boolean; destination?: pino.DestinationStream }): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const base: pino.LoggerOptions = {
    level: options.level,
    base: { service: 'baton' },
    redact: {
      paths: [
        '*.token',
        '*.secret',
        '*.password',
        '*.authorization',
        '*.Authorization',
        '*.callbackToken',
        '*.forgeToken',
        'token',
        'secret',
        'headers.authorization',
        'req.headers.authorization',
      ],
      censor: '[redacted]',
    },
    hooks: { streamWrite: maskUrlCredentialsInJson },
  };
  if (options.destination) return pino(base, options.destination);
  if (pretty) {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' } },
    });
  }
  return pino(base);
}
