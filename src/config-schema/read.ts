import fs from 'node:fs';
import path from 'node:path';
import { Invalid, type Leaf, type ListNode, type MappingNode, type Node, type RecordNode } from './nodes.js';
import { show } from './show.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a setting's value came from; settings left at their default have none. */
export type Source =
  { from: 'env'; name: string } | { from: 'file'; name: string; file: string } | { from: 'yaml' } | { from: 'inferred'; reason: string };

export interface ReadOptions {
  env: Env;
  /** Relative `<ENV>_FILE` paths are read from here. */
  cwd: string;
  /** Relative `<key>File` paths in baton.yaml are read from here (baton.yaml's directory). */
  fileDir: string;
  problems: string[];
  sources: Map<string, Source>;
}

/** A secret file larger than this is refused: it was pointed at the wrong file. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/**
 * Reads one node at `key` (its baton.yaml path) from the raw YAML value and the environment,
 * checking every value against its node. Each problem becomes one line in `options.problems`;
 * the value read goes on with the defaults in place of bad entries, so every problem is found in
 * one pass.
 */
export function readNode(node: Node, raw: unknown, key: string, options: ReadOptions): unknown {
  switch (node.kind) {
    case 'leaf':
      return readLeaf(node, raw, undefined, key, options);
    case 'mapping':
      return readMapping(node, raw, key, options);
    case 'list':
      return readList(node, raw, key, options);
    case 'record':
      return readRecord(node, raw, key, options);
    case 'orFalse':
      return raw === false || raw === null ? false : readMapping(node.mapping, raw, key, options);
  }
}

function readMapping(node: MappingNode, raw: unknown, key: string, options: ReadOptions): Record<string, unknown> {
  const before = options.problems.length;
  if (raw === undefined || raw === null) raw = {};
  if (!isMapping(raw)) {
    options.problems.push(`${key || 'baton.yaml'} must be a mapping of settings, got ${show(raw)}`);
    raw = {};
  }
  const given = raw as Record<string, unknown>;
  const known = knownKeys(node);
  for (const name of Object.keys(given)) {
    // A secret written in clear gets its own message from readLeaf, naming where it belongs.
    if (known.includes(name) || node.shape[name]?.kind === 'leaf') continue;
    options.problems.push(`baton.yaml: unknown key "${join(key, name)}" (known keys: ${known.join(', ')})`);
  }
  const values: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(node.shape)) {
    const childKey = join(key, name);
    values[name] =
      child.kind === 'leaf'
        ? readLeaf(child, given[name], given[`${name}File`], childKey, options)
        : readNode(child, given[name], childKey, options);
  }
  // Rules across keys only speak when the keys themselves are fine: one problem, one line.
  if (node.check && options.problems.length === before) options.problems.push(...node.check(values as never, key || 'baton.yaml'));
  return values;
}

/** The keys baton.yaml may hold in this mapping: a secret only as `<key>File`. */
export function knownKeys(node: MappingNode): string[] {
  return Object.entries(node.shape).flatMap(([name, child]) => {
    if (child.kind !== 'leaf' || !child.sensitive) return [name];
    return child.sensitive === 'secret' ? [`${name}File`] : [name, `${name}File`];
  });
}

function readLeaf(leaf: Leaf<unknown>, raw: unknown, fileRaw: unknown, key: string, options: ReadOptions): unknown {
  const { env, problems, sources } = options;
  const parse = (value: unknown, label: string, source: Source): unknown => {
    const result = leaf.parse(value);
    if (result instanceof Invalid) {
      // A secret's value is never echoed, not even cut short.
      problems.push(`${label} ${result.expected}${leaf.sensitive === 'secret' ? '' : `, got ${show(value)}`}`);
      return leaf.default;
    }
    sources.set(key, source);
    return result;
  };

  if (leaf.env) {
    const fromEnv = given(env[leaf.env]);
    const fileVar = `${leaf.env}_FILE`;
    const fromFile = leaf.sensitive ? given(env[fileVar]) : undefined;
    if (fromEnv !== undefined && fromFile !== undefined) {
      problems.push(`${leaf.env} and ${fileVar} are both set; set one of them`);
      return leaf.default;
    }
    if (fromEnv !== undefined) return parse(fromEnv, leaf.env, { from: 'env', name: leaf.env });
    if (fromFile !== undefined) {
      const file = path.resolve(options.cwd, fromFile);
      const content = readSecretFile(fileVar, file, problems);
      return content === undefined
        ? leaf.default
        : parse(content, `${leaf.env} (read from ${fileVar})`, { from: 'file', name: fileVar, file });
    }
  }

  if (leaf.sensitive === 'secret' && raw !== undefined && raw !== null) {
    problems.push(`${key} must not be written in baton.yaml: it is a secret. ${whereSecretsGo(leaf, key)}`);
    return leaf.default;
  }
  if (leaf.sensitive === 'credentials' && typeof raw === 'string' && /\/\/[^/@\s]*:[^@\s]*@/.test(raw)) {
    problems.push(`${key} must not carry a password in baton.yaml. ${whereSecretsGo(leaf, key)}`);
    return leaf.default;
  }
  if (leaf.sensitive && fileRaw !== undefined && fileRaw !== null) {
    const fileKey = `${key}File`;
    if (typeof fileRaw !== 'string' || fileRaw.trim() === '') {
      problems.push(`${fileKey} must be the path of a file, got ${show(fileRaw)}`);
      return leaf.default;
    }
    const file = path.resolve(options.fileDir, fileRaw.trim());
    const content = readSecretFile(fileKey, file, problems);
    return content === undefined ? leaf.default : parse(content, `${key} (read from ${fileKey})`, { from: 'file', name: fileKey, file });
  }
  if (raw !== undefined && raw !== null) return parse(raw, key, { from: 'yaml' });
  return leaf.default;
}

/** "Set CODER_TOKEN, or CODER_TOKEN_FILE (or coder.tokenFile) to a file holding it." */
export function whereSecretsGo(leaf: Leaf<unknown>, key: string): string {
  const file = `${key}File`;
  return leaf.env
    ? `Set ${leaf.env}, or ${leaf.env}_FILE (or ${file}) to a file holding it.`
    : `Put it in a file and set ${file} to the file's path.`;
}

/**
 * The content of a file that holds a secret (how container platforms hand secrets over), without
 * its trailing newline. A problem names the setting and the path, never the content.
 */
function readSecretFile(label: string, file: string, problems: string[]): string | undefined {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      problems.push(`${label} points at ${file}, which is not a file`);
      return undefined;
    }
    if (stat.size > MAX_SECRET_FILE_BYTES) {
      problems.push(`${label} points at ${file}, which is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB: not a secret file`);
      return undefined;
    }
    const content = fs.readFileSync(file, 'utf8').replace(/[\r\n]+$/, '');
    if (content === '') {
      problems.push(`${label} points at ${file}, which is empty`);
      return undefined;
    }
    return content;
  } catch (err) {
    problems.push(`${label} points at ${file}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    return undefined;
  }
}

function readList(node: ListNode, raw: unknown, key: string, options: ReadOptions): unknown[] | undefined {
  const fromEnv = node.env ? given(options.env[node.env]) : undefined;
  const label = fromEnv !== undefined ? `${node.env} entry` : undefined;
  const items = fromEnv ?? raw;
  if (items === undefined || items === null) return undefined;
  // "a, b" is a list of names (how the environment writes one), never a list of mappings.
  const list = typeof items === 'string' && node.item.kind === 'leaf' ? splitList(items) : items;
  if (!Array.isArray(list)) {
    options.problems.push(`${key} must be a list, got ${show(raw)}`);
    return undefined;
  }
  if (fromEnv !== undefined) options.sources.set(key, { from: 'env', name: node.env! });
  const values: unknown[] = [];
  list.forEach((item: unknown, i) => {
    // Entries from the environment are named by the variable: it has no positions to point at.
    const value = readNode(node.item, item, label ?? `${key}[${i}]`, options);
    // A bad entry is already a problem; the others keep their positions for later messages.
    if (value !== undefined) values.push(value);
  });
  return values;
}

function readRecord(node: RecordNode, raw: unknown, key: string, options: ReadOptions): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (!isMapping(raw)) {
    options.problems.push(`${key} must be a mapping (${node.doc}), got ${show(raw)}`);
    return {};
  }
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    const bad = node.key?.(name);
    if (bad) {
      options.problems.push(`${key}: the key ${show(name)} ${bad.expected}`);
      continue;
    }
    const read = readNode(node.value, value, join(key, name), options);
    if (read !== undefined) values[name] = read;
  }
  return values;
}

/** `queue` + `concurrency` → `queue.concurrency`; keys that are not plain words are quoted. */
export function join(key: string, name: string): string {
  if (key === '') return name;
  return /^[A-Za-z0-9_-]+$/.test(name) ? `${key}.${name}` : `${key}["${name}"]`;
}

export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function given(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
}
