import pino from 'pino';

/** A logger that writes nowhere; tests assert behaviour, not log lines. */
export const silentLogger = pino({ level: 'silent' });
