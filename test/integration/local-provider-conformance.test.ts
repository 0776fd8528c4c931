import { fileURLToPath } from 'node:url';
import { createLocalProvider } from '../../src/workspaces/index.js';
import { describeWorkspaceProvider } from '../conformance/workspace-provider.js';
import { createSandboxFixture } from '../helpers/sandbox.js';

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));

for (const kind of ['bwrap', 'none'] as const) {
  describeWorkspaceProvider(
    `local (sandbox ${kind})`,
    async () => {
      const fixture = createSandboxFixture();
      // The fake agent in "hang" mode stands in for the runner: it runs until signalled.
      const provider = createLocalProvider({
        dataDir: fixture.dataDir,
        // The fake CLI as a stand-in runner; it parses its arguments as Claude Code does, so it needs -p.
        command: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose', '--', 'stand-in runner'],
        env: { FAKE_CLAUDE_MODE: 'hang' },
        stopGraceMs: 2_000,
        sandbox: kind === 'bwrap' ? fixture.sandbox : { kind },
      });
      return {
        provider,
        cleanup: async () => {
          await provider.close?.();
          fixture.cleanup();
        },
      };
    },
    { timeoutMs: 15_000 },
  );
}
