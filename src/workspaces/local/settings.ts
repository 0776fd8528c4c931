import fs from 'node:fs';
import path from 'node:path';
import { Problems, show } from '../../config/index.js';
import { isInside } from './sandbox.js';

/**
 * The `local:` section of baton.yaml: how local workspaces are isolated.
 *
 * ```yaml
 * local:
 *   sandbox: bwrap                      # or none: no isolation at all (warned about at every start)
 *   readOnlyPaths: [/opt/toolchains]    # extra host paths runs may read (at the same path)
 *   gitConfig: /etc/baton/gitconfig     # the runs' ~/.gitconfig (identity, URL rewrites)
 *   claudeCredentials: /var/lib/baton/.claude/.credentials.json   # a logged-in claude's credentials
 *   rootUser: "65534:65534"             # the user runs are when baton runs as root
 * ```
 */
export interface LocalSettings {
  /** @default 'bwrap' */
  sandbox: 'bwrap' | 'none';
  readOnlyPaths: string[];
  gitConfig?: string;
  claudeCredentials?: string;
  /** @default { uid: 65534, gid: 65534 } */
  rootUser: { uid: number; gid: number };
}

const KEYS = ['sandbox', 'readOnlyPaths', 'gitConfig', 'claudeCredentials', 'rootUser'] as const;

export const DEFAULT_LOCAL_SETTINGS: LocalSettings = { sandbox: 'bwrap', readOnlyPaths: [], rootUser: { uid: 65534, gid: 65534 } };

/**
 * Reads `local:`; every problem names its key. `hidden` are the paths runs must never see (the
 * data directory, the database, the config file): a read-only path inside one is refused.
 */
export function parseLocalSettings(raw: unknown, hidden: readonly string[] = []): { settings: LocalSettings; problems: string[] } {
  const problems = new Problems();
  const settings: LocalSettings = { ...DEFAULT_LOCAL_SETTINGS, readOnlyPaths: [] };
  if (raw === undefined || raw === null) return { settings, problems: [] };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { settings, problems: [`local must be a mapping, got ${show(raw)}`] };
  const section = raw as Record<string, unknown>;
  for (const key of Object.keys(section)) {
    if (!(KEYS as readonly string[]).includes(key)) problems.add(`local.${key} is not a known key (known: ${KEYS.join(', ')})`);
  }
  settings.sandbox = problems.oneOf('local.sandbox', section.sandbox, ['bwrap', 'none'] as const, 'bwrap');

  const existing = (key: string, value: unknown, kind: 'file' | 'any'): string | undefined => {
    if (typeof value !== 'string' || !path.isAbsolute(value)) {
      problems.add(`${key} must be an absolute path, got ${show(value)}`);
      return undefined;
    }
    let stat: fs.Stats;
    try {
      stat = fs.statSync(value);
    } catch (err) {
      problems.add(`${key} ${value} cannot be used (${(err as NodeJS.ErrnoException).code ?? err})`);
      return undefined;
    }
    if (kind === 'file' && !stat.isFile()) {
      problems.add(`${key} must be a file, got the directory ${value}`);
      return undefined;
    }
    const secret = hidden.map((h) => path.resolve(h)).find((h) => isInside(path.resolve(value), h));
    if (secret) {
      problems.add(`${key} ${value} is inside ${secret}, which runs must never see`);
      return undefined;
    }
    return path.resolve(value);
  };

  if (section.readOnlyPaths !== undefined && section.readOnlyPaths !== null) {
    if (!Array.isArray(section.readOnlyPaths))
      problems.add(`local.readOnlyPaths must be a list of absolute paths, got ${show(section.readOnlyPaths)}`);
    else {
      section.readOnlyPaths.forEach((value, i) => {
        const p = existing(`local.readOnlyPaths[${i}]`, value, 'any');
        if (p) settings.readOnlyPaths.push(p);
      });
    }
  }
  if (section.gitConfig !== undefined) settings.gitConfig = existing('local.gitConfig', section.gitConfig, 'file');
  if (section.claudeCredentials !== undefined)
    settings.claudeCredentials = existing('local.claudeCredentials', section.claudeCredentials, 'file');
  if (section.rootUser !== undefined) {
    const match = /^(\d+):(\d+)$/.exec(String(section.rootUser).trim());
    if (!match || Number(match[1]) === 0 || Number(match[2]) === 0) {
      problems.add(`local.rootUser must be "uid:gid" of a user other than root, e.g. "65534:65534", got ${show(section.rootUser)}`);
    } else settings.rootUser = { uid: Number(match[1]), gid: Number(match[2]) };
  }
  return { settings, problems: problems.list };
}
