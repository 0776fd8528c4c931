/** What background work logs through: pino's `Logger` fits, and so does a test's recorder. */
export interface BackgroundLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export const silentLogger: BackgroundLogger = { warn() {}, error() {} };

/**
 * For parts made without a logger (a test, a script): what goes wrong still shows, on stderr.
 * The server always passes its own.
 */
export const consoleLogger: BackgroundLogger = {
  warn: (details, message) => console.error(message, details),
  error: (details, message) => console.error(message, details),
};
