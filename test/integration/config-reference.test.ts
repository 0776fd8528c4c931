import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Node } from '../../src/config-schema/index.js';
import { FILE_NODE } from '../../src/server/load-config.js';

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
