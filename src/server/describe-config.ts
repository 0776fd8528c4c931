import YAML from 'yaml';
import { isMapping, maskUrlCredentials, SECRET_MASK, type Node, type Source } from '../config-schema/index.js';
import { FILE_NODE, type LoadedConfig } from './load-config.js';

/**
 * The configuration in baton.yaml's shape, every secret masked and every URL's password too: for
 * the start-up log line. Values worked out at start (the data directory made absolute, the
 * default database in it, an inferred provider) are shown as resolved.
 */
export function describeConfig(loaded: LoadedConfig): Record<string, unknown> {
  return describeNode(FILE_NODE, loaded.values, loaded.config) as Record<string, unknown>;
}

/**
 * `baton config check`: the configuration as a baton.yaml document, each setting commented with
 * its environment variable and where its value came from; secrets masked.
 */
export function formatConfig(loaded: LoadedConfig): string {
  const doc = new YAML.Document(describeConfig(loaded));
  annotate(doc.contents, FILE_NODE, '', loaded.sources);
  const passed = Object.keys(loaded.config.agentEnv);
  doc.commentBefore = [
    ` baton configuration: environment over ${loaded.config.configFile ?? '(no baton.yaml)'} over defaults; secrets masked.`,
    ...(passed.length > 0 ? [` Passed to local workspaces from the environment: ${passed.join(', ')}.`] : []),
  ].join('\n');
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
