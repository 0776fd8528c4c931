import type { Config } from '../../config/index.js';
import type { WorkspaceProvider } from '../types.js';
import { createLocalProvider, type LocalProviderOptions } from './provider.js';
import { runtimePaths } from './sandbox.js';
import { hiddenPaths } from './hidden-paths.js';
import type { LocalSettings } from './settings.js';

/**
 * The local provider from the resolved config and the `local:` settings: runners are
 * `node <baton>/bin/baton.js agent`, in a bubblewrap sandbox unless `local.sandbox: none`;
 * `/ready` runs `baton agent --check` in such a sandbox.
 */
export function createLocalProviderFromConfig(
  config: Config,
  settings: LocalSettings,
  deps: { batonBin: string; execPath?: string } & Pick<LocalProviderOptions, 'onError' | 'spawn'>,
): WorkspaceProvider {
  const execPath = deps.execPath ?? process.execPath;
  const runner = [execPath, deps.batonBin, 'agent'];
  return createLocalProvider({
    dataDir: config.dataDir,
    command: runner,
    check: [...runner, '--check'],
    env: { ...config.agentEnv },
    secrets: config.claude.oauthToken ? { CLAUDE_CODE_OAUTH_TOKEN: config.claude.oauthToken } : {},
    sandbox:
      settings.sandbox === 'none'
        ? { kind: 'none' }
        : {
            kind: 'bwrap',
            readOnlyPaths: [...runtimePaths(execPath, deps.batonBin), ...settings.readOnlyPaths],
            hiddenPaths: hiddenPaths(config),
            gitConfig: settings.gitConfig,
            claudeCredentials: settings.claudeCredentials,
            rootUser: settings.rootUser,
          },
    onError: deps.onError,
    spawn: deps.spawn,
  });
}

/** Said at every start while it is true. */
export const NO_SANDBOX_WARNING =
  "local.sandbox is none: local runs are NOT isolated. Each runner and agent runs as baton's own user and can read baton's " +
  "environment (/proc/<pid>/environ), the database, the config file, other runs' workspaces and their callback tokens. " +
  'Remove local.sandbox: none (and install bubblewrap) unless every repository and issue author is trusted.';
