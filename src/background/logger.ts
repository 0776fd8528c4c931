/** What background work logs through: pino's `Logger` fits, and so does a test's recorder. */
export interface BackgroundLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export const silentLogger: BackgroundLogger = { warn() {}, error() {} };
