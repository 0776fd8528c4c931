/** Thrown for a bad command line; the CLI prints the message and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface ParsedArgs {
  positional: string[];
  flags: Record<string, string | true>;
}

/**
 * `--name value`, `--name=value`, boolean `--json`; `booleans` lists flags that take no value.
 * Unknown flags are errors, so a typo never silently changes what a command does.
 */
export function parseArgs(
  argv: readonly string[],
  known: { values?: string[]; booleans?: string[]; short?: Record<string, string> } = {},
): ParsedArgs {
  const values = known.values ?? [];
  const booleans = known.booleans ?? [];
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i]!;
    if (known.short?.[arg]) arg = `--${known.short[arg]}`;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (booleans.includes(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      flags[name] = true;
    } else if (values.includes(name)) {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
      flags[name] = value;
    } else {
      const all = [...values, ...booleans].map((f) => `--${f}`);
      throw new UsageError(`unknown option --${name}${all.length ? ` (known: ${all.join(', ')})` : ''}`);
    }
  }
  return { positional, flags };
}

/** Left-aligned columns for people; scripts use --json. */
export function table(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

export function formatDuration(ms: number): string {
  let s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return h ? `${h}h${m}m` : m ? `${m}m${s}s` : `${s}s`;
}
