import { httpUrl, int, mapping, number, oneOf, text } from '../config-schema/index.js';
import type { LogLevel } from '../log/index.js';
import type { WorkspaceProviderName } from './config-types.js';

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const PROVIDERS: readonly WorkspaceProviderName[] = ['local', 'coder'];

/**
 * The top-level keys of baton.yaml that are not sections: the composition root owns them. Sections are
 * declared by their modules and listed in ./config-sections.ts.
 */
export const rootNode = mapping({
  port: int({ env: 'PORT', min: 0, max: 65535, default: 3000, doc: 'HTTP port' }),
  host: text({ env: 'HOST', default: '0.0.0.0', doc: 'interface to listen on' }),
  logLevel: oneOf(LOG_LEVELS, { env: 'LOG_LEVEL', default: 'info', doc: 'fatal, error, warn, info, debug, trace or silent' }),
  dataDir: text({ env: 'BATON_DATA_DIR', default: './data', doc: 'local workspaces, logs and the default SQLite database' }),
  minFreeSpaceMb: number({
    env: 'BATON_MIN_FREE_SPACE_MB',
    min: 0,
    default: 256,
    doc: "/ready fails while the data directory's (or a SQLite database's) filesystem has less free space than this, in MiB; 0 turns the check off",
  }),
  workspaceProvider: oneOf(PROVIDERS, {
    env: 'WORKSPACE_PROVIDER',
    doc: 'local (child processes on this machine) or coder; default coder when CODER_URL and CODER_TOKEN are set, else local',
  }),
  callbackUrl: httpUrl({
    env: 'CALLBACK_URL',
    doc: 'base URL at which workspaces reach baton; required with coder; default http://127.0.0.1:PORT',
  }),
  publicUrl: httpUrl({
    env: 'PUBLIC_URL',
    doc: 'base URL at which the forge and people reach baton; baton connect points webhooks at PUBLIC_URL/webhook/gitea',
  }),
  staleWorkspaceMinutes: int({
    env: 'STALE_WORKSPACE_MINUTES',
    min: 1,
    default: 120,
    doc: 'the default duration limit of a run; one without a callback ends timed_out 2 minutes after its limit',
  }),
  sweepMinutes: number({
    env: 'SWEEP_MINUTES',
    min: 0.05,
    default: 10,
    doc: 'how often overdue runs are timed out and old deliveries, comments and sessions pruned (workspaces: cleanup.workspaceCheckSeconds)',
  }),
});
