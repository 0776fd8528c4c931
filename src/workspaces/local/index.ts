export { createLocalProvider } from './provider.js';
export type { LocalProviderOptions, LocalSandboxOptions } from './options.js';
export { runnerEnv, runnerSecrets } from './runner-env.js';
export { createLocalProviderFromConfig, NO_EGRESS_GATE_WARNING, NO_SANDBOX_WARNING } from './from-config.js';
export { RELAY_PORT, type LocalEgressOptions } from './egress.js';
export { hiddenPaths } from './hidden-paths.js';
export { localSection, type LocalSettings } from './settings.js';
export { SANDBOX_HOME, SANDBOX_WORKDIR, sandboxArguments, isInside } from './sandbox.js';
