import { parseArgs } from 'node:util';

/**
 * Command lines are parsed by `node:util` `parseArgs` in strict mode, from one description per
 * command that also gives its usage line and its `--help`. Unknown options, an option without
 * its value (`--status --json` is not "status --json") and stray arguments are errors naming the
 * option and the command's usage, so a typo never silently changes what a command does.
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's name in the usage line. @example 'OWNER/REPO' */
  value?: string;
  /** One line for `--help`. */
  description: string;
  /** A string option the command cannot do without. @default false */
  required?: boolean;
}

export interface CommandSpec<O extends Record<string, OptionSpec> = Record<string, OptionSpec>> {
  /** As a user types it. @example 'baton runs ls' */
  command: string;
  /** Positional arguments, optional ones in brackets. @example ['RUN'] @default [] */
  positionals?: readonly string[];
  /** What the command does, for `--help`. */
  summary: string;
  options: O;
}

/** A command with subcommands (`baton runs ls|show|…`). */
export interface CommandGroup {
  command: string;
  summary: string;
  subcommands: ReadonlyArray<CommandSpec & { aliases?: readonly string[] }>;
}

/** Typed values for a spec written `as const`; either kind for a spec only known as a `CommandSpec`. */
export type OptionValues<O extends Record<string, OptionSpec>> = {
  [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : O[K]['type'] extends 'string' ? string : string | boolean;
};

export interface ParsedCommand<O extends Record<string, OptionSpec>> {
  values: OptionValues<O>;
  positionals: string[];
}

/** A bad command line: the CLI prints the message and the command's usage and exits 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command it is about, whose usage and `--help` the CLI points to. */
    readonly command?: CommandSpec | CommandGroup,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** `--help` was asked for: not a failure; the CLI prints `text` and exits 0. */
export class HelpRequested extends Error {
  constructor(readonly text: string) {
    super(text);
    this.name = 'HelpRequested';
  }
}

const HELP_OPTION = { help: { type: 'boolean', short: 'h', description: 'show this help' } } as const;

/** Parses `argv` (what follows the command's name) against `spec`. */
export function parseCommand<O extends Record<string, OptionSpec>>(spec: CommandSpec<O>, argv: readonly string[]): ParsedCommand<O> {
  const options: Record<string, OptionSpec> = { ...spec.options, ...HELP_OPTION };
  const config = {
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(options).map(([name, o]) => [name, o.short ? { type: o.type, short: o.short } : { type: o.type }]),
    ),
    allowPositionals: true,
  };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ ...config, strict: true });
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Node's message for an unknown option goes on about positionals; name the option plainly.
    const unknown =
      code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? parseArgs({ ...config, strict: false, tokens: true }).tokens?.find((t) => t.kind === 'option' && !(t.name in options))
        : undefined;
    // The others name the option too: "Option '--status <value>' argument missing", "… is ambiguous".
    const problem = unknown?.kind === 'option' ? `unknown option ${unknown.rawName}` : (err as Error).message;
    throw new UsageError(`${spec.command}: ${problem}`, spec);
  }
  if (parsed.values.help) throw new HelpRequested(helpOf(spec));
  for (const [name, o] of Object.entries(spec.options)) {
    if (o.required && parsed.values[name] === undefined) {
      throw new UsageError(`${spec.command} needs --${name} ${o.value ?? 'VALUE'} (${o.description})`, spec);
    }
  }
  const allowed = spec.positionals?.length ?? 0;
  if (parsed.positionals.length > allowed) {
    throw new UsageError(`${spec.command}: unexpected argument "${parsed.positionals[allowed]}"`, spec);
  }
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === '') throw new UsageError(`${spec.command}: --${name} needs a value`, spec);
  }
  return { values: parsed.values as OptionValues<O>, positionals: parsed.positionals };
}

/** The subcommand `argv` names, and the arguments that follow it. */
export function subcommandOf<G extends CommandGroup>(group: G, argv: readonly string[]): [G['subcommands'][number], string[]] {
  const [name, ...rest] = argv;
  if (name === '-h' || name === '--help' || name === 'help') throw new HelpRequested(groupHelpOf(group));
  const spec = group.subcommands.find((s) => s.command.split(' ').at(-1) === name || s.aliases?.includes(name ?? ''));
  if (!spec) {
    throw new UsageError(
      name === undefined ? `${group.command}: needs a subcommand` : `${group.command}: unknown subcommand "${name}"`,
      group,
    );
  }
  return [spec, rest];
}

/** What the CLI prints for a bad command line: the message, the usage, where the help is. */
export function describeUsageError(err: UsageError): string {
  const command = err.command;
  if (!command) return err.message;
  const usage = 'subcommands' in command ? command.subcommands.map(usageOf).join('\n       ') : usageOf(command);
  return `${err.message}\nusage: ${usage}\n(see "${command.command} --help")`;
}

/** `baton runs ls [--status S] [--json]` */
export function usageOf(spec: CommandSpec): string {
  const options = Object.entries(spec.options).map(([name, o]) => {
    const option = `--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    return o.required ? option : `[${option}]`;
  });
  return [spec.command, ...(spec.positionals ?? []), ...options].join(' ');
}

export function helpOf(spec: CommandSpec): string {
  const options: Record<string, OptionSpec> = { ...spec.options, ...HELP_OPTION };
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    return `  ${flag.padEnd(24)} ${o.description}`;
  });
  return `Usage: ${usageOf(spec)}\n\n${spec.summary}\n\nOptions:\n${rows.join('\n')}`;
}

function groupHelpOf(group: CommandGroup): string {
  const rows = group.subcommands.map((s) => `  ${usageOf(s)}\n      ${s.summary.split('\n')[0]}`);
  return `Usage: ${group.command} <subcommand> [options]\n\n${group.summary}\n\nSubcommands:\n${rows.join('\n')}\n\n"${group.command} <subcommand> --help" shows a subcommand's options.`;
}
