import { createFakeCoder } from '../fakes/coder/index.js';
import { describeWorkspaceProvider } from '../conformance/workspace-provider.js';
import { fastProvider } from './coder-support.js';

// The coder provider against the fake Coder over real HTTP. Names carry baton's `bt-` prefix so
// list() counts them as baton's, as it would for names from workspaceNameForKey.
describeWorkspaceProvider(
  'coder',
  async () => {
    const coder = await createFakeCoder({ stepMs: 2 });
    const provider = fastProvider(coder);
    return {
      provider,
      cleanup: async () => {
        await provider.close?.();
        await coder.close();
      },
    };
  },
  { namePrefix: 'bt-conf', timeoutMs: 10_000, pollMs: 10 },
);
