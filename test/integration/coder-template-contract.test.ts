import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CoderProvider } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { fastProvider, specFor } from './coder-support.js';

/**
 * The rich parameters the provider sends must match the template in deploy/coder/main.tf: every
 * parameter without a default is sent, nothing undeclared is sent, and values pass the
 * template's own validation regexes. Catches drift between the two.
 */
const templateFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/coder/main.tf');

interface Declared {
  name: string;
  required: boolean;
  regex?: RegExp;
}

function declaredParameters(tf: string): Declared[] {
  const blocks = tf.split(/^data "coder_parameter" /m).slice(1);
  return blocks.map((block) => {
    const body = block.slice(0, block.search(/^}/m));
    const name = /^\s*name\s*=\s*"([^"]+)"/m.exec(body)?.[1] ?? '';
    const regex = /regex\s*=\s*"([^"]+)"/.exec(body)?.[1];
    return { name, required: !/^\s*default\s*=/m.test(body), ...(regex ? { regex: new RegExp(regex.replace(/\\\\/g, '\\')) } : {}) };
  });
}

let coder: FakeCoder;
let provider: CoderProvider;
beforeEach(async () => {
  coder = await createFakeCoder({ stepMs: 2 });
  provider = fastProvider(coder);
});
afterEach(async () => {
  await provider.close?.();
  await coder.close();
});

describe('rich parameters against deploy/coder/main.tf', () => {
  const declared = declaredParameters(fs.readFileSync(templateFile, 'utf8'));

  it('reads the template’s parameters', () => {
    expect(declared.map((d) => d.name)).toContain('callback_token');
    expect(declared.filter((d) => d.required).length).toBeGreaterThan(3);
  });

  it.each([
    ['an issue stage', specFor('bt-issue')],
    [
      'a repository-wide stage',
      specFor('bt-maint', { stage: 'maintenance', number: undefined, deployEnv: undefined, forgeUrl: undefined }),
    ],
  ])('sends every required parameter and nothing undeclared for %s', async (_label, spec) => {
    await provider.create(spec);
    const sent = coder.workspace(spec.name)?.richParameters ?? {};
    for (const d of declared) {
      if (d.required) expect(sent, `required parameter ${d.name}`).toHaveProperty(d.name);
      if (d.regex && sent[d.name] !== undefined) expect(sent[d.name]).toMatch(d.regex);
    }
    const names = new Set(declared.map((d) => d.name));
    expect(Object.keys(sent).filter((name) => !names.has(name))).toEqual([]);
  });
});
