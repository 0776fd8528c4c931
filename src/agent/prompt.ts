import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { CommandFileError } from './errors.js';
import { fillForgeSteps, promptForgeOf } from './forge-steps.js';
import { isBuiltInStage } from './stages.js';

/**
 * Where the built-in templates live: `assets/commands/` at the package root. The same files are
 * what `baton init` writes into a repository, so the fallback prompt is exactly the scaffolded one.
 * Both `src/agent/` (tsx, tests) and `dist/agent/` (build) sit two levels below the root.
 */
export function defaultAssetsDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../assets');
}

export interface ResolvedPrompt {
  prompt: string;
  /** `repository` when read from the repo's command file, `built-in` for baton's fallback. */
  source: 'repository' | 'built-in';
  file: string;
  /** Parsed front matter (e.g. `description`, `allowed-tools`); empty when there was none. */
  frontMatter: Record<string, unknown>;
}

export interface ResolvePromptOptions {
  repoDir: string;
  stage: string;
  /** Replaces every `$ARGUMENTS` in the prompt. */
  args: string;
  /** The run's forge (`BATON_FORGE`): what `{{forge…}}` steps become (forge-steps.ts). @default 'gitea' */
  forge?: string;
  /** @default defaultAssetsDir() */
  assetsDir?: string;
}

/**
 * Reads `<repo>/.claude/commands/<stage>.md`, or baton's built-in template for the stage when the
 * repository has none, with its `{{forge…}}` steps written out for the run's forge and every
 * `$ARGUMENTS` replaced. A file without `{{forge` is used as written. A file that is present but
 * broken is an error rather than a silent fallback: the team wrote it on purpose and would not
 * notice the built-in prompt running instead.
 */
export async function resolvePrompt(options: ResolvePromptOptions): Promise<ResolvedPrompt> {
  const { repoDir, stage, args } = options;
  if (!/^[a-z0-9][a-z0-9_-]*$/i.test(stage)) {
    throw new CommandFileError(`stage name ${JSON.stringify(stage)} is not valid: use letters, digits, "-" and "_"`);
  }
  const repoFile = path.join(repoDir, '.claude', 'commands', `${stage}.md`);
  const relative = `.claude/commands/${stage}.md`;
  let text = await readIfExists(repoFile);
  let source: ResolvedPrompt['source'] = 'repository';
  let file = repoFile;
  if (text === null) {
    const builtIn = path.join(options.assetsDir ?? defaultAssetsDir(), 'commands', `${stage}.md`);
    text = isBuiltInStage(stage) ? await readIfExists(builtIn) : null;
    if (text === null) {
      throw new CommandFileError(
        `the repository has no ${relative} and baton has no built-in prompt for stage "${stage}"; ` +
          `add ${relative} to the repository (baton init writes templates for the built-in stages)`,
      );
    }
    source = 'built-in';
    file = builtIn;
  }
  const label = source === 'repository' ? relative : file;
  const { frontMatter, body } = parseCommandFile(text, label);
  // The forge's steps first: their arguments may be `$ARGUMENTS`, replaced with the rest.
  const prompt = fillForgeSteps(body, promptForgeOf(options.forge), label).replaceAll('$ARGUMENTS', args).trim();
  if (prompt === '') {
    throw new CommandFileError(`${label} has no prompt text after its front matter`);
  }
  return { prompt, source, file, frontMatter };
}

/**
 * Splits a Claude Code command file into its YAML front matter and its body. Front matter is
 * only recognised when `---` is the very first line, as Claude Code does.
 */
export function parseCommandFile(text: string, label: string): { frontMatter: Record<string, unknown>; body: string } {
  const normalised = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  const lines = normalised.split('\n');
  if (lines[0]?.trimEnd() !== '---') return { frontMatter: {}, body: normalised };
  const end = lines.findIndex((line, i) => i > 0 && line.trimEnd() === '---');
  if (end === -1) {
    throw new CommandFileError(
      `${label}: the front matter opened with "---" on line 1 is never closed; add a line with "---" after the front matter`,
    );
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(lines.slice(1, end).join('\n'));
  } catch (err) {
    throw new CommandFileError(`${label}: the front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}`, {
      cause: err,
    });
  }
  if (parsed !== null && parsed !== undefined && (typeof parsed !== 'object' || Array.isArray(parsed))) {
    throw new CommandFileError(`${label}: the front matter must be a YAML mapping (key: value lines)`);
  }
  return { frontMatter: (parsed ?? {}) as Record<string, unknown>, body: lines.slice(end + 1).join('\n') };
}

/** What `$ARGUMENTS` stands for in a stage's prompt. */
export function promptArguments(stage: string, issueNumber: string | undefined, deployEnv: string | undefined): string {
  if (stage === 'devops') return deployEnv ?? '';
  return issueNumber ?? '';
}

async function readIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CommandFileError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}
