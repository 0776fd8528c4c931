import { describeSettings, formatSettings } from '../config-schema/index.js';
import { FILE_NODE, type LoadedConfig } from './load-config.js';

/**
 * The configuration in baton.yaml's shape, every secret masked and every URL's password too: for
 * the start-up log line. Values worked out at start (the data directory made absolute, the
 * default database in it, an inferred provider) are shown as resolved.
 */
export function describeConfig(loaded: LoadedConfig): Record<string, unknown> {
  return describeSettings(FILE_NODE, loaded.values, loaded.config);
}

/**
 * `baton config check`: the configuration as a baton.yaml document, each setting commented with
 * its environment variable and where its value came from; secrets masked.
 */
export function formatConfig(loaded: LoadedConfig): string {
  const passed = Object.keys(loaded.config.agentEnv);
  return formatSettings(
    FILE_NODE,
    loaded,
    [
      ` baton configuration: environment over ${loaded.config.configFile ?? '(no baton.yaml)'} over defaults; secrets masked.`,
      ...(passed.length > 0 ? [` Passed to local workspaces from the environment: ${passed.join(', ')}.`] : []),
    ].join('\n'),
  );
}
