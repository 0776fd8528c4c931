import fs from 'node:fs';
import path from 'node:path';
import { int, invalid, list, mapping, oneOf, section, text, type ResolveContext } from '../../config-schema/index.js';
import { hiddenPaths, type HiddenPathsInput } from './hidden-paths.js';
import { parseUidRange, type UidRange } from './run-users.js';
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
 *   runnerNice: 10                      # runs' CPU priority below baton serve's (and I/O best-effort 7)
 *   runUids: 200000-265535              # as root, a uid of its own for each run (off: all are rootUser)
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
  /** Niceness runs start at (0 = baton's own priority); above 0 their I/O is best-effort 7 too. @default 10 */
  runnerNice: number;
  runUids?: UidRange;
}

const absolute = (value: string) => (path.isAbsolute(value) ? undefined : invalid('must be an absolute path'));

export const localSection = section(
  mapping({
    sandbox: oneOf(['bwrap', 'none'] as const, {
      default: 'bwrap',
      doc: 'bwrap: each run in its own bubblewrap sandbox; none: no isolation at all (warned about at every start)',
    }),
    readOnlyPaths: list(text({ doc: 'an absolute host path', check: absolute }), {
      doc: 'extra host paths runs may read, at the same path',
    }),
    gitConfig: text({ doc: "the runs' ~/.gitconfig (identity, URL rewrites)", check: absolute }),
    claudeCredentials: text({
      doc: "a logged-in claude's .credentials.json, copied into each run's ~/.claude/ (readable by the run only)",
      check: absolute,
    }),
    rootUser: text({
      default: '65534:65534',
      doc: 'uid:gid runs use when baton runs as root (never root itself)',
      check: (v) => {
        const match = /^(\d+):(\d+)$/.exec(v);
        return match && Number(match[1]) !== 0 && Number(match[2]) !== 0
          ? undefined
          : invalid('must be "uid:gid" of a user other than root, e.g. "65534:65534"');
      },
    }),
    runnerNice: int({
      env: 'LOCAL_RUNNER_NICE',
      min: 0,
      max: 19,
      default: 10,
      doc: "the niceness local runs start at, so baton serve's accept path keeps the CPU under load; above 0 their I/O is best-effort priority 7 too (ionice); 0 = the same priority as baton",
    }),
    runUids: text({
      default: '200000-265535',
      doc: 'a range first-last of uids: as root, each run gets one of its own (its gid too); off: every run is rootUser',
      check: (v) =>
        v === 'off' || parseUidRange(v) ? undefined : invalid('must be a range "first-last" of uids above 0, e.g. "200000-265535", or off'),
    }),
  }),
  (v, ctx: ResolveContext<HiddenPathsInput>): LocalSettings => {
    const hidden = hiddenPaths(ctx.deps);
    // Paths are checked at start: a typo or a path inside what runs must never see is refused now, not at the first run.
    const usable = (key: string, value: string | undefined, kind: 'file' | 'any'): string | undefined => {
      if (value === undefined) return undefined;
      let stat: fs.Stats;
      try {
        stat = fs.statSync(value);
      } catch (err) {
        ctx.problem(`${key} ${value} cannot be used (${(err as NodeJS.ErrnoException).code ?? err})`);
        return undefined;
      }
      if (kind === 'file' && !stat.isFile()) {
        ctx.problem(`${key} must be a file, got the directory ${value}`);
        return undefined;
      }
      const secret = hidden.map((h) => path.resolve(h)).find((h) => isInside(path.resolve(value), h));
      if (secret) {
        ctx.problem(`${key} ${value} is inside ${secret}, which runs must never see`);
        return undefined;
      }
      return path.resolve(value);
    };
    const [uid, gid] = v.rootUser.split(':').map(Number) as [number, number];
    return {
      sandbox: v.sandbox,
      readOnlyPaths: (v.readOnlyPaths ?? []).map((p, i) => usable(`local.readOnlyPaths[${i}]`, p, 'any')).filter((p) => p !== undefined),
      gitConfig: usable('local.gitConfig', v.gitConfig, 'file'),
      claudeCredentials: usable('local.claudeCredentials', v.claudeCredentials, 'file'),
      rootUser: { uid, gid },
      runnerNice: v.runnerNice,
      ...(v.runUids !== 'off' ? { runUids: parseUidRange(v.runUids)! } : {}),
    };
  },
);
