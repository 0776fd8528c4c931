import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config-schema/index.js';
import { loadConfig, type Config } from '../server/index.js';
import { createStore, parseDatabaseUrl } from '../store/index.js';
import { parseRepositoryName } from '../repositories/index.js';
import { readRunsSearch } from '../runs/index.js';
import { UsageError } from './args.js';
import { checkForge, checkGitHub, checkGitLab } from './doctor-forge.js';
import type { Line } from './doctor-lines.js';
import { checkCallbackUrl, checkPublicUrl } from './doctor-urls.js';
import { checkWorkspaces } from './doctor-workspaces.js';
import { type CommandIo, visibleIo } from './io.js';

const USAGE = 'usage: baton doctor [--repo OWNER/REPO]…';

export const DOCTOR_HELP = `${USAGE}

Checks every part of this baton's configuration and prints one line per check: ok, warn, FAIL
or info, what was found, and for anything not ok, what to change. It reads the configuration as
baton serve does (run it where baton serve runs, with the same environment), opens the database,
and asks the forge and Coder; it changes nothing.

Checked: the configuration; the database and its migrations; the data directory; the forge
(GITEA_URL, the webhook secret, each bot's token: valid, of the expected user, its scopes, and
its rights on each repository); PUBLIC_URL; the workspace provider (local: the sandbox and the
agent command, as a run sees them; coder: the token, the template and its parameters); and
whether CALLBACK_URL answers.

Options:
  --repo OWNER/REPO   also check the bots' access to this repository (repeatable); the
                      repositories named in webhooks.allow, webhooks.repositories and
                      maintenance.repos are always checked
  -h, --help          show this help

Exit code 0 when nothing failed, 1 otherwise.`;

/** `baton doctor`: every configured part checked, one line each with a fix. Changes nothing. */
export async function doctorCommand(argv: string[], rawIo: CommandIo, cwd = process.cwd()): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  let values: { repo?: string[]; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { repo: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`baton doctor: ${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    io.out(DOCTOR_HELP);
    return 0;
  }
  const extraRepos = (values.repo ?? []).map((r) => {
    const name = parseRepositoryName(r);
    if (!name) throw new UsageError(`baton doctor: --repo must be OWNER/REPO, got "${r}"\n${USAGE}`);
    return `${name.owner}/${name.repo}`;
  });

  let failed = 0;
  const print = (line: Line) => {
    if (line.status === 'FAIL') failed++;
    io.out(`${line.status.padEnd(4)}  ${line.check}: ${line.detail}${line.fix ? ` → ${line.fix}` : ''}`);
  };

  let config: Config;
  try {
    const loaded = loadConfig(io.env, cwd);
    config = loaded.config;
    print({
      status: 'ok',
      check: 'configuration',
      detail: config.configFile ? `environment and ${config.configFile}` : 'environment only (no baton.yaml)',
    });
    for (const warning of loaded.warnings) print({ status: 'warn', check: 'configuration', detail: warning });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const problem of err.problems) print({ status: 'FAIL', check: 'configuration', detail: problem });
    io.out('baton doctor: fix the configuration first; nothing else was checked');
    return 1;
  }

  for (const group of [
    checkDatabase,
    checkDataDir,
    checkForge,
    checkGitHub,
    checkGitLab,
    checkPublicUrl,
    checkWorkspaces,
    checkCallbackUrl,
  ]) {
    for (const line of await group(config, io, extraRepos)) print(line);
  }
  io.out(failed ? `${failed} check${failed === 1 ? '' : 's'} failed` : 'everything checked is fine');
  return failed ? 1 : 0;
}

async function checkDatabase(config: Config): Promise<Line[]> {
  const shown = config.database.url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:********@');
  const target = parseDatabaseUrl(config.database.url);
  // Opening a SQLite file that is not there would create it: the doctor changes nothing.
  if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:' && !fs.existsSync(target.file)) {
    return [{ status: 'info', check: 'database', detail: `${shown} does not exist yet; baton serve creates it` }];
  }
  const store = createStore({
    url: config.database.url,
    sqliteSynchronous: config.database.sqliteSynchronous,
    timeouts: config.database.timeouts,
  });
  try {
    await store.ping();
    const pending = await store.pendingMigrations();
    if (pending.length)
      return [
        {
          status: 'warn',
          check: 'database',
          detail: `${shown} answers; migrations not applied yet: ${pending.join(', ')}`,
          fix: 'baton serve applies them at start, or run baton migrate',
        },
      ];
    const search = await readRunsSearch(store);
    return [
      { status: 'ok', check: 'database', detail: `${shown} answers, migrations current` },
      ...(search ? [{ status: 'warn' as const, check: 'runs search', detail: search, fix: 'docs/troubleshooting.md#slow-search' }] : []),
    ];
  } catch (err) {
    return [
      {
        status: 'FAIL',
        check: 'database',
        detail: `${shown}: ${(err as Error).message}`,
        fix: 'check DATABASE_URL and that the database server runs',
      },
    ];
  } finally {
    await store.close().catch(() => {});
  }
}

async function checkDataDir(config: Config): Promise<Line[]> {
  const dir = config.dataDir;
  const check = 'data directory';
  if (!fs.existsSync(dir)) {
    const parent = path.dirname(dir);
    try {
      fs.accessSync(parent, fs.constants.W_OK);
      return [{ status: 'info', check, detail: `${dir} does not exist yet; baton serve makes it` }];
    } catch {
      return [
        { status: 'FAIL', check, detail: `${dir} does not exist and ${parent} is not writable`, fix: 'create it, or set BATON_DATA_DIR' },
      ];
    }
  }
  const probe = path.join(dir, `.doctor-${process.pid}`);
  try {
    fs.writeFileSync(probe, '');
    fs.rmSync(probe);
    return [{ status: 'ok', check, detail: `${dir} is writable` }];
  } catch (err) {
    return [
      {
        status: 'FAIL',
        check,
        detail: `${dir} is not writable (${(err as NodeJS.ErrnoException).code})`,
        fix: 'fix its owner or mode, or set BATON_DATA_DIR',
      },
    ];
  }
}
