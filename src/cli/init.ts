import fs from 'node:fs';
import path from 'node:path';
import { defaultAssetsDir, fillForgeSteps, PROMPT_FORGES, STAGES, type PromptForge } from '../agent/index.js';
import { describeUsageError, HelpRequested, parseCommand, UsageError, type CommandSpec, type ParsedCommand } from './args.js';

const INIT = {
  command: 'baton init',
  positionals: ['[dir]'],
  summary: `Writes the stage prompts baton runs (.claude/commands/<stage>.md for ${STAGES.join(', ')})
and a commented baton.yaml example into dir (default: the current directory). Existing files are
kept unless --force is given. Edit the prompts to fit your team: the agent reads them from the
repository on every run.

The prompts talk to the repository's forge: --forge gitea (Forgejo too), github or gitlab writes
that forge's API calls; --forge any keeps baton's {{forge.…}} steps, which each run fills in for
its own forge. Without --forge: the one forge whose URL (GITEA_URL, GITHUB_URL, GITLAB_URL) is in
the environment, else gitea.`,
  options: {
    force: { type: 'boolean', short: 'f', description: 'overwrite files that exist' },
    forge: { type: 'string', value: 'FORGE', description: 'gitea, github, gitlab or any: whose API the prompts call' },
  },
} as const satisfies CommandSpec;

export interface InitOptions {
  /** Where the templates come from. @default the package's assets/ */
  assetsDir?: string;
  /** @default process.cwd() */
  cwd?: string;
  /** What the written baton.yaml follows (CODER_URL and CODER_TOKEN, PUBLIC_URL). @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  out?: (line: string) => void;
  err?: (line: string) => void;
}

/** `baton init [dir] [--force]`; returns the exit code. */
export async function runInit(argv: string[], options: InitOptions = {}): Promise<number> {
  const out = options.out ?? ((line: string) => console.log(line));
  const err = options.err ?? ((line: string) => console.error(line));
  let parsed: ParsedCommand<typeof INIT.options>;
  try {
    parsed = parseCommand(INIT, argv);
  } catch (e) {
    if (e instanceof HelpRequested) {
      out(e.text);
      return 0;
    }
    if (e instanceof UsageError) {
      err(describeUsageError(e));
      return 2;
    }
    throw e;
  }
  const target = path.resolve(options.cwd ?? process.cwd(), parsed.positionals[0] ?? '.');
  if (fs.existsSync(target) && !fs.statSync(target).isDirectory()) {
    err(`baton init: ${target} exists and is not a directory`);
    return 2;
  }
  const forge = forgeOf(parsed.values.forge, options.env ?? process.env);
  if (forge === null) {
    err(`baton init: --forge must be one of ${[...PROMPT_FORGES, 'any'].join(', ')}, got ${JSON.stringify(parsed.values.forge)}`);
    return 2;
  }
  const assets = options.assetsDir ?? defaultAssetsDir();
  const files = [
    ...STAGES.map((stage) => ({ from: path.join(assets, 'commands', `${stage}.md`), to: path.join('.claude', 'commands', `${stage}.md`) })),
    { from: path.join(assets, 'baton.yaml'), to: 'baton.yaml' },
  ];

  let written = 0;
  let skipped = 0;
  for (const file of files) {
    const destination = path.join(target, file.to);
    let content: string;
    try {
      content = fs.readFileSync(file.from, 'utf8');
      if (file.to === 'baton.yaml') content = fitConfigTemplate(content, options.env ?? process.env);
      else if (forge !== 'any') content = fillForgeSteps(content, forge, file.from);
    } catch (e) {
      err(`baton init: the template ${file.from} is missing from this baton installation (${(e as NodeJS.ErrnoException).code ?? e})`);
      return 1;
    }
    const exists = fs.existsSync(destination);
    if (exists && !parsed.values.force) {
      out(`skipped  ${file.to} (exists; use --force to overwrite)`);
      skipped += 1;
      continue;
    }
    fs.mkdirSync(path.dirname(destination), { recursive: true });
    fs.writeFileSync(destination, content);
    out(`${exists ? 'replaced' : 'wrote   '} ${file.to}`);
    written += 1;
  }
  out(forge === 'any' ? "The prompts call each run's own forge ({{forge.…}} steps)." : `The prompts call ${forge}'s API (--forge).`);
  out('');
  out(`${written} file(s) written, ${skipped} skipped in ${target}`);
  if (written > 0) {
    out('Commit .claude/commands/ to the repository; baton.yaml configures the baton server.');
  }
  return 0;
}

/**
 * Whose API the prompts call: `--forge`, else the one forge configured in the environment (a
 * baton for GitHub only gets GitHub's prompts), else Gitea, whose prompts baton always wrote.
 * Null: not a forge.
 */
function forgeOf(flag: string | undefined, env: Readonly<Record<string, string | undefined>>): PromptForge | 'any' | null {
  if (flag !== undefined) {
    const name = flag.trim().toLowerCase();
    if (name === 'forgejo') return 'gitea';
    return name === 'any' || (PROMPT_FORGES as readonly string[]).includes(name) ? (name as PromptForge | 'any') : null;
  }
  const configured = PROMPT_FORGES.filter((forge) => env[`${forge.toUpperCase()}_URL`]?.trim());
  return configured.length === 1 ? configured[0]! : 'gitea';
}

/**
 * The template, fitted to what the environment says: the provider `baton serve` would infer
 * (Coder when CODER_URL and a Coder token are set), and PUBLIC_URL, which `baton connect` needs.
 * Secrets are never written (the template names their variables).
 */
function fitConfigTemplate(template: string, env: Readonly<Record<string, string | undefined>>): string {
  let content = template;
  if (env.CODER_URL && (env.CODER_TOKEN || env.CODER_TOKEN_FILE)) {
    content = content.replace(/^workspaceProvider: local$/m, 'workspaceProvider: coder');
    content = content.replace(/^ {2}# url: https:\/\/coder\.example\.com$/m, `  url: ${JSON.stringify(env.CODER_URL)}`);
  }
  if (env.PUBLIC_URL) content = content.replace(/^# publicUrl: .*$/m, `publicUrl: ${JSON.stringify(env.PUBLIC_URL)}`);
  return content;
}
