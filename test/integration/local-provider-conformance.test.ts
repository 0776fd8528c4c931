import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLocalProvider } from '../../src/workspaces/index.js';
import { describeWorkspaceProvider } from '../conformance/workspace-provider.js';

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));

describeWorkspaceProvider(
  'local',
  async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-local-conf-'));
    // The fake agent in "hang" mode stands in for the runner: it runs until signalled.
    const provider = createLocalProvider({
      dataDir,
      // The fake CLI as a stand-in runner; it parses its arguments as Claude Code does, so it needs -p.
      command: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose', '--', 'stand-in runner'],
      env: { FAKE_CLAUDE_MODE: 'hang' },
      stopGraceMs: 2_000,
    });
    return {
      provider,
      cleanup: async () => {
        await provider.close?.();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  },
  { timeoutMs: 15_000 },
);
