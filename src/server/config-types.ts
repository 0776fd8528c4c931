import type { DepsOf, ResolvedOf } from '../config-schema/index.js';
import type { LogLevel } from '../log/index.js';
import type { SECTIONS } from './config-sections.js';

export type WorkspaceProviderName = 'local' | 'coder';

/** The top-level settings the composition root owns (see ./root-section.ts), resolved. */
export interface RootSettings {
  port: number;
  host: string;
  logLevel: LogLevel;
  /** Absolute; root for the default SQLite file, local workspaces and logs. */
  dataDir: string;
  /** `/ready` fails while the data directory's or a SQLite database's filesystem has less free space; 0 = no check. */
  minFreeSpaceBytes: number;
  /** Given, or inferred: `coder` when CODER_URL and CODER_TOKEN are set, else `local`. */
  workspaceProvider: WorkspaceProviderName;
  /** Base URL at which workspaces reach this server. */
  callbackUrl: string;
  /** Base URL at which the forge and people reach this server (webhooks, links); absent when not set. */
  publicUrl?: string;
  staleWorkspaceMinutes: number;
  /** How often stale runs are timed out and workspaces reconciled. */
  sweepMinutes: number;
}

type Sections = typeof SECTIONS;

/**
 * The one resolved, frozen configuration: the root settings plus every section of ./config-sections.ts
 * as its module resolved it (`config.queue`, `config.pipeline`, `config.coder`, …).
 */
export type Config = Readonly<
  RootSettings & { [K in keyof Sections]: ResolvedOf<Sections[K]> } & {
    /** Runner settings passed through from baton's environment to local workspaces (BATON_INSTALL_COMMAND, …). */
    agentEnv: Record<string, string>;
    /** Path of the baton.yaml that was read, if any. */
    configFile?: string;
  }
>;

/**
 * Compile-time check that the configuration gives each section what its resolve asks for
 * (`deps`): a section that needs something the config does not have fails to type-check here.
 */
type DepsMet = { [K in keyof Sections]: Config extends DepsOf<Sections[K]> ? true : false }[keyof Sections];
type MustBeTrue<T extends true> = T;
export type SectionDepsAreMet = MustBeTrue<false extends DepsMet ? false : true>;
