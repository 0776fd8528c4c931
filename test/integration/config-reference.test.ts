import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Node } from '../../src/config-schema/index.js';
import { AGENT_PASSTHROUGH_ENV, FILE_NODE } from '../../src/server/load-config.js';

const REFERENCE = fs.readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** Every setting at a fixed place in baton.yaml: its path, and its variable when it has one. */
function settings(node: Node, path: string[]): { path: string[]; env?: string; secret: boolean }[] {
  if (node.kind === 'leaf') return [{ path, env: node.env, secret: node.sensitive === 'secret' }];
  if (node.kind !== 'mapping') return [{ path, secret: false }];
  return Object.entries(node.shape).flatMap(([name, child]) => settings(child, [...path, name]));
}

// The configuration reference (docs/configuration.md) is the user's view of the sections: it must not fall behind them.
describe('configuration reference', () => {
  it.each(settings(FILE_NODE, []).map((s) => [s.path.join('.'), s] as const))('documents %s', (_, setting) => {
    const full = setting.path.join('.');
    const last = setting.path.at(-1)!;
    // Sections with many keys (pipeline, webhooks, comments) name their keys inside one row.
    const spelled = [`\`${full}\``, `\`${full}File\``, `\`${last}\``, `\`${last}File\``, `${full.split('.')[0]}.${last}`];
    expect(
      spelled.some((form) => REFERENCE.includes(form)),
      `${full} in docs/configuration.md`,
    ).toBe(true);
    if (setting.env) expect(REFERENCE, `${setting.env} in docs/configuration.md`).toContain(`\`${setting.env}\``);
    if (setting.secret && setting.env) expect(REFERENCE).toContain(`\`${setting.env}_FILE\``);
  });
});

/** The node at a baton.yaml path, through mappings only. */
function nodeAt(path: readonly string[]): Node | undefined {
  let node: Node | undefined = FILE_NODE;
  for (const part of path) {
    node = node?.kind === 'mapping' ? (node.shape as Record<string, Node>)[part] : undefined;
  }
  return node;
}

/** Every environment variable the code reads as configuration, with the `_FILE` forms of secrets. */
function variables(node: Node): string[] {
  switch (node.kind) {
    case 'leaf':
      return node.env ? (node.sensitive ? [node.env, `${node.env}_FILE`] : [node.env]) : [];
    case 'list':
      return [...(node.env ? [node.env] : []), ...variables(node.item)];
    case 'mapping':
      return Object.values(node.shape).flatMap(variables);
    case 'record':
      return variables(node.value);
    case 'orFalse':
      return variables(node.mapping);
  }
}

interface Row {
  line: string;
  variables: string[];
  keys: string[];
  /** The first `code` of the default column, when the column starts with one. */
  defaultLiteral?: string;
  defaultText: string;
}

/** The rows of the reference's tables whose second column names `baton.yaml` keys. */
function rows(): Row[] {
  return REFERENCE.split('\n')
    .filter((line) => line.startsWith('| ') || line.startsWith('| |'))
    .map((line) =>
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
    .filter((cells) => cells.length >= 4 && cells[1] !== '`baton.yaml`' && !/^-+$/.test(cells[0] ?? ''))
    .map((cells) => {
      const code = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      const [variableCell, keyCell, defaultCell] = cells as [string, string, string];
      const keyCodes = code(keyCell);
      return {
        line: cells.join(' | '),
        // A variable given beside its key, `http.trustedProxies` (`BATON_TRUSTED_PROXIES`), counts as the row's.
        variables: [...code(variableCell), ...keyCodes.filter((c) => /^[A-Z][A-Z0-9_]+$/.test(c))],
        keys: keyCodes.filter((c) => /^[a-z][A-Za-z0-9.]*$/.test(c)),
        defaultLiteral: /^`([^`]+)`/.exec(defaultCell)?.[1],
        defaultText: defaultCell,
      };
    });
}

describe('configuration reference rows agree with the code', () => {
  // Besides the settings: what the loader itself reads, and what it passes on to local runners.
  const known = new Set([...variables(FILE_NODE), ...AGENT_PASSTHROUGH_ENV, 'BATON_CONFIG', 'REDIS_URL']);
  const table = rows();

  it('reads the tables', () => {
    expect(table.length).toBeGreaterThan(50);
  });

  it.each(table.map((row) => [row.keys.join(', ') || row.variables.join(', '), row] as const))('%s', (_, row) => {
    for (const variable of row.variables) {
      if (!/^[A-Z][A-Z0-9_]+$/.test(variable)) continue;
      expect(known.has(variable), `${variable} (documented in "${row.line}") is read by no setting`).toBe(true);
    }
    for (const key of row.keys) {
      const node = nodeAt(key.split('.'));
      if (node?.kind !== 'leaf') continue;
      // The row's variable is the setting's, and a setting with a variable names it.
      if (node.env) expect(row.variables, `${key}'s variable`).toContain(node.env);
      else
        expect(
          row.variables.filter((v) => !v.endsWith('_FILE')),
          `${key} has no variable`,
        ).toEqual([]);
      if (node.default === undefined || typeof node.default === 'object') continue;
      expect(row.defaultLiteral ?? row.defaultText, `the default of ${key}`).toBe(String(node.default));
    }
  });
});
