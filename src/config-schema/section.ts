import type { Infer, Leaf, MappingNode, Node, RecordNode } from './nodes.js';
import { readNode, type Env, type Source } from './read.js';

export interface ResolveContext<D> {
  /** The already resolved settings of other sections this one needs (the loader passes them). */
  readonly deps: D;
  /** Adds one problem line (the start is refused); it should name the key, e.g. `ctx.name('url')`. */
  problem(message: string): void;
  /** Something worth telling at every start that does not stop it. */
  warn(message: string): void;
  /**
   * How a user sets a key of this section: its environment variable when it has one (with the
   * file forms for a secret), otherwise its baton.yaml path. `name('url')` → `CODER_URL`.
   */
  name(key: string): string;
  /** Whether the user gave the key (environment or baton.yaml), as opposed to its default. */
  isSet(key: string): boolean;
}

/**
 * A module's baton.yaml section: the node that says which keys it holds (strictly), and how the
 * checked values become what the module runs on. `D` is what it needs from other sections. Most
 * sections are mappings; a record (free keys, like `repositories:` keyed by owner/repo) works too.
 */
export type SectionNode = MappingNode | RecordNode;

export interface Section<N extends SectionNode = SectionNode, R = unknown, D = unknown> {
  readonly node: N;
  resolve(values: Infer<N>, ctx: ResolveContext<D>): R;
}

/** Declares a section; without `resolve` the module runs on the checked values as they are. */
export function section<const N extends SectionNode, R = Infer<N>, D = unknown>(
  node: N,
  resolve?: (values: Infer<N>, ctx: ResolveContext<D>) => R,
): Section<N, R, D> {
  // Infer<N> of a generic N is too deep for the compiler to compare; the signature above is the check.
  const given = resolve as unknown as ((values: unknown, ctx: unknown) => unknown) | undefined;
  return { node, resolve: given ?? ((values: unknown) => values) } as unknown as Section<N, R, D>;
}

export type ResolvedOf<S> = S extends Section<SectionNode, infer R, unknown> ? R : never;
export type DepsOf<S> = S extends Section<SectionNode, unknown, infer D> ? D : never;

/** Builds the `ResolveContext.name` / `isSet` lookups of the section at `key`. */
export function contextFor<D>(options: {
  node: SectionNode;
  key: string;
  deps: D;
  problems: string[];
  warnings: string[];
  sources: ReadonlyMap<string, Source>;
}): ResolveContext<D> {
  const { node, key, deps, problems, warnings, sources } = options;
  return {
    deps,
    problem: (message) => problems.push(message),
    warn: (message) => warnings.push(message),
    name: (sub) => {
      const leaf = leafAt(node, sub);
      const full = `${key}.${sub}`;
      if (!leaf?.env) return leaf?.sensitive === 'secret' ? `${full}File` : full;
      return leaf.sensitive ? `${leaf.env} (or ${leaf.env}_FILE, or ${full}File)` : leaf.env;
    },
    isSet: (sub) => sources.has(`${key}.${sub}`),
  };
}

function leafAt(node: Node, dotted: string): Leaf<unknown> | undefined {
  let current: Node | undefined = node;
  for (const part of dotted.split('.')) current = current?.kind === 'mapping' ? current.shape[part] : undefined;
  return current?.kind === 'leaf' ? current : undefined;
}

/**
 * Checks one section on its own, from a raw baton.yaml value and no environment: for a module's
 * unit tests and for callers that build a module without the whole configuration.
 */
export function checkSection<N extends SectionNode, R, D>(
  section: Section<N, R, D>,
  key: string,
  raw: unknown,
  deps: D,
  options: { env?: Env; cwd?: string } = {},
): { value: R; problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const sources = new Map<string, Source>();
  const cwd = options.cwd ?? process.cwd();
  const values = readNode(section.node, raw, key, { env: options.env ?? {}, cwd, fileDir: cwd, problems, sources });
  // Infer<N> of a generic N is too deep for the compiler (see `section`); resolve's own signature is the check.
  const resolve = section.resolve as unknown as (values: unknown, ctx: ResolveContext<D>) => R;
  const value = resolve(values, contextFor({ node: section.node, key, deps, problems, warnings, sources }));
  return { value, problems, warnings };
}
