/**
 * The words a module's baton.yaml section is written in. A section is a tree of nodes: `mapping`
 * (strict: unknown keys are refused, naming the known ones), `list`, `record` (free keys such as
 * repository or stage names), `orFalse` (a mapping that `false` switches off) and leaves. A leaf
 * knows its value's form, its default, the environment variable that may give it, and whether
 * it is a secret; that is all the loader needs to read it from the environment and baton.yaml,
 * to report a bad value in one line, and to print it with `baton config check`.
 */

/** A bad value: `expected` completes "<key> …, got <value>", e.g. "must be a whole number >= 1". */
export class Invalid {
  constructor(readonly expected: string) {}
}

/**
 * How a leaf holds something that must not be printed or written in baton.yaml:
 * - `secret`: masked everywhere; never read from baton.yaml's text, only from the environment
 *   variable, the file named by `<ENV>_FILE`, or the file named by the `<key>File` key.
 * - `credentials`: a URL that may carry a password: printed with the password masked, accepted in
 *   baton.yaml only without one; `<ENV>_FILE` and `<key>File` work as for secrets.
 */
export type Sensitivity = 'secret' | 'credentials';

export interface Leaf<T> {
  readonly kind: 'leaf';
  /** One line for `baton config check` and the README. */
  readonly doc: string;
  /** The environment variable that gives this setting; it wins over baton.yaml. */
  readonly env?: string;
  readonly sensitive?: Sensitivity;
  /** The value when nothing gives one. */
  readonly default?: T;
  /** Checks and converts a raw value: YAML gives typed values, the environment gives strings. */
  parse(raw: unknown): T | Invalid;
}

export interface MappingNode<S extends Shape = Shape> {
  readonly kind: 'mapping';
  readonly shape: S;
  readonly doc?: string;
  /**
   * A rule across keys (`label` is required when `event` is `labeled`), run once every key of the
   * mapping is fine. Returns one line per problem; `key` is the mapping's path.
   */
  check?(values: InferShape<S>, key: string): string[];
}

export interface ListNode<I extends Node = Node> {
  readonly kind: 'list';
  readonly item: I;
  readonly doc: string;
  /** A comma-separated environment variable that replaces the whole list. */
  readonly env?: string;
}

export interface RecordNode<V extends Node = Node> {
  readonly kind: 'record';
  readonly value: V;
  readonly doc: string;
  /** Checks a key; returns what a key must look like when it is bad. */
  readonly key?: (name: string) => Invalid | undefined;
}

export interface OrFalseNode<M extends MappingNode = MappingNode> {
  readonly kind: 'orFalse';
  readonly mapping: M;
}

export type Node = Leaf<unknown> | MappingNode | ListNode | RecordNode | OrFalseNode;
export type Shape = { readonly [key: string]: Node };

export type InferShape<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

/** The checked value a node gives, in baton.yaml's shape. A list nobody gave is `undefined`. */
export type Infer<N> =
  N extends Leaf<infer T>
    ? T
    : N extends MappingNode<infer S>
      ? { [K in keyof S]: Infer<S[K]> }
      : N extends ListNode<infer I>
        ? NonNullable<Infer<I>>[] | undefined
        : N extends RecordNode<infer V>
          ? Record<string, NonNullable<Infer<V>>>
          : N extends OrFalseNode<infer M>
            ? Infer<M> | false
            : never;

export function invalid(expected: string): Invalid {
  return new Invalid(expected);
}

interface LeafOptions<T> {
  doc: string;
  env?: string;
  default?: T;
}

/** The leaf's type is `T` when it has a default, `T | undefined` otherwise. */
type Defaulted<T, D> = D extends undefined ? T | undefined : T;

/** Any leaf: `parse` returns the value or `invalid("must be …")`. */
export function leaf<T, D extends T | undefined = undefined>(
  options: LeafOptions<T> & { default?: D; sensitive?: Sensitivity; parse: (raw: unknown) => T | Invalid },
): Leaf<Defaulted<T, D>> {
  return { kind: 'leaf', ...options } as Leaf<Defaulted<T, D>>;
}

/** A whole number in [min, max]; numeric strings are accepted (they come from the environment). */
export function int<D extends number | undefined = undefined>(options: LeafOptions<number> & { default?: D; min: number; max?: number }) {
  const { min, max } = options;
  const expected = max === undefined ? `must be a whole number >= ${min}` : `must be a whole number between ${min} and ${max}`;
  return leaf<number, D>({
    ...options,
    parse: (raw) => {
      const text = typeof raw === 'number' || typeof raw === 'string' ? String(raw).trim() : '';
      const value = Number(text);
      if (!/^-?\d+$/.test(text) || value < min || (max !== undefined && value > max)) return invalid(expected);
      return value;
    },
  });
}

/** A finite number >= min. */
export function number<D extends number | undefined = undefined>(options: LeafOptions<number> & { default?: D; min: number }) {
  return leaf<number, D>({
    ...options,
    parse: (raw) => {
      const value = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      return Number.isFinite(value) && value >= options.min ? value : invalid(`must be a number >= ${options.min}`);
    },
  });
}

/** true/false; the environment may also say 1/0 or yes/no. */
export function bool<D extends boolean | undefined = undefined>(options: LeafOptions<boolean> & { default?: D }) {
  return leaf<boolean, D>({
    ...options,
    parse: (raw) => {
      if (raw === true || raw === 'true' || raw === '1' || raw === 'yes') return true;
      if (raw === false || raw === 'false' || raw === '0' || raw === 'no') return false;
      return invalid('must be true or false');
    },
  });
}

export function oneOf<const V extends string, D extends V | undefined = undefined>(
  values: readonly V[],
  options: LeafOptions<V> & { default?: D },
) {
  return leaf<V, D>({
    ...options,
    parse: (raw) =>
      typeof raw === 'string' && (values as readonly string[]).includes(raw) ? (raw as V) : invalid(`must be one of ${values.join(', ')}`),
  });
}

/**
 * A non-empty string (numbers are taken as their text: YAML reads `version: 1.10` as a number).
 * `check` adds a rule and returns the expected form when the text breaks it.
 */
export function text<D extends string | undefined = undefined>(
  options: LeafOptions<string> & { default?: D; check?: (value: string) => Invalid | undefined },
) {
  return leaf<string, D>({
    ...options,
    parse: (raw) => {
      if ((typeof raw !== 'string' && typeof raw !== 'number') || String(raw).trim() === '') return invalid('must be a non-empty string');
      const value = String(raw).trim();
      return options.check?.(value) ?? value;
    },
  });
}

/** An http(s) URL; trailing slashes are dropped so paths can be appended. */
export function httpUrl<D extends string | undefined = undefined>(
  options: LeafOptions<string> & { default?: D; sensitive?: 'credentials' },
) {
  return leaf<string, D>({
    ...options,
    parse: (raw) => {
      const expected = invalid('must be an http:// or https:// URL');
      if (typeof raw !== 'string') return expected;
      try {
        const url = new URL(raw.trim());
        if (url.protocol !== 'http:' && url.protocol !== 'https:') return expected;
      } catch {
        return expected;
      }
      return raw.trim().replace(/\/+$/, '');
    },
  });
}

/**
 * A secret string: never printed, never echoed in an error, never read from baton.yaml's text.
 * `check` may refuse a weak one; its message must not quote the value.
 */
export function secret(options: { doc: string; env?: string; check?: (value: string) => Invalid | undefined }) {
  return leaf<string>({
    ...options,
    sensitive: 'secret',
    parse: (raw) => {
      if (typeof raw !== 'string' || raw === '') return invalid('must be a non-empty string');
      return options.check?.(raw) ?? raw;
    },
  });
}

export function mapping<const S extends Shape>(
  shape: S,
  options: { doc?: string; check?: (values: InferShape<S>, key: string) => string[] } = {},
): MappingNode<S> {
  return { kind: 'mapping', shape, ...options };
}

/** A list; a plain string is read as a comma-separated list (how the environment writes one). */
export function list<const I extends Node>(item: I, options: { doc: string; env?: string }): ListNode<I> {
  return { kind: 'list', item, ...options };
}

export function record<const V extends Node>(
  value: V,
  options: { doc: string; key?: (name: string) => Invalid | undefined },
): RecordNode<V> {
  return { kind: 'record', value, ...options };
}

/** `false` (or an empty value) switches the entry off; otherwise it is the mapping. */
export function orFalse<const M extends MappingNode>(node: M): OrFalseNode<M> {
  return { kind: 'orFalse', mapping: node };
}
