import YAML from 'yaml';
import type { Node } from './nodes.js';
import { isMapping, type Source } from './read.js';
import { maskUrlCredentials, SECRET_MASK } from './show.js';

/**
 * Settings in their file's shape, every secret masked and every URL's password too. A value
 * worked out at start (`resolved`: a path made absolute, a default built from others) is shown as
 * resolved.
 */
export function describeSettings(node: Node, values: unknown, resolved: unknown): Record<string, unknown> {
  return describeNode(node, values, resolved) as Record<string, unknown>;
}

/**
 * Settings as a YAML document, each fixed setting commented with its environment variable and
 * where its value came from; secrets masked. `header` is the document's opening comment.
 */
export function formatSettings(
  node: Node,
  loaded: { values: unknown; config: unknown; sources: ReadonlyMap<string, Source> },
  header: string,
): string {
  const doc = new YAML.Document(describeSettings(node, loaded.values, loaded.config));
  annotate(doc.contents, node, '', loaded.sources);
  doc.commentBefore = header;
  return doc.toString({ lineWidth: 0 });
}

function describeNode(node: Node, value: unknown, resolved: unknown): unknown {
  switch (node.kind) {
    case 'leaf': {
      if (node.sensitive === 'secret') return value === undefined ? null : SECRET_MASK;
      // A value worked out from others (the default database URL) shows as resolved.
      const shown = isPrimitive(resolved) ? resolved : value;
      return shown === undefined ? null : maskDeep(shown);
    }
    case 'mapping': {
      const given = isMapping(value) ? value : {};
      const from = isMapping(resolved) ? resolved : {};
      return Object.fromEntries(Object.entries(node.shape).map(([name, child]) => [name, describeNode(child, given[name], from[name])]));
    }
    case 'list':
      return Array.isArray(value) ? value.map((item) => describeNode(node.item, item, undefined)) : [];
    case 'record':
      return Object.fromEntries(
        Object.entries(isMapping(value) ? value : {}).map(([name, item]) => [name, describeNode(node.value, item, undefined)]),
      );
    case 'orFalse':
      return value === false ? false : describeNode(node.mapping, value, undefined);
  }
}

/** Comments each fixed setting with its variable and source: `concurrency: 4 # QUEUE_CONCURRENCY, from the environment`. */
function annotate(yamlNode: unknown, node: Node, key: string, sources: ReadonlyMap<string, Source>): void {
  if (node.kind !== 'mapping' || !YAML.isMap(yamlNode)) return;
  for (const pair of yamlNode.items) {
    const name = String(YAML.isScalar(pair.key) ? pair.key.value : pair.key);
    const child = node.shape[name];
    const path = key ? `${key}.${name}` : name;
    if (!child) continue;
    if (child.kind === 'mapping') annotate(pair.value, child, path, sources);
    else if (child.kind === 'leaf' && YAML.isScalar(pair.value)) {
      const names = child.env ? (child.sensitive ? [`${child.env} or ${child.env}_FILE`] : [child.env]) : [];
      pair.value.comment = ` ${[...names, origin(sources.get(path), pair.value.value)].join(', ')}`;
    }
  }
}

function origin(source: Source | undefined, value: unknown): string {
  if (!source) return value === null ? 'not set' : 'default';
  switch (source.from) {
    case 'env':
      return 'set in the environment';
    case 'file':
      return `read from ${source.file} (${source.name})`;
    case 'yaml':
      return 'from baton.yaml';
    case 'inferred':
      return `inferred: ${source.reason}`;
  }
}

/** URLs anywhere in a value (a maintenance entry's clone URL) lose their password. */
function maskDeep(value: unknown): unknown {
  if (typeof value === 'string') return maskUrlCredentials(value);
  if (Array.isArray(value)) return value.map(maskDeep);
  if (isMapping(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskDeep(v)]));
  return value;
}

function isPrimitive(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}
