/**
 * Collects every configuration problem before failing, so a bad start lists all of them at once,
 * one line each: `KEY must be <expected form>, got "<value>"`.
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export class Problems {
  readonly list: string[] = [];

  add(message: string): void {
    this.list.push(message);
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ConfigError(this.list);
  }

  /** A whole number >= min; `undefined` input gives the default. */
  int(key: string, raw: unknown, fallback: number, min = 0): number {
    if (raw === undefined || raw === '') return fallback;
    const text = String(raw).trim();
    if (!/^-?\d+$/.test(text) || Number(text) < min) {
      this.add(`${key} must be a whole number >= ${min}, got ${show(raw)}`);
      return fallback;
    }
    return Number(text);
  }

  /** A finite number >= min. */
  number(key: string, raw: unknown, fallback: number, min = 0): number {
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (typeof raw === 'boolean' || !Number.isFinite(value) || value < min) {
      this.add(`${key} must be a number >= ${min}, got ${show(raw)}`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(key: string, raw: unknown, allowed: readonly T[], fallback: T): T {
    if (raw === undefined || raw === '') return fallback;
    if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T;
    this.add(`${key} must be one of ${allowed.join(', ')}, got ${show(raw)}`);
    return fallback;
  }

  bool(key: string, raw: unknown, fallback: boolean): boolean {
    if (raw === undefined || raw === '') return fallback;
    if (raw === true || raw === 'true' || raw === '1' || raw === 'yes') return true;
    if (raw === false || raw === 'false' || raw === '0' || raw === 'no') return false;
    this.add(`${key} must be true or false, got ${show(raw)}`);
    return fallback;
  }

  /** An http(s) URL; trailing slashes are dropped so paths can be appended. */
  url(key: string, raw: unknown): string | undefined {
    if (raw === undefined || raw === '') return undefined;
    const text = String(raw);
    try {
      const parsed = new URL(text);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
      return text.replace(/\/+$/, '');
    } catch {
      this.add(`${key} must be an http:// or https:// URL, got ${show(raw)}`);
      return undefined;
    }
  }

  string(key: string, raw: unknown): string | undefined {
    if (raw === undefined || raw === null || raw === '') return undefined;
    if (typeof raw !== 'string' && typeof raw !== 'number') {
      this.add(`${key} must be a string, got ${show(raw)}`);
      return undefined;
    }
    return String(raw);
  }

  required(key: string, value: unknown, why: string): void {
    if (value === undefined || value === '') this.add(`${key} is required ${why}`);
  }
}

/** Quotes a bad value for an error line; long values are cut so a pasted secret never floods a log. */
export function show(raw: unknown): string {
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  const cut = text.length > 60 ? `${text.slice(0, 57)}...` : text;
  return `"${cut}"`;
}
