import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { mapping, type MappingNode, type Node } from './nodes.js';
import { ConfigError } from './problems.js';
import { readNode, type Env, type Source } from './read.js';
import { contextFor, type SectionNode } from './section.js';

/** Any section, as the loader sees it: a node, and a resolve whose types its module checked. */
interface AnySection {
  readonly node: SectionNode;
  readonly resolve: unknown;
}

/** Where a loader's steps report: every problem (the start is refused), warnings, notices, sources. */
export interface LoadReport {
  env: Env;
  cwd: string;
  problems: string[];
  warnings: string[];
  notices: string[];
  sources: Map<string, Source>;
}

export interface ConfigLoaderOptions<C> {
  /** The top-level keys that are not sections, and what they resolve to; the composition root owns them. */
  root: { node: MappingNode; resolve(values: Record<string, unknown>, report: LoadReport): object };
  /** Every section by its key, in dependency order: each resolves after the sections its deps name. */
  sections: Readonly<Record<string, AnySection>>;
  /** What the configuration holds besides the sections (read from the environment), with its warnings. */
  /** What the configuration holds besides the sections; `resolved` holds the sections, for checks across them. */
  extra?(report: LoadReport, resolved: Readonly<Record<string, unknown>>): object;
  /** Types the result; the loader itself knows no section. */
  readonly config?: C;
}

export interface LoadedSettings<C> {
  config: C;
  /** Worth telling at every start, but no reason to refuse it. */
  warnings: string[];
  /** What was decided for the operator, told once at start. */
  notices: string[];
  /** The checked values in the file's shape (secrets in clear: print only through describeSettings). */
  values: Readonly<Record<string, unknown>>;
  /** Where each value that is not a default came from, by path. */
  sources: ReadonlyMap<string, Source>;
}

export interface ConfigLoader<C> {
  /** The whole file: the root keys, then every section's node. */
  readonly node: MappingNode;
  /**
   * The one configuration pass: environment plus the file (`BATON_CONFIG`, or `./baton.yaml`
   * when present) into one resolved, frozen configuration. The environment wins over the file, the
   * file over the defaults. Throws ConfigError listing every problem, one line each.
   */
  load(env: Env, cwd: string): LoadedSettings<C>;
}

/** A loader for these sections; it knows none of them itself (the composition root lists them). */
export function createConfigLoader<C>(options: ConfigLoaderOptions<C>): ConfigLoader<C> {
  const shape: Record<string, Node> = { ...options.root.node.shape };
  for (const [key, s] of Object.entries(options.sections)) shape[key] = s.node;
  const node: MappingNode = mapping(shape);
  return {
    node,
    load(env, cwd) {
      const report: LoadReport = { env, cwd, problems: [], warnings: [], notices: [], sources: new Map() };
      const { problems, warnings, sources } = report;
      const { file, configFile } = readConfigFile(env, cwd, problems);
      const values = readNode(node, file, '', {
        env,
        cwd,
        fileDir: configFile ? path.dirname(configFile) : cwd,
        problems,
        sources,
      }) as Record<string, unknown>;
      const resolved: Record<string, unknown> = { ...options.root.resolve(values, report), configFile };
      for (const [key, s] of Object.entries(options.sections)) {
        // Sections come in dependency order, so `resolved` holds what each one's deps name. The
        // section's own types were checked where it was declared; here it is any section.
        const resolve = s.resolve as (values: unknown, ctx: unknown) => unknown;
        const ctx = contextFor({ node: s.node, key, deps: resolved, problems, warnings, sources });
        resolved[key] = resolve(values[key], ctx);
      }
      const extra = options.extra?.(report, resolved) ?? {};
      if (problems.length > 0) throw new ConfigError(problems);
      const config = { ...resolved, ...extra, configFile } as C;
      return { config: deepFreeze(config), warnings, notices: report.notices, values: deepFreeze(values), sources };
    },
  };
}

/** The environment variables of every sensitive setting under `node`. */
export function sensitiveVariables(node: Node): string[] {
  switch (node.kind) {
    case 'leaf':
      return node.sensitive && node.env ? [node.env] : [];
    case 'mapping':
      return Object.values(node.shape).flatMap(sensitiveVariables);
    case 'list':
      return sensitiveVariables(node.item);
    case 'record':
      return sensitiveVariables(node.value);
    case 'orFalse':
      return sensitiveVariables(node.mapping);
  }
}

function readConfigFile(env: Env, cwd: string, problems: string[]): { file: Record<string, unknown>; configFile?: string } {
  const explicit = env.BATON_CONFIG;
  const candidate = path.resolve(cwd, explicit || 'baton.yaml');
  if (!explicit && !fs.existsSync(candidate)) return { file: {} };
  let text: string;
  try {
    text = fs.readFileSync(candidate, 'utf8');
  } catch (err) {
    problems.push(`BATON_CONFIG points at ${candidate}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    return { file: {} };
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    problems.push(`${candidate} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return { file: {}, configFile: candidate };
  }
  if (parsed === null || parsed === undefined) return { file: {}, configFile: candidate };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push(`${candidate} must hold a mapping of settings at the top level`);
    return { file: {}, configFile: candidate };
  }
  return { file: parsed as Record<string, unknown>, configFile: candidate };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
