import { createMemoryProvider } from '../../src/workspaces/index.js';
import { describeWorkspaceProvider } from '../conformance/workspace-provider.js';

describeWorkspaceProvider('memory', async () => {
  const provider = createMemoryProvider({ transitionMs: 5 });
  return { provider, cleanup: async () => provider.close?.() };
});
