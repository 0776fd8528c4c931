/**
 * Every configuration problem, collected before failing so a bad start lists all of them at once,
 * one line each: `KEY must be <expected form>, got "<value>"`.
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}
