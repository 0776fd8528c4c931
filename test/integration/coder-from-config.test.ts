import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createCoderProviderFromConfig } from '../../src/workspaces/coder/from-config.js';

const env = {
  WORKSPACE_PROVIDER: 'coder',
  CODER_URL: 'https://coder.example',
  CODER_TOKEN: 'coder-token-1234',
  CODER_TEMPLATE_ID: 'c6d67e98-83ea-49f0-8812-e4abae2b68bc',
  CALLBACK_URL: 'https://baton.example',
};
const owned = { isOwnedByLiveRun: async () => false };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function configWith(yaml: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-coder-config-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'baton.yaml'), yaml);
  return loadConfig(env, dir).config;
}

// The coder: section itself is checked by loadConfig (test/integration/config-load.test.ts).
describe('createCoderProviderFromConfig', () => {
  it('builds the provider from CODER_* and baton.yaml', () => {
    const provider = createCoderProviderFromConfig(configWith('coder:\n  parameters:\n    region: eu\n  staleAfterMinutes: 45\n'), owned);
    expect(provider.name).toBe('coder');
    expect(provider.health()).toEqual({ ok: true });
  });
});
