export { createLocalProvider, runnerEnv, runnerSecrets, type LocalProviderOptions, type LocalSandboxOptions } from './provider.js';
export { createLocalProviderFromConfig, hiddenPaths, NO_SANDBOX_WARNING } from './from-config.js';
export { parseLocalSettings, DEFAULT_LOCAL_SETTINGS, type LocalSettings } from './settings.js';
export { SANDBOX_HOME, SANDBOX_WORKDIR, sandboxArguments } from './sandbox.js';
